"""A message's quiet footer: its figures, the "‹ 2/3 ›" branch switch and its actions.

Attached to a :class:`~glmdesk.ui.chat.message_widget.MessageWidget` from outside
(:meth:`MessageFooter.attach`), so the bubble itself stays a plain view. The figures
(in the placeholder colour) and the branch switch always show; the action buttons sit
on the message's author line and show while the mouse is over the message (or after a
click on it), in space kept for them, so that hovering never makes the card grow. An answer cut by the length limit says so
and offers Continue at all times.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, QSize, Qt, Signal, Slot
from PySide6.QtGui import QAction, QColor, QFont, QGuiApplication, QPainter, QPalette, QPixmap
from PySide6.QtWidgets import QHBoxLayout, QLabel, QMenu, QSizePolicy, QToolButton, QVBoxLayout, QWidget

from glmdesk.ui.common.theme import theme_colours

#: Actions a footer offers, by role.
ROLE_ACTIONS = {
    "user": ("copy", "edit", "delete"),
    "assistant": ("copy", "continue", "regenerate", "delete"),
    "observation": ("copy",),
    "system": ("copy",),
}


def role_icon(role: str, size: int = 22) -> QPixmap:
    """A round badge for a role (a person's initial for the user, a spark for the assistant)."""
    dark = QGuiApplication.palette().color(QPalette.ColorRole.Window).lightness() < 128
    colours = theme_colours("dark" if dark else "light")
    ratio = 2.0
    pixmap = QPixmap(int(size * ratio), int(size * ratio))
    pixmap.setDevicePixelRatio(ratio)
    pixmap.fill(Qt.GlobalColor.transparent)
    painter = QPainter(pixmap)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    fill = QColor(colours.accent if role == "assistant" else colours.quiet)
    painter.setBrush(fill)
    painter.setPen(Qt.PenStyle.NoPen)
    painter.drawEllipse(0, 0, size, size)
    font = QFont()
    font.setBold(True)
    font.setPixelSize(int(size * 0.55))
    painter.setFont(font)
    painter.setPen(QColor(colours.base))
    # user: a smiling face; assistant: a spark; a tool's result: a gear; system: S
    glyph = {"user": "\u263a", "assistant": "\u2726", "observation": "\u2699", "system": "S"}.get(
        role, "\u2022"
    )
    painter.drawText(0, 0, size, size, Qt.AlignmentFlag.AlignCenter, glyph)
    painter.end()
    return pixmap


class MessageFooter(QWidget):
    """Figures, branch switch and actions of one message.

    Args:
        role: ``user``, ``assistant`` or ``system``.
        parent: Parent widget.

    Signals:
        action_requested(str): ``copy_text``, ``copy_markdown``, ``edit``, ``continue``,
            ``regenerate`` or ``delete``.
        sibling_requested(int): -1 for the previous sibling, +1 for the next.
    """

    action_requested = Signal(str)
    sibling_requested = Signal(int)

    def __init__(self, role: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("message_footer")
        self.role = role
        self._revealed = False
        self._pinned = False
        self._several = False
        self._continuable = False
        self._badge: QLabel | None = None  # the role's badge in the message's header (attach)
        self.previous_button = self._tool("\u2039", self.tr("Previous version"))
        self.next_button = self._tool("\u203a", self.tr("Next version"))
        self.position_label = QLabel()
        self.position_label.setObjectName("branch_position")
        for button in (self.previous_button, self.next_button):  # shown with versions only: no gap
            policy = button.sizePolicy()
            policy.setRetainSizeWhenHidden(False)
            button.setSizePolicy(policy)
        self.previous_button.clicked.connect(lambda: self.sibling_requested.emit(-1))
        self.next_button.clicked.connect(lambda: self.sibling_requested.emit(+1))
        self.stats_label = QLabel()
        self.stats_label.setObjectName("message_stats")
        self.stats_label.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        self.stats_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.stats_label.setWordWrap(True)
        self.stats_label.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        self.limit_label = QLabel(self.tr("Stopped at the token limit (max new tokens)."))
        self.limit_label.setObjectName("length_note")
        self.limit_label.setWordWrap(True)
        # The figures on their own line above the switch and the actions: a narrow bubble
        # (1024x700 windows) wraps them across its width, not in a column beside the buttons.
        column = QVBoxLayout(self)
        column.setContentsMargins(0, 2, 0, 0)
        column.setSpacing(0)
        column.addWidget(self.stats_label)
        column.addWidget(self.limit_label)
        layout = QHBoxLayout()
        layout.setSpacing(2)
        column.addLayout(layout)
        for widget in (self.previous_button, self.position_label, self.next_button):
            layout.addWidget(widget)
        layout.addStretch(1)
        self.buttons: dict[str, QToolButton] = {}
        for key in ROLE_ACTIONS.get(role, ("copy",)):
            self.buttons[key] = self._action_button(key)
            layout.addWidget(self.buttons[key])
        self.set_siblings(1, 1)
        self._update_revealed()

    def _action_button(self, key: str) -> QToolButton:
        """The button of action ``key`` (Copy has a menu: plain text or Markdown)."""
        names = {
            "copy": (
                self.tr("Copy answer") if self.role == "assistant" else self.tr("Copy"),
                self.tr("Copy this message"),
            ),
            "edit": (
                self.tr("Edit"),
                self.tr("Edit and send again: the answer below becomes another version"),
            ),
            "continue": (
                self.tr("Continue"),
                self.tr("Go on writing this answer where the token limit cut it"),
            ),
            "regenerate": (self.tr("Regenerate"), self.tr("Write this answer again as another version")),
            "delete": (self.tr("Delete"), self.tr("Delete this message (the replies below it stay)")),
        }
        text, tip = names[key]
        button = self._tool(text, tip)
        button.setObjectName(f"action_{key}")
        if key == "continue":  # shown on few answers: leaves no gap where it is not
            policy = button.sizePolicy()
            policy.setRetainSizeWhenHidden(False)
            button.setSizePolicy(policy)
        if key == "copy":
            menu = QMenu(button)
            for action_key, label in (
                ("copy_text", self.tr("Copy as plain text")),
                ("copy_markdown", self.tr("Copy as Markdown")),
            ):
                action = QAction(label, menu)
                action.setData(action_key)
                action.triggered.connect(self._on_menu_action)
                menu.addAction(action)
            button.setMenu(menu)
            button.setPopupMode(QToolButton.ToolButtonPopupMode.MenuButtonPopup)
            button.clicked.connect(lambda: self.action_requested.emit("copy_markdown"))
        else:
            button.clicked.connect(lambda _checked=False, k=key: self.action_requested.emit(k))
        return button

    def _tool(self, text: str, tip: str) -> QToolButton:
        button = QToolButton()
        button.setText(text)
        button.setToolTip(tip)
        button.setAutoRaise(True)
        button.setCursor(Qt.CursorShape.PointingHandCursor)
        policy = button.sizePolicy()
        policy.setRetainSizeWhenHidden(True)  # revealing the actions never moves the text
        button.setSizePolicy(policy)
        return button

    def sizeHint(self) -> QSize:  # noqa: N802 (Qt override)
        hint = super().sizeHint()
        if not (self.stats_label.text() or self._several or self._continuable):
            return QSize(hint.width(), 0)  # nothing to show: no blank row under the message
        return QSize(hint.width(), max(hint.height(), self.fontMetrics().height() + 6))

    # State ------------------------------------------------------------------------
    def set_stats(self, text: str) -> None:
        """The figures (tokens, tokens/s, TTFT, settings), always shown; empty for none."""
        self.stats_label.setText(text)
        self._update_revealed()

    def set_siblings(self, position: int, count: int) -> None:
        """Show "‹ position/count ›" when the message has other versions (``count > 1``)."""
        several = self._several = count > 1
        self.position_label.setText(f"{position}/{count}")
        for widget in (self.previous_button, self.position_label, self.next_button):
            widget.setVisible(several)
        self.previous_button.setEnabled(position > 1)
        self.next_button.setEnabled(position < count)
        self._update_revealed()

    def set_continuable(self, continuable: bool) -> None:
        """Offer Continue (an answer cut by the length limit, last on its branch)."""
        self._continuable = continuable
        self._update_revealed()

    def set_actions_enabled(self, enabled: bool) -> None:
        """Disable the actions that start an answer or change the conversation (while one is written)."""
        for key, button in self.buttons.items():
            if key != "copy":
                button.setEnabled(enabled)
        self.previous_button.setEnabled(enabled and self.previous_button.isEnabled())
        self.next_button.setEnabled(enabled and self.next_button.isEnabled())

    def is_revealed(self) -> bool:
        """True while the figures and actions are shown."""
        return self._revealed

    def set_revealed(self, revealed: bool) -> None:
        """Show or hide the figures and actions (hover does this)."""
        self._revealed = revealed or self._pinned
        self._update_revealed()

    def _update_revealed(self) -> None:
        self.stats_label.setVisible(bool(self.stats_label.text()))
        self.limit_label.setVisible(self._continuable)
        for key, button in self.buttons.items():
            if key == "continue":
                button.setVisible(self._continuable)  # the cut answer's way on, always at hand
            else:
                button.setVisible(self._revealed)  # hidden, its space kept: the card never grows
        if self.parentWidget() is not None:  # never a window of its own before attach
            self.setVisible(True)

    def changeEvent(self, event) -> None:  # noqa: N802 (Qt override)
        super().changeEvent(event)
        if self._badge is not None and event.type() in (
            QEvent.Type.ApplicationPaletteChange,
            QEvent.Type.PaletteChange,
        ):
            self._badge.setPixmap(role_icon(self.role))  # the new theme's colours

    @Slot()
    def _on_menu_action(self) -> None:
        action = self.sender()
        if isinstance(action, QAction):
            self.action_requested.emit(str(action.data()))

    # Attaching ---------------------------------------------------------------------
    def attach(self, message) -> None:
        """Put this footer under ``message`` (a MessageWidget), give it its role's badge and
        colours, and follow the mouse over it; its own copy button and figures line give way."""
        message.layout().addWidget(self)
        self._update_revealed()
        header = message.layout().itemAt(0).layout()
        if header is not None:
            badge = self._badge = QLabel()
            badge.setObjectName("role_icon")
            badge.setPixmap(role_icon(message.role))
            header.insertWidget(0, badge)
            for key, button in self.buttons.items():  # on the author's line: no row of their own
                if key != "continue":
                    header.addWidget(button)
        message.copy_button.hide()
        message.stats_label.hide()
        message.set_stats = self.set_stats  # figures go to the footer
        message.installEventFilter(_HoverFilter(self, message))


class _HoverFilter(QObject):
    """Reveals a footer while the mouse is over its message; a click pins it open."""

    def __init__(self, footer: MessageFooter, message: QWidget) -> None:
        super().__init__(message)
        self._footer = footer

    def eventFilter(self, _watched, event) -> bool:  # noqa: N802 (Qt override)
        kind = event.type()
        if kind == QEvent.Type.Enter:
            self._footer.set_revealed(True)
        elif kind == QEvent.Type.Leave:
            self._footer.set_revealed(False)
        elif kind == QEvent.Type.MouseButtonRelease:
            self._footer._pinned = not self._footer._pinned
            self._footer.set_revealed(self._footer._pinned)
        return False
