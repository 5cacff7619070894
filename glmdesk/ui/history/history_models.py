"""Item models of the history panel: the conversation list (paged) and search hits."""

from __future__ import annotations

import html
from datetime import datetime

from PySide6.QtCore import QAbstractListModel, QModelIndex, QObject, QPersistentModelIndex, Qt, Signal

from glmdesk.core.history import History
from glmdesk.core.history_types import Conversation, SearchHit

ID_ROLE = Qt.ItemDataRole.UserRole
MESSAGE_ROLE = Qt.ItemDataRole.UserRole + 1
HTML_ROLE = Qt.ItemDataRole.UserRole + 2
UPDATED_ROLE = Qt.ItemDataRole.UserRole + 10  # the same as history_list_view.UPDATED_ROLE
PAGE = 100
_Index = QModelIndex | QPersistentModelIndex


class ConversationListModel(QAbstractListModel):
    """Live conversations, newest first, loaded a page at a time (keyset paging).

    Signals:
        rename_requested(int, str): The user edited a title (id, new title); the panel
            stores it and reloads the list.
    """

    rename_requested = Signal(int, str)

    def __init__(self, history: History, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._history = history
        self._rows: list[Conversation] = []
        self._exhausted = False
        self.reload()

    def reload(self) -> None:
        """Forget the loaded rows and load the first page again."""
        self.beginResetModel()
        self._rows = self._history.list_conversations(PAGE)
        self._exhausted = len(self._rows) < PAGE
        self.endResetModel()

    def rowCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: B008 - Qt signature
        return 0 if parent.isValid() else len(self._rows)

    def canFetchMore(self, parent: _Index = QModelIndex()) -> bool:  # noqa: B008
        return not parent.isValid() and not self._exhausted

    def fetchMore(self, parent: _Index = QModelIndex()) -> None:  # noqa: B008
        if parent.isValid() or self._exhausted:
            return
        last = self._rows[-1] if self._rows else None
        page = self._history.list_conversations(PAGE, after=(last.updated, last.id) if last else None)
        self._exhausted = len(page) < PAGE
        if page:
            self.beginInsertRows(QModelIndex(), len(self._rows), len(self._rows) + len(page) - 1)
            self._rows.extend(page)
            self.endInsertRows()

    def row_of(self, conversation_id: int) -> int:
        """Row of a conversation, loading further pages until found; -1 if it is not live."""
        while True:
            for row, conv in enumerate(self._rows):
                if conv.id == conversation_id:
                    return row
            if self._exhausted:
                return -1
            self.fetchMore()

    def data(self, index: _Index, role: int = Qt.ItemDataRole.DisplayRole) -> object:
        if not index.isValid():
            return None
        conv = self._rows[index.row()]
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.EditRole):
            return conv.title or (self.tr("Untitled") if role == Qt.ItemDataRole.DisplayRole else "")
        if role == Qt.ItemDataRole.ToolTipRole:
            when = datetime.fromtimestamp(conv.updated).strftime("%Y-%m-%d %H:%M")
            model = conv.model or self.tr("no model")
            return self.tr("{title}\nUpdated {when} · {model}").format(
                title=conv.title, when=when, model=model
            )
        if role == ID_ROLE:
            return conv.id
        if role == UPDATED_ROLE:
            return conv.updated
        return None

    def flags(self, index: _Index) -> Qt.ItemFlag:
        return super().flags(index) | Qt.ItemFlag.ItemIsEditable

    def setData(self, index: _Index, value: object, role: int = Qt.ItemDataRole.EditRole) -> bool:
        if role != Qt.ItemDataRole.EditRole or not index.isValid() or not str(value).strip():
            return False
        # The panel stores it (through the history controller's writes when attached).
        self.rename_requested.emit(self._rows[index.row()].id, str(value).strip())
        return True


class SearchResultModel(QAbstractListModel):
    """Search hits with the matches highlighted (HTML in :data:`HTML_ROLE`)."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._hits: list[SearchHit] = []

    def set_hits(self, hits: list[SearchHit]) -> None:
        """Replace the results."""
        self.beginResetModel()
        self._hits = hits
        self.endResetModel()

    def rowCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self._hits)

    def data(self, index: _Index, role: int = Qt.ItemDataRole.DisplayRole) -> object:
        if not index.isValid():
            return None
        hit = self._hits[index.row()]
        if role == Qt.ItemDataRole.DisplayRole:
            return f"{hit.conversation_title}\n{hit.snippet}"
        if role == ID_ROLE:
            return hit.conversation_id
        if role == MESSAGE_ROLE:
            return hit.message_id
        if role == HTML_ROLE:
            parts, pos = [], 0
            for start, end in hit.spans:
                parts.append(html.escape(hit.snippet[pos:start]))
                parts.append(
                    f'<span style="background-color:#ffd54f;color:#000">{html.escape(hit.snippet[start:end])}</span>'
                )
                pos = end
            parts.append(html.escape(hit.snippet[pos:]))
            title = html.escape(hit.conversation_title or self.tr("Untitled"))
            return f"<b>{title}</b><br>{''.join(parts)}"
        return None
