"""A tool call in the chat: the tool's name and arguments (or code), and what the user does.

For a custom function the user types the result (the demos' manual observation) or
declines; for the code interpreter the code runs only after Run and a running run is
killed with Stop. The result (the run's text and images) is the observation block
shown under the card, while streaming and when the conversation is reopened.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtGui import QPixmap
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPlainTextEdit, QPushButton, QVBoxLayout, QWidget

from glmdesk.core.tools import ToolCall

#: Widest a tool's image is shown, in px (wider ones are scaled down, aspect kept).
IMAGE_MAX_WIDTH_PX = 640


def image_label(png: bytes) -> QLabel | None:
    """A label showing a tool's PNG image, or ``None`` when the bytes are no PNG."""
    pixmap = QPixmap()
    if not pixmap.loadFromData(png, "PNG"):
        return None
    if pixmap.width() > IMAGE_MAX_WIDTH_PX:
        pixmap = pixmap.scaledToWidth(IMAGE_MAX_WIDTH_PX, Qt.TransformationMode.SmoothTransformation)
    label = QLabel()
    label.setObjectName("tool_image")
    label.setPixmap(pixmap)
    return label


class ToolCallCard(QFrame):
    """One call, shown instead of its raw text.

    Args:
        call: The recognised call.

    Signals:
        result_submitted(str): The user's result for a custom function.
        declined(): The user declined the call.
        run_requested(): Run the interpreter code.
        kill_requested(): Stop the running code now.
    """

    result_submitted = Signal(str)
    declined = Signal()
    run_requested = Signal()
    kill_requested = Signal()

    def __init__(self, call: ToolCall, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.call = call
        self.setFrameShape(QFrame.Shape.StyledPanel)
        code = call.kind == "interpreter"
        title = self.tr("Code interpreter") if code else self.tr("Tool call: {name}").format(name=call.name)
        self.title = QLabel(f"<b>{title}</b>")
        self.arguments = QPlainTextEdit(call.code if code else call.arguments_json(indent=2))
        self.arguments.setReadOnly(True)
        self.result_edit = QPlainTextEdit()
        self.result_edit.setPlaceholderText(self.tr("Type the tool's result here"))
        self.result_edit.setFixedHeight(70)
        self.result_edit.setVisible(not code)
        self.send_button = QPushButton(self.tr("Send result"))
        self.run_button = QPushButton(self.tr("Run"))
        self.kill_button = QPushButton(self.tr("Stop"))
        self.decline_button = QPushButton(self.tr("Decline"))
        buttons = QHBoxLayout()
        for button in (self.send_button, self.run_button, self.kill_button, self.decline_button):
            buttons.addWidget(button)
        buttons.addStretch(1)
        column = QVBoxLayout(self)
        column.addWidget(self.title)
        column.addWidget(self.arguments)
        column.addWidget(self.result_edit)
        column.addLayout(buttons)
        self.send_button.setVisible(not code)
        self.run_button.setVisible(code)
        self.kill_button.hide()
        self.send_button.clicked.connect(self._on_send)
        self.run_button.clicked.connect(self.run_requested)
        self.kill_button.clicked.connect(self.kill_requested)
        self.decline_button.clicked.connect(self.declined)
        self.declined.connect(self.set_done)

    @Slot()
    def _on_send(self) -> None:
        self.result_submitted.emit(self.result_edit.toPlainText())
        self.set_done()

    def set_running(self, running: bool) -> None:
        """Show Stop (and nothing else to click) while the code runs."""
        self.run_button.setVisible(not running and self.call.kind == "interpreter")
        self.decline_button.setVisible(not running)
        self.kill_button.setVisible(running)

    @Slot()
    def set_done(self) -> None:
        """The call was answered: no more buttons (its result shows as the observation
        block under the card, with the run's output and images)."""
        for button in (self.send_button, self.run_button, self.kill_button, self.decline_button):
            button.hide()
        self.result_edit.setReadOnly(True)
        self.result_edit.hide()
