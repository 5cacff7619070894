"""Where the user types: Enter sends, Shift+Enter adds a line, Esc stops.

While an input method is composing (a Chinese IME shows preedit text), Enter
belongs to the input method and never sends: the composing state comes from
``QInputMethodEvent.preeditString()``. Empty or whitespace-only text is never sent.
The Send button turns into Stop while an answer streams.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtGui import QInputMethodEvent, QKeyEvent
from PySide6.QtWidgets import QHBoxLayout, QPlainTextEdit, QPushButton, QSizePolicy, QWidget

_ENTER_KEYS = (Qt.Key.Key_Return, Qt.Key.Key_Enter)


class PromptEdit(QPlainTextEdit):
    """The text field of :class:`InputBox`.

    Signals:
        submit_requested(): Enter was pressed (no Shift, no IME composition).
        stop_requested(): Esc was pressed.
    """

    submit_requested = Signal()
    stop_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.composing = False
        self.setTabChangesFocus(True)

    def inputMethodEvent(self, event: QInputMethodEvent) -> None:  # noqa: N802 (Qt override)
        self.composing = bool(event.preeditString())
        super().inputMethodEvent(event)

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802 (Qt override)
        if event.key() in _ENTER_KEYS:
            if self.composing:
                event.accept()  # Enter belongs to the input method: never send, never add a line
                return
            if event.modifiers() & Qt.KeyboardModifier.ShiftModifier:
                self.insertPlainText("\n")  # not U+2028, which QPlainTextEdit would insert
                return
            self.submit_requested.emit()  # Enter and Ctrl+Enter send
            return
        if event.key() == Qt.Key.Key_Escape:
            self.stop_requested.emit()
            return
        super().keyPressEvent(event)


class InputBox(QWidget):
    """The message field with its Send / Stop button.

    Signals:
        message_submitted(str): The user asked to send this (non-blank) text.
        stop_requested(): The user pressed Stop or Esc.
    """

    message_submitted = Signal(str)
    stop_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("input_box")
        self._streaming = False
        self.editor = PromptEdit()
        self.editor.setPlaceholderText(
            self.tr("Type a message. Enter sends, Shift+Enter adds a line, Esc stops the answer.")
        )
        self.editor.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.editor.setFixedHeight(int(self.editor.fontMetrics().lineSpacing() * 3.6) + 12)
        self.send_button = QPushButton(self.tr("Send"))
        self.send_button.setToolTip(self.tr("Send the message (Enter)"))
        self.send_button.setDefault(False)
        self.send_button.setAutoDefault(False)
        self.send_button.setMinimumWidth(72)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(8, 4, 8, 8)
        layout.addWidget(self.editor, 1)
        layout.addWidget(self.send_button, 0, Qt.AlignmentFlag.AlignBottom)
        self.editor.submit_requested.connect(self.submit)
        self.editor.stop_requested.connect(self.stop_requested)
        self.send_button.clicked.connect(self._on_button)

    def text(self) -> str:
        """The current text (paragraph and line separators as ``\\n``)."""
        return self.editor.toPlainText().replace("\u2028", "\n").replace("\u2029", "\n")

    def set_text(self, text: str) -> None:
        """Replace the text."""
        self.editor.setPlainText(text)

    def clear_text(self) -> None:
        """Empty the field (after the window accepted the message)."""
        self.editor.clear()

    def is_streaming(self) -> bool:
        """True while the button is Stop."""
        return self._streaming

    def set_streaming(self, streaming: bool) -> None:
        """Turn Send into Stop (``True``) or back."""
        self._streaming = streaming
        if streaming:
            self.send_button.setText(self.tr("Stop"))
            self.send_button.setToolTip(self.tr("Stop the answer (Esc); the text so far is kept"))
        else:
            self.send_button.setText(self.tr("Send"))
            self.send_button.setToolTip(self.tr("Send the message (Enter)"))

    @Slot()
    def submit(self) -> None:
        """Emit :attr:`message_submitted` unless the text is blank or an answer streams."""
        if self._streaming:
            return
        text = self.text()
        if not text.strip():
            return
        self.message_submitted.emit(text)

    @Slot()
    def _on_button(self) -> None:
        if self._streaming:
            self.stop_requested.emit()
        else:
            self.submit()
