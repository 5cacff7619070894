"""A one-line notice above the input box: an error sentence or information, dismissable."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Slot
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QToolButton, QWidget


class NoticeBar(QFrame):
    """Shows one plain sentence (errors in the window never appear as chat text)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("notice_bar")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.label = QLabel()
        self.label.setWordWrap(True)
        self.label.setObjectName("notice_text")
        self.action_button = QToolButton()  # an action the sentence offers (Regenerate)
        self.action_button.setObjectName("notice_action")
        self.action_button.hide()
        self.action_button.clicked.connect(self._on_action)
        self._action: Callable[[], None] | None = None
        close = QToolButton()
        close.setText("\u2715")
        close.setAutoRaise(True)
        close.setToolTip(self.tr("Dismiss"))
        layout = QHBoxLayout(self)
        layout.setContentsMargins(8, 4, 4, 4)
        layout.addWidget(self.label, 1)
        layout.addWidget(self.action_button)
        layout.addWidget(close)
        close.clicked.connect(self.dismiss)
        self.kind = ""
        self.hide()

    def show_error(self, text: str, action: tuple[str, Callable[[], None]] | None = None) -> None:
        """Show an error sentence; ``action``: ``(label, callable)`` of a button beside it."""
        self._show(text, "error", "#d9534f", action)

    def show_info(self, text: str) -> None:
        """Show an informational sentence."""
        self._show(text, "info", "#5b9bd5")

    def _show(self, text: str, kind: str, colour: str, action=None) -> None:
        self.kind = kind
        self.label.setText(text)
        self._action = action[1] if action else None
        self.action_button.setText(action[0] if action else "")
        self.action_button.setVisible(action is not None)
        self.setStyleSheet(f"#notice_bar {{ border: 1px solid {colour}; border-radius: 4px; }}")
        self.show()

    def text(self) -> str:
        """The sentence shown (empty when hidden)."""
        return self.label.text() if self.isVisible() or self.kind else ""

    @Slot()
    def dismiss(self) -> None:
        """Hide the notice."""
        self.kind = ""
        self.label.setText("")
        self._action = None
        self.action_button.hide()
        self.hide()

    @Slot()
    def _on_action(self) -> None:
        action = self._action
        self.dismiss()
        if action is not None:
            action()
