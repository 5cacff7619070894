"""A tool call in the chat: the tool's name and arguments (or code), and what the user does.

A call waits in its card while the answer's tool loop asks the user: for a custom
function the user types the result (the demos' manual observation) or declines
(:meth:`ToolCallCard.ask_result`); an MCP tool's call and interpreter code wait in an
approval card placed inside this one (:meth:`ToolCallCard.show_approval`); running code
is killed with Stop. The result (the run's text and images) is the observation block
shown under the card, while streaming and when the conversation is reopened. While the
model writes a call, the same card shows it live (no buttons yet).
"""

from __future__ import annotations

from html import escape

from PySide6.QtCore import QTimer, Signal, Slot
from PySide6.QtGui import QFontDatabase, QPalette, QTextCursor
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPlainTextEdit, QPushButton, QVBoxLayout, QWidget

from glmdesk.core.parts import ToolCallPart
from glmdesk.core.tools import INTERPRETER, ToolCall
from glmdesk.ui.chat.chat_view import REPAINT_INTERVAL_MS

#: Most lines the arguments (or code) box grows to; longer text scrolls inside it.
ARGUMENT_MAX_LINES = 16


def live_arguments(text: str) -> str:
    """What a card shows of a call while it is written (``ToolCallPart.arguments_so_far``):
    the text as written, or inside a fenced block (ChatGLM3's ``tool_call(...)``, the
    interpreter's code) the lines after the opening fence, without the closing fence
    or the part of it written so far."""
    body = text.lstrip("\n")
    if not body.startswith("```"):
        return body
    _, newline, body = body.partition("\n")
    if not newline:
        return ""
    head, _, last = body.rpartition("\n")
    return head if last.strip() and set(last.strip()) == {"`"} else body


class ToolCallCard(QFrame):
    """One call, shown instead of its raw text.

    A card made with ``pending`` (no call yet) is the live card of a call being written:
    the tool's name, "writing...", and the call's text so far in the monospace area
    (:meth:`set_live_text`, repainted at most every ``REPAINT_INTERVAL_MS`` like the chat
    view, only the new end appended); :meth:`set_call` makes it the finished card.

    Args:
        call: The recognised call, or ``None`` for a live card.
        parent: Parent widget.
        pending: The tool being called (``interpreter`` for code) of a live card.

    Signals:
        result_submitted(str): The user's result for a custom function.
        declined(): The user declined the call.
        kill_requested(): Stop the running code now.
    """

    result_submitted = Signal(str)
    declined = Signal()
    kill_requested = Signal()

    def __init__(
        self, call: ToolCall | None = None, parent: QWidget | None = None, pending: str = ""
    ) -> None:
        super().__init__(parent)
        self.call = call
        self.setObjectName("tool_call_card")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.title = QLabel()
        self.state_label = QLabel()
        self.state_label.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        self.arguments = QPlainTextEdit()  # monospace: code and JSON as written
        self.arguments.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.arguments.setReadOnly(True)
        # The box is as tall as its text (up to ARGUMENT_MAX_LINES lines, wrapped lines
        # counted): a one-line call takes one line, a long one scrolls.
        self.arguments.document().documentLayout().documentSizeChanged.connect(self._fit_arguments)
        self.arguments.document().contentsChanged.connect(self._fit_arguments)
        self._fit_arguments()
        self.result_edit = QPlainTextEdit()
        self.result_edit.setPlaceholderText(self.tr("Type the tool's result here"))
        self.result_edit.setFixedHeight(70)
        self.send_button = QPushButton(self.tr("Send result"))
        self.kill_button = QPushButton(self.tr("Stop"))
        self.decline_button = QPushButton(self.tr("Decline"))
        header = QHBoxLayout()
        header.addWidget(self.title)
        header.addWidget(self.state_label)
        header.addStretch(1)
        buttons = QHBoxLayout()
        for button in (self.send_button, self.kill_button, self.decline_button):
            buttons.addWidget(button)
        buttons.addStretch(1)
        column = QVBoxLayout(self)
        self._column = column
        column.addLayout(header)
        column.addWidget(self.arguments)
        column.addWidget(self.result_edit)
        column.addLayout(buttons)
        self.send_button.clicked.connect(self._on_send)
        self.kill_button.clicked.connect(self.kill_requested)
        self.decline_button.clicked.connect(self.declined)
        self.declined.connect(self.set_done)
        self.render_count = 0  # repaints of the live text (tests)
        self._live, self._shown = "", ""
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(REPAINT_INTERVAL_MS)
        self._timer.timeout.connect(self._flush)
        if call is not None:
            self.set_call(call)
        else:
            self._set_title(pending == INTERPRETER, pending)
            self.state_label.setText(self.tr("writing..."))
            self.result_edit.hide()
            for button in (self.send_button, self.kill_button, self.decline_button):
                button.hide()

    @Slot()
    def _fit_arguments(self, *_args) -> None:
        box = self.arguments
        # Measured from the laid-out blocks: a line holding CJK (a fallback font) is
        # taller than the monospace font's line spacing.
        height, lines, block = 0.0, 0, box.document().firstBlock()
        while block.isValid() and lines < ARGUMENT_MAX_LINES:
            rect = box.blockBoundingRect(block)
            count = max(1, block.layout().lineCount())
            take = min(count, ARGUMENT_MAX_LINES - lines)
            height += rect.height() * take / count
            lines += take
            block = block.next()
        chrome = 2 * box.document().documentMargin() + 2 * box.frameWidth() + 2
        box.setFixedHeight(int(max(height, box.fontMetrics().lineSpacing()) + chrome))

    def _set_title(self, code: bool, name: str) -> None:
        title = self.tr("Code interpreter") if code else self.tr("Tool call: {name}").format(name=name)
        self.title.setText(f"<b>{escape(title)}</b>")

    def is_live(self) -> bool:
        """True while the card shows a call being written (no call yet)."""
        return self.call is None

    def show_part(self, part: ToolCallPart) -> None:
        """The call's newest part (the message's :class:`~glmdesk.ui.chat.message_widget.
        MessageWidget.show_parts`): a live card shows its text so far; a finished card
        keeps its call."""
        if self.is_live():
            self.set_live_text(part.arguments_so_far)

    def set_live_text(self, text: str) -> None:
        """The call's text so far (``ToolCallPart.arguments_so_far``); shown at the next
        throttled repaint."""
        self._live = text
        if not self._timer.isActive():
            self._timer.start()

    @Slot()
    def _flush(self) -> None:
        shown = live_arguments(self._live)
        if self.call is not None or shown == self._shown:
            return
        bar = self.arguments.verticalScrollBar()
        following = bar.value() >= bar.maximum() - 4  # the user did not scroll up to read
        if shown.startswith(self._shown):  # the usual case: only the new end is laid out
            cursor = QTextCursor(self.arguments.document())
            cursor.movePosition(QTextCursor.MoveOperation.End)
            cursor.insertText(shown[len(self._shown) :])
        else:
            self.arguments.setPlainText(shown)
        self._shown = shown
        self.render_count += 1
        if following:
            bar.setValue(bar.maximum())

    def set_call(self, call: ToolCall) -> None:
        """Show the recognised ``call`` (arguments pretty-printed, or the code), without
        buttons until the answer asks about it (:meth:`ask_result`, :meth:`show_approval`)."""
        self._timer.stop()
        self.call = call
        code = call.kind == "interpreter"
        self._set_title(code, call.name)
        self.state_label.clear()
        self.arguments.setPlainText(call.code if code else call.arguments_json(indent=2))
        self._shown = ""
        self.result_edit.hide()
        for button in (self.send_button, self.kill_button, self.decline_button):
            button.hide()

    def ask_result(self) -> None:
        """A custom function's call waits for the result the user types: Send result / Decline."""
        self.state_label.clear()
        self.result_edit.show()
        self.send_button.show()
        self.decline_button.show()
        self.result_edit.setFocus()

    def show_approval(self, card: QWidget) -> None:
        """Place ``card`` (an :class:`~glmdesk.ui.tools.approval_card.ApprovalCard`) at the
        bottom of this card: the call waits in it."""
        self.state_label.clear()
        self._column.addWidget(card)
        if self.isVisible():
            card.show()

    @Slot()
    def _on_send(self) -> None:
        self.result_submitted.emit(self.result_edit.toPlainText())
        self.set_done()

    def set_running(self, running: bool) -> None:
        """While the call runs: "running..." and, for code, Stop (kills it)."""
        code = self.call is not None and self.call.kind == "interpreter"
        self.kill_button.setVisible(running and code)
        self.state_label.setText(self.tr("running...") if running else "")

    def set_queued(self, call: ToolCall) -> None:
        """Show ``call``, a later call of the same answer, without buttons until the calls
        before it are answered."""
        self.set_call(call)
        self.state_label.setText(self.tr("asked after the call above"))

    @Slot()
    def set_done(self) -> None:
        """The call was answered: no more buttons (its result shows as the observation
        block under the card, with the run's output and images)."""
        for button in (self.send_button, self.kill_button, self.decline_button):
            button.hide()
        self.state_label.clear()
        self.result_edit.setReadOnly(True)
        self.result_edit.hide()
