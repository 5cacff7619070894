"""The history list: conversations grouped by date under headers (Today, Yesterday,
Previous 7 days, Older), a "more" button on the hovered or selected row, and an empty
state that says what will appear.

The model stays one row per conversation, newest first (keyset paging, ``row_of``);
the headers are drawn by :class:`HistoryRowDelegate` above the first row of each group,
so selection, paging and renaming work on conversations only.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, QPoint, QRect, QSize, Qt, Signal
from PySide6.QtGui import QFont, QPainter, QPalette
from PySide6.QtWidgets import (
    QLabel,
    QListView,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QVBoxLayout,
    QWidget,
)

from glmdesk.ui.common.icons import ui_icon
from glmdesk.ui.history.history_models import UPDATED_ROLE

#: The groups, newest first: keys of :func:`date_group`.
GROUPS = ("today", "yesterday", "week", "older")
#: Side of the row's "more" button, in px.
MORE_SIZE = 20
_Index = QModelIndex | QPersistentModelIndex


def date_group(updated: float, now: datetime) -> str:
    """The group of a conversation last changed at ``updated`` (seconds since the epoch,
    read in local time) as seen at ``now`` (local): ``today``, ``yesterday``, ``week``
    (2 to 7 days ago, by calendar day) or ``older``."""
    day = datetime.fromtimestamp(updated).date()
    today = now.date()
    if day >= today:
        return "today"
    if day == today - timedelta(days=1):
        return "yesterday"
    if day >= today - timedelta(days=7):
        return "week"
    return "older"


class HistoryRowDelegate(QStyledItemDelegate):
    """Draws a row, with its group's header above it when it is the group's first row,
    and the "more" button on the hovered or selected row.

    Args:
        view: The :class:`HistoryListView` (its :meth:`~HistoryListView.group_of`).
    """

    def __init__(self, view: HistoryListView) -> None:
        super().__init__(view)
        self._view = view

    def header_height(self) -> int:
        """Height of a group header, in px."""
        return self._view.fontMetrics().height() + 14

    def sizeHint(self, option: QStyleOptionViewItem, index: _Index) -> QSize:  # noqa: N802 (Qt override)
        size = super().sizeHint(option, index)
        size.setHeight(max(size.height(), self._view.fontMetrics().height() + 10))
        if self._view.header_of(index):
            size.setHeight(size.height() + self.header_height())
        return size

    def row_rect(self, rect: QRect, index: _Index) -> QRect:
        """The part of the item's ``rect`` that is the conversation (under its header)."""
        return rect.adjusted(0, self.header_height(), 0, 0) if self._view.header_of(index) else QRect(rect)

    def more_rect(self, rect: QRect, index: _Index) -> QRect:
        """Where the "more" button is drawn in the item's ``rect``."""
        row = self.row_rect(rect, index)
        return QRect(row.right() - MORE_SIZE - 4, row.center().y() - MORE_SIZE // 2, MORE_SIZE, MORE_SIZE)

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: _Index) -> None:
        rect = QRect(option.rect)
        header = self._view.header_of(index)
        if header:
            painter.save()
            font = QFont(option.font)
            font.setBold(True)
            font.setPointSizeF(font.pointSizeF() * 0.9)
            painter.setFont(font)
            painter.setPen(self._view.palette().color(QPalette.ColorRole.PlaceholderText))
            head = QRect(rect.left() + 6, rect.top(), rect.width() - 12, self.header_height())
            painter.drawText(head, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignBottom, header)
            painter.restore()
        row = QStyleOptionViewItem(option)
        row.rect = self.row_rect(rect, index)
        state = option.state
        active = bool(state & (QStyle.StateFlag.State_MouseOver | QStyle.StateFlag.State_Selected))
        if active:
            row.rect = row.rect.adjusted(0, 0, -(MORE_SIZE + 6), 0)
        super().paint(painter, row, index)
        if active:
            if state & QStyle.StateFlag.State_Selected:  # the selection's fill behind the button too
                painter.fillRect(
                    self.row_rect(rect, index).adjusted(row.rect.width(), 0, 0, 0),
                    option.palette.color(QPalette.ColorRole.Highlight),
                )
            ui_icon("more").paint(painter, self.more_rect(rect, index))

    def updateEditorGeometry(self, editor: QWidget, option: QStyleOptionViewItem, index: _Index) -> None:  # noqa: N802
        editor.setGeometry(self.row_rect(option.rect, index))


class HistoryListView(QListView):
    """The conversation list with date headers, row buttons and an empty state.

    Args:
        clock: Gives "now" (local time) for the groups; tests pass a fixed one.
        parent: The parent widget.

    Signals:
        row_menu_requested(QModelIndex, QPoint): The row's "more" button was clicked
            (the index and the global point under the button's bottom-left corner).
    """

    row_menu_requested = Signal(object, object)

    def __init__(self, clock: Callable[[], datetime] = datetime.now, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._clock = clock
        self.setObjectName("history_list")
        self.setUniformItemSizes(False)
        self.setMouseTracking(True)
        self.setFrameShape(QListView.Shape.NoFrame)
        self.viewport().setBackgroundRole(QPalette.ColorRole.Window)
        self.delegate = HistoryRowDelegate(self)
        self.setItemDelegate(self.delegate)
        self.empty_label = QLabel(
            self.tr(
                "Your conversations will appear here, grouped by day.\n\n"
                "Each one is saved as you chat; right-click one to rename, export or delete it."
            )
        )
        self.empty_label.setObjectName("history_empty")
        self.empty_label.setWordWrap(True)
        self.empty_label.setAlignment(Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignTop)
        self.empty_label.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        holder = QVBoxLayout(self.viewport())
        holder.setContentsMargins(12, 24, 12, 12)
        holder.addWidget(self.empty_label)
        holder.addStretch(1)

    def setModel(self, model) -> None:  # noqa: N802 (Qt override)
        super().setModel(model)
        for signal in (model.modelReset, model.rowsInserted, model.rowsRemoved, model.layoutChanged):
            signal.connect(self._update_empty_state)
        self._update_empty_state()

    def _update_empty_state(self, *_args) -> None:
        model = self.model()
        self.empty_label.setVisible(model is not None and model.rowCount() == 0)

    def is_empty_state_shown(self) -> bool:
        """True while the list has no conversation and says what will appear."""
        return not self.empty_label.isHidden()

    def group_of(self, index: _Index) -> str:
        """The date group of the conversation at ``index`` (see :func:`date_group`)."""
        updated = index.data(UPDATED_ROLE)
        return date_group(float(updated or 0), self._clock())

    def header_of(self, index: _Index) -> str:
        """The header drawn above ``index`` (its group's name), or ``""`` inside a group."""
        if not index.isValid():
            return ""
        group = self.group_of(index)
        if index.row() > 0 and self.group_of(self.model().index(index.row() - 1, 0)) == group:
            return ""
        return self.group_name(group)

    def group_name(self, group: str) -> str:
        """The header of ``group`` (one of :data:`GROUPS`) in the interface language."""
        names = {
            "today": self.tr("Today"),
            "yesterday": self.tr("Yesterday"),
            "week": self.tr("Previous 7 days"),
            "older": self.tr("Older"),
        }
        return names[group]

    def more_button_rect(self, index: QModelIndex) -> QRect:
        """Where the row's "more" button is, in viewport coordinates (tests click it)."""
        return self.delegate.more_rect(self.visualRect(index), index)

    def mousePressEvent(self, event) -> None:  # noqa: N802 (Qt override)
        point = event.position().toPoint()
        index = self.indexAt(point)
        if index.isValid():
            if self.more_button_rect(index).contains(point):
                self.setCurrentIndex(index)
                corner = self.more_button_rect(index).bottomLeft()
                self.row_menu_requested.emit(index, self.viewport().mapToGlobal(corner))
                return
            if not self.delegate.row_rect(self.visualRect(index), index).contains(point):
                return  # a click on a group's header selects nothing
        super().mousePressEvent(event)

    def leaveEvent(self, event) -> None:  # noqa: N802 (Qt override)
        super().leaveEvent(event)
        self.viewport().update()  # the hovered row's button goes

    def visual_point(self, index: QModelIndex) -> QPoint:
        """The middle of a row's conversation part, in viewport coordinates (tests)."""
        return self.delegate.row_rect(self.visualRect(index), index).center()
