"""Where the answer's thread waits for the user, shown on the GUI thread.

Two waits, both on the answer's thread (the window's worker), never on the GUI thread:

- :meth:`ApprovalGate.ask` (the approval hook's ``ask`` of
  :func:`glmdesk.chat.mcp.source.approval_hook`): an
  :class:`~glmdesk.ui.tools.approval_card.ApprovalCard` for an MCP call or interpreter
  code, until Allow once, Always allow or Deny;
- :meth:`ApprovalGate.typed_result`: a custom function's result, typed by the user in
  the call's card (or declined).

Each asks the GUI thread through a queued signal, then blocks on a
``threading.Event`` the GUI sets, checking ``stop`` every 50 ms: Stop ends the wait
(the card says "Stopped: not run") and nothing runs.
"""

from __future__ import annotations

import threading

from PySide6.QtCore import QObject, Qt, Signal, Slot

from glmdesk.chat.events import ToolResult
from glmdesk.chat.mcp.approvals import Decision, deny
from glmdesk.chat.mcp.hub import McpTool
from glmdesk.chat.tools import declined
from glmdesk.core.tools import ToolCall
from glmdesk.ui.tools.approval_card import ApprovalCard

#: How often a wait looks at Stop, in s.
POLL_S = 0.05


class _Pending:
    """One call waiting for a decision: asked on the answer's thread, answered on the GUI's."""

    def __init__(self, call: ToolCall, tool: McpTool | None) -> None:
        self.call, self.tool = call, tool
        self.done = threading.Event()
        self.decision: Decision | None = None
        self.card: ApprovalCard | None = None
        self.cancelled = False

    def cancel(self) -> None:
        """Stop: no decision counts from now on (the answer's thread)."""
        self.cancelled = True

    def show_in(self, card: ApprovalCard) -> None:
        """The card the call waits in (GUI thread)."""
        self.card = card

    def decide(self, decision: Decision) -> None:
        """The user's decision, unless Stop came first (GUI thread)."""
        if not self.cancelled:
            self.decision = decision
            self.done.set()


class ResultRequest(QObject):
    """A custom function's call waiting for the result the user types (GUI thread).

    Signals:
        cancelled(): Stop ended the wait; the card's buttons go.
    """

    cancelled = Signal()

    def __init__(self, call: ToolCall) -> None:
        super().__init__()
        self.call = call
        self.done = threading.Event()
        self.result: ToolResult | None = None

    @Slot(str)
    def submit(self, content: str) -> None:
        """The user's result (the observation the model reads)."""
        if not self.done.is_set():
            self.result = ToolResult(content)
            self.done.set()

    @Slot()
    def decline(self) -> None:
        """The user declined: the model reads :data:`~glmdesk.chat.tools.DECLINED`."""
        if not self.done.is_set():
            self.result = declined()
            self.done.set()


class ApprovalGate(QObject):
    """Lives on the GUI thread; its waits run on the answer's thread.

    Args:
        stop: The answer's Stop, used when a wait is given none.
        parent: The owning QObject.

    Signals:
        card_shown(ApprovalCard): A card to place (under the call it asks about).
        result_asked(ResultRequest): A custom function's call waits for a typed result.
        call_started(ToolCall): An allowed call starts running (from the answer's thread;
            queued to the GUI thread).
    """

    card_shown = Signal(object)
    result_asked = Signal(object)
    call_started = Signal(object)
    _asked = Signal(object)
    _cancelled = Signal(object)
    _result_asked = Signal(object)

    def __init__(self, stop: threading.Event | None = None, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.stop = stop or threading.Event()
        queued = Qt.ConnectionType.QueuedConnection
        self._asked.connect(self._show, queued)
        self._cancelled.connect(self._cancel, queued)
        self._result_asked.connect(self._ask_result, queued)

    def ask(self, call: ToolCall, tool: McpTool | None, stop: threading.Event | None = None) -> Decision:
        """Block (on the answer's thread) until the user decides, or Stop denies."""
        stop = stop or self.stop
        pending = _Pending(call, tool)
        self._asked.emit(pending)
        while not pending.done.wait(POLL_S):
            if stop.is_set():
                pending.cancel()
                self._cancelled.emit(pending)
                return deny("The answer was stopped.")
        return pending.decision or deny()

    def typed_result(self, call: ToolCall, stop: threading.Event | None = None) -> ToolResult:
        """Block (on the answer's thread) until the user types ``call``'s result or
        declines it; Stop gives a declined result (the run then ends: nothing is fed back)."""
        stop = stop or self.stop
        request = ResultRequest(call)
        request.moveToThread(self.thread())
        self._result_asked.emit(request)
        while not request.done.wait(POLL_S):
            if stop.is_set():
                request.decline()
                self._cancelled.emit(request)
                break
        return request.result or declined()

    @Slot(object)
    def _cancel(self, pending) -> None:
        if isinstance(pending, ResultRequest):
            pending.cancelled.emit()
        elif pending.card is not None:
            pending.card.cancel()

    @Slot(object)
    def _ask_result(self, request: ResultRequest) -> None:
        if not request.done.is_set():
            self.result_asked.emit(request)

    @Slot(object)
    def _show(self, pending: _Pending) -> None:
        if pending.cancelled:
            return
        card = ApprovalCard(pending.call, pending.tool)
        pending.show_in(card)
        card.decided.connect(pending.decide)
        self.card_shown.emit(card)
