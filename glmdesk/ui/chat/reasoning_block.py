"""A reasoning model's thinking above its answer: live while it thinks, then collapsed
to one line saying how long it thought and how many tokens, expandable and copyable."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtGui import QGuiApplication, QPalette
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QToolButton, QVBoxLayout, QWidget


class ReasoningBlock(QFrame):
    """The "Thinking" block of one answer.

    While the model thinks the block is open and its header says "Thinking…"; once the
    answer starts (:meth:`set_done`) it collapses to "Thought for T s · N tokens"; the
    header's arrow opens and closes it, Copy puts the thinking (plain text) on the
    clipboard. Hidden while there is no text.

    Args:
        parent: Parent widget.

    Signals:
        copied(str): Copy put the thinking on the clipboard.
    """

    copied = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("reasoning_block")
        self._text = ""
        self._done = False
        self._figures: tuple[float | None, int | None] = (None, None)
        self.toggle_button = QToolButton()
        self.toggle_button.setObjectName("reasoning_toggle")
        self.toggle_button.setCheckable(True)
        self.toggle_button.setChecked(True)
        self.toggle_button.setAutoRaise(True)
        self.toggle_button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.toggle_button.setArrowType(Qt.ArrowType.DownArrow)
        self.toggle_button.toggled.connect(self._on_toggled)
        self.copy_button = QToolButton()
        self.copy_button.setText(self.tr("Copy thinking"))
        self.copy_button.setToolTip(self.tr("Copy the thinking as text"))
        self.copy_button.setAutoRaise(True)
        self.copy_button.clicked.connect(self.copy_to_clipboard)
        self.body = QLabel()  # the thinking itself: plain text, greyed, selectable
        self.body.setObjectName("reasoning")
        self.body.setTextFormat(Qt.TextFormat.PlainText)
        self.body.setWordWrap(True)
        self.body.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.body.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        header = QHBoxLayout()
        header.setContentsMargins(0, 0, 0, 0)
        header.addWidget(self.toggle_button)
        header.addStretch(1)
        header.addWidget(self.copy_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 4)
        layout.setSpacing(0)
        layout.addLayout(header)
        layout.addWidget(self.body)
        self._show_header()
        self.hide()

    def text(self) -> str:
        """The thinking shown (``""`` when none)."""
        return self._text

    def set_text(self, text: str) -> None:
        """Show ``text`` (the thinking so far, plain text); empty hides the block."""
        self._text = text
        self.body.setText(text)
        self.setVisible(bool(text))

    def set_done(self, seconds: float | None = None, tokens: int | None = None) -> None:
        """The answer started: collapse (the first time only, so a block the user opened
        stays open), saying how long it thought (``seconds``, in s) and how many
        ``tokens`` it spent, when known."""
        if not self._done:
            self.toggle_button.setChecked(False)
        self._done = True
        if seconds or tokens:
            self._figures = (seconds, tokens)
        self._show_header()

    def is_done(self) -> bool:
        """True once the answer started (the block collapsed once)."""
        return self._done

    def is_expanded(self) -> bool:
        """True while the thinking itself is shown."""
        return self.toggle_button.isChecked()

    def header_text(self) -> str:
        """The header's words ("Thinking…", "Thought for 2.1 s · 85 tokens")."""
        return self.toggle_button.text()

    def _show_header(self) -> None:
        if not self._done:
            self.toggle_button.setText(self.tr("Thinking…"))
            return
        seconds, tokens = self._figures
        if seconds:  # under a second in ms: a fast model's "0.0 s" said nothing
            took = f"{seconds:.1f} s" if seconds >= 1 else f"{max(round(seconds * 1000), 1)} ms"
        if seconds and tokens:
            words = self.tr("Thought for {time} · {tokens} tokens").format(time=took, tokens=tokens)
        elif seconds:
            words = self.tr("Thought for {time}").format(time=took)
        else:
            words = self.tr("Thought")
        self.toggle_button.setText(words)

    @Slot(bool)
    def _on_toggled(self, expanded: bool) -> None:
        self.toggle_button.setArrowType(Qt.ArrowType.DownArrow if expanded else Qt.ArrowType.RightArrow)
        self.body.setVisible(expanded)

    @Slot()
    def copy_to_clipboard(self) -> None:
        """Put the thinking on the clipboard (plain text)."""
        QGuiApplication.clipboard().setText(self._text)
        self.copied.emit(self._text)
