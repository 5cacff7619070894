"""The history panel: conversations newest first under date headers, search, rename,
delete, export; each row's "more" button and context menu hold the actions.

The panel runs on the GUI thread, which owns the :class:`~glmdesk.core.history.History`
database; it never blocks on the model. Its search is
:class:`~glmdesk.ui.history.history_search.HistorySearch`. Built with the window's
:class:`~glmdesk.ui.history.history_access.HistoryAccess`, it writes through it (the
history writer's thread, one failure handling); built without, it writes in place
(tests, benchmarks). The list loads 100 conversations at a time
(``fetchMore`` as the user scrolls), so opening it costs the same with 10 or
10,000 conversations. Deleting moves a conversation to the bin with an Undo bar
(:class:`~glmdesk.ui.history.history_undo_bar.UndoBar`) for 10 s; it is purged when the bar expires, on the next delete, or when the next
panel is created. The window calls :meth:`HistoryPanel.refresh` after it saves a
message (the order changes).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from PySide6.QtCore import QModelIndex, Qt, Signal
from PySide6.QtGui import QAction, QGuiApplication, QKeySequence
from PySide6.QtWidgets import (
    QHBoxLayout,
    QListView,
    QMenu,
    QPushButton,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from glmdesk.core.history import History
from glmdesk.core.history_io import read_export
from glmdesk.ui.history.history_access import HistoryAccess
from glmdesk.ui.history.history_dialogs import ask_export, ask_import, markdown_labels
from glmdesk.ui.history.history_list_view import HistoryListView
from glmdesk.ui.history.history_models import ID_ROLE, ConversationListModel
from glmdesk.ui.history.history_search import HistorySearch
from glmdesk.ui.history.history_undo_bar import UndoBar


class HistoryPanel(QWidget):
    """Saved conversations: list, search, rename, delete with undo, duplicate, export, import.

    Args:
        history: The database, owned by the GUI thread.
        parent: Parent widget.
        access: The window's :class:`HistoryAccess`: every write goes through it (its
            writer thread; a full disk or a damaged file during a rename, delete or
            import is shown in the window like any other). Its first write empties the
            bin: deletions not undone before the last exit are final. ``None``: writes
            run here, on ``history``.

    Attributes:
        finder: The :class:`HistorySearch` (``search_box``, ``results``, ``results_view``,
            ``no_results_label`` and ``searches`` are its).

    Signals:
        conversation_selected(int): The user picked a conversation (id).
        conversation_created(int), conversation_renamed(int, str),
        conversation_deleted(int) (moved to the bin), conversation_restored(int)
        (undo), conversation_duplicated(int, int) (source, copy),
        conversation_imported(int), conversation_exported(int, str) (id, path),
        import_noted(int, ErrorInfo) (imported id, a part not taken as it is: its tools),
        conversation_copied(int) (Markdown on the clipboard).
        search_finished(int): Results shown (count).
        search_result_selected(int, int): A hit was picked (conversation, message);
            ``conversation_selected`` follows.
    """

    conversation_selected = Signal(int)
    conversation_created = Signal(int)
    new_chat_requested = Signal()
    conversation_renamed = Signal(int, str)
    conversation_deleted = Signal(int)
    conversation_restored = Signal(int)
    conversation_duplicated = Signal(int, int)
    conversation_imported = Signal(int)
    import_noted = Signal(int, object)
    conversation_exported = Signal(int, str)
    conversation_copied = Signal(int)
    search_finished = Signal(int)
    search_result_selected = Signal(int, int)

    def __init__(
        self,
        history: History,
        parent: QWidget | None = None,
        access: HistoryAccess | None = None,
        clock: Callable[[], datetime] = datetime.now,
    ) -> None:
        super().__init__(parent)
        self._clock = clock  # "now" for the date headers
        self.row_menu: QMenu | None = None  # the menu of a row's "more" button, while shown
        self._history = history
        self._quiet = False
        self._access = access
        self._build(history)
        self._connect()
        self._add_actions()
        if access is not None:  # on the writer thread, not while the window starts
            self._write(lambda h: h.purge_deleted(), lambda _count: None)

    def _build(self, history: History) -> None:
        """The panel's widgets: buttons, search box, list and results, the Undo bar."""
        self.new_button = QPushButton(self.tr("New"))
        self.new_button.setToolTip(self.tr("Start a new conversation"))
        self.import_button = QPushButton(self.tr("Import…"))
        self.import_button.setToolTip(self.tr("Import a conversation from JSON"))
        self.model = ConversationListModel(history, self)
        self.list_view = HistoryListView(self._clock)
        self.list_view.setEditTriggers(QListView.EditTrigger.EditKeyPressed)
        self.list_view.setModel(self.model)
        # Long titles are elided instead of scrolling the pane sideways.
        self.list_view.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.list_view.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.stack = QStackedWidget()
        self.stack.addWidget(self.list_view)
        self.finder = HistorySearch(history, self.stack, self.list_view, self)
        self.search_box, self.results = self.finder.box, self.finder.results
        self.results_view, self.no_results_label = self.finder.results_view, self.finder.no_results_label
        self.searches = self.finder.runner
        self.undo_bar = UndoBar()

        buttons = QHBoxLayout()
        buttons.addWidget(self.new_button, 1)
        buttons.addWidget(self.import_button, 1)
        layout = QVBoxLayout(self)
        layout.addLayout(buttons)
        layout.addWidget(self.search_box)  # its own row: room for the placeholder
        layout.addWidget(self.no_results_label)
        layout.addWidget(self.stack, 1)
        layout.addWidget(self.undo_bar)

    def _connect(self) -> None:
        self.undo_bar.expired.connect(self._purge_pending)
        self.finder.finished.connect(self.search_finished)
        self.finder.hit_selected.connect(self._on_hit_selected)
        self.undo_bar.undo_requested.connect(self.undo_delete)
        # A new chat is saved when its first message is sent, never as an empty row.
        self.new_button.clicked.connect(self.new_chat_requested)
        self.import_button.clicked.connect(self._ask_import)
        # Queued: the list reloads after the editor has committed, not inside setData.
        self.model.rename_requested.connect(self.rename_conversation, Qt.ConnectionType.QueuedConnection)
        self.list_view.selectionModel().currentChanged.connect(self._on_current_changed)
        self.list_view.row_menu_requested.connect(self._show_row_menu)

    def _add_actions(self) -> None:
        entries = [
            (self.tr("Rename"), QKeySequence(Qt.Key.Key_F2), self._ask_rename),
            (self.tr("Duplicate"), None, lambda: self._with_current(self.duplicate_conversation)),
            (self.tr("Copy as Markdown"), None, lambda: self._with_current(self.copy_markdown)),
            (self.tr("Export as Markdown…"), None, lambda: self._ask_export("markdown")),
            (self.tr("Export as JSON…"), None, lambda: self._ask_export("json")),
            (
                self.tr("Delete"),
                QKeySequence(QKeySequence.StandardKey.Delete),
                lambda: self._with_current(self.delete_conversation),
            ),
        ]
        for text, shortcut, slot in entries:
            action = QAction(text, self.list_view)
            if shortcut is not None:
                action.setShortcut(shortcut)
                action.setShortcutContext(Qt.ShortcutContext.WidgetShortcut)
            action.triggered.connect(slot)
            self.list_view.addAction(action)
        self.list_view.setContextMenuPolicy(Qt.ContextMenuPolicy.ActionsContextMenu)

    def _show_row_menu(self, _index: QModelIndex, point) -> None:
        """The row's "more" button: its actions (Rename, Duplicate, ..., Delete) as a menu
        under the button (the row is already the current one)."""
        menu = self.row_menu = QMenu(self)
        menu.setObjectName("history_row_menu")
        menu.addActions(self.list_view.actions())
        menu.popup(point)

    # -- list ------------------------------------------------------------------------
    def current_conversation_id(self) -> int | None:
        """Id of the highlighted conversation, or ``None``."""
        index = self.list_view.currentIndex()
        return index.data(ID_ROLE) if index.isValid() else None

    def refresh(self) -> None:
        """Reload the list (after a message was saved), keeping the highlighted conversation."""
        current = self.current_conversation_id()
        self._quiet = True
        try:
            self.model.reload()
            if current is not None:
                self._set_current(self.model.row_of(current))
        finally:
            self._quiet = False

    def select_conversation(self, conversation_id: int) -> bool:
        """Highlight a conversation (emits ``conversation_selected``); False if it is not live."""
        self.finder.show_list()
        row = self.model.row_of(conversation_id)
        self._set_current(row)
        return row >= 0

    def highlight_conversation(self, conversation_id: int | None) -> None:
        """Highlight the conversation on screen without opening it again (``None``: none)."""
        if conversation_id == self.current_conversation_id():
            return
        self._quiet = True
        try:
            row = -1 if conversation_id is None else self.model.row_of(conversation_id)
            if row < 0 and conversation_id is not None:  # saved since the list was loaded
                self.model.reload()
                row = self.model.row_of(conversation_id)
            self._set_current(row)
        finally:
            self._quiet = False

    def _set_current(self, row: int) -> None:
        if row < 0:
            self.list_view.selectionModel().clearCurrentIndex()
            self.list_view.clearSelection()
            return
        index = self.model.index(row)
        self.list_view.setCurrentIndex(index)
        self.list_view.scrollTo(index)

    def _on_current_changed(self, current: QModelIndex, _previous: QModelIndex) -> None:
        if current.isValid() and not self._quiet:
            self.conversation_selected.emit(current.data(ID_ROLE))

    def _with_current(self, action) -> None:  # noqa: ANN001
        cid = self.current_conversation_id()
        if cid is not None:
            action(cid)

    # -- writes ------------------------------------------------------------------------------
    def _write(self, run: Callable[[History], Any], then: Callable[[Any], object]) -> Any:
        """Run ``run(history)``, then ``then(result)``; through the access when built with one.

        Returns:
            The result when it ran here; ``None`` when the access queued it.
        """
        if self._access is not None:
            self._access.write(run, then)
            return None
        result = run(self._history)
        then(result)
        return result

    # -- operations (no dialogs: the window and tests call these) ------------------------
    def new_conversation(self) -> int | None:
        """Create an empty conversation and select it; return its id (``None`` when queued)."""

        def created(cid: int) -> None:
            self.refresh()
            self.conversation_created.emit(cid)
            self.select_conversation(cid)

        return self._write(lambda h: h.create_conversation(), created)

    def rename_conversation(self, conversation_id: int, title: str) -> None:
        """Rename a conversation (``conversation_renamed`` follows once it is stored).

        Raises:
            KeyError: for an unknown id (without an access; with one, nothing happens).
        """

        def renamed(_result: None) -> None:
            self.refresh()
            self.conversation_renamed.emit(
                conversation_id, self._history.get_conversation(conversation_id).title
            )

        self._write(lambda h: h.rename_conversation(conversation_id, title), renamed)

    def delete_conversation(self, conversation_id: int) -> None:
        """Move a conversation to the bin and offer Undo for 10 s (purging an earlier pending one).

        The window should stop a stream into this conversation and save its partial
        answer (with its own message id) when ``conversation_deleted`` arrives.

        Raises:
            KeyError: for an unknown id.
        """
        self._purge_pending()
        title = self._history.get_conversation(conversation_id).title or self.tr("Untitled")

        def deleted(_result: None) -> None:
            self.undo_bar.offer(conversation_id, title)
            if self.current_conversation_id() == conversation_id:
                self._set_current(-1)
            self.refresh()
            self.finder.refresh()
            self.conversation_deleted.emit(conversation_id)

        self._write(lambda h: h.delete_conversation(conversation_id), deleted)

    def undo_delete(self) -> None:
        """Restore the conversation deleted last, if its Undo bar is still shown."""
        cid = self.undo_bar.take()
        if cid is None:
            return

        def restored(_result: None) -> None:
            self.refresh()
            self.finder.refresh()
            self.conversation_restored.emit(cid)

        self._write(lambda h: h.restore_conversation(cid), restored)

    def _purge_pending(self) -> None:
        """Purge the conversation whose Undo ran out; none once the history was closed
        (the window went first: its soft-deleted row is purged at the next start)."""
        cid = self.undo_bar.take()
        if cid is not None and not self._history.closed:
            self._write(lambda h: h.purge_deleted(cid), lambda _count: None)

    def duplicate_conversation(self, conversation_id: int) -> int | None:
        """Copy a conversation (titled "… (copy)"), select the copy and return its id
        (``None`` when the access queued it: ``conversation_duplicated`` follows)."""
        title = self._history.get_conversation(conversation_id).title or self.tr("Untitled")
        copy_title = self.tr("{title} (copy)").format(title=title)

        def duplicated(new_id: int) -> None:
            self.refresh()
            self.conversation_duplicated.emit(conversation_id, new_id)
            self.select_conversation(new_id)

        return self._write(lambda h: h.duplicate_conversation(conversation_id, copy_title), duplicated)

    def markdown_labels(self) -> dict[str, str]:
        """Translated headings for Markdown export (:func:`markdown_labels`)."""
        return markdown_labels()

    def copy_markdown(self, conversation_id: int) -> None:
        """Put the whole conversation on the clipboard as Markdown."""
        QGuiApplication.clipboard().setText(
            self._history.export_markdown(conversation_id, self.markdown_labels())
        )
        self.conversation_copied.emit(conversation_id)

    def export_conversation(self, conversation_id: int, path: str | Path, fmt: str) -> None:
        """Write a conversation to ``path`` as ``"markdown"`` or ``"json"`` (UTF-8).

        Raises:
            ValueError: for another format.
            OSError: when the file cannot be written.
        """
        if fmt == "markdown":  # its images as files beside it
            self._history.export_markdown_files(conversation_id, path, self.markdown_labels())
        elif fmt == "json":
            Path(path).write_text(self._history.export_json(conversation_id), encoding="utf-8")
        else:
            raise ValueError(f"unknown export format {fmt!r}")
        self.conversation_exported.emit(conversation_id, str(path))

    def import_conversation(self, path: str | Path) -> int | None:
        """Import a JSON export, select it and return its id (``None`` when the access
        queued it: ``conversation_imported`` follows; ``import_noted`` before it).

        Raises:
            OSError: when the file cannot be read.
            ValueError: a sentence naming the problem when it is not a glmdesk conversation
                (as an editor may save it back: see ``history_io.read_export``).
        """
        data = read_export(path)

        def imported(result) -> None:  # a core.history_types.ImportedConversation
            cid = result.conversation_id
            self.refresh()
            for note in result.notes:
                self.import_noted.emit(cid, note)
            self.conversation_imported.emit(cid)
            self.select_conversation(cid)

        result = self._write(lambda h: h.import_conversation(data), imported)
        return None if result is None else result.conversation_id

    # -- dialogs ---------------------------------------------------------------------------
    def _ask_rename(self) -> None:
        index = self.list_view.currentIndex()
        if index.isValid():
            self.finder.show_list()
            self.list_view.edit(index)

    def _ask_export(self, fmt: str) -> None:
        cid = self.current_conversation_id()
        if cid is not None:
            ask_export(self, self, cid, self._history.get_conversation(cid).title, fmt)

    def _ask_import(self) -> None:
        ask_import(self, self)

    # -- search ------------------------------------------------------------------------------
    def search(self, text: str) -> None:
        """Show the results for ``text`` now (an empty text shows the list)."""
        self.finder.search(text)

    def _on_hit_selected(self, conversation_id: int, message_id: int) -> None:
        self.search_result_selected.emit(conversation_id, message_id)
        self.conversation_selected.emit(conversation_id)
