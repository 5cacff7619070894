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


class _TypedWait:
    """A custom function's call waiting for a typed result: asked on the answer's thread,
    answered on the GUI's (plain data: no Qt object is made or dropped on the answer's
    thread)."""

    def __init__(self, call: ToolCall) -> None:
        self.call = call
        self.done = threading.Event()
        self.result: ToolResult | None = None
        self.request: ResultRequest | None = None  # set on the GUI thread

    def answer(self, result: ToolResult) -> None:
        if not self.done.is_set():
            self.result = result
            self.done.set()


class ResultRequest(QObject):
    """A custom function's call waiting for the result the user types (GUI thread).

    Signals:
        cancelled(): Stop ended the wait; the card's buttons go.
    """

    cancelled = Signal()

    def __init__(self, wait: _TypedWait, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.call = wait.call
        self._wait = wait

    @property
    def done(self) -> threading.Event:
        """Set once the result is given (or declined)."""
        return self._wait.done

    @property
    def result(self) -> ToolResult | None:
        """The result given, ``None`` until then."""
        return self._wait.result

    @Slot(str)
    def submit(self, content: str) -> None:
        """The user's result (the observation the model reads)."""
        self._wait.answer(ToolResult(content))

    @Slot()
    def decline(self) -> None:
        """The user declined: the model reads :data:`~glmdesk.chat.tools.DECLINED`."""
        self._wait.answer(declined())


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
        wait = _TypedWait(call)
        self._result_asked.emit(wait)
        while not wait.done.wait(POLL_S):
            if stop.is_set():
                wait.answer(declined())
                self._cancelled.emit(wait)
                break
        return wait.result or declined()

    @Slot(object)
    def _cancel(self, pending) -> None:
        if isinstance(pending, _TypedWait):
            if pending.request is not None:
                pending.request.cancelled.emit()
        elif pending.card is not None:
            pending.card.cancel()

    @Slot(object)
    def _ask_result(self, wait: _TypedWait) -> None:
        if not wait.done.is_set():
            wait.request = ResultRequest(wait, self)  # made and kept on the GUI thread
            self.result_asked.emit(wait.request)

    @Slot(object)
    def _show(self, pending: _Pending) -> None:
        if pending.cancelled:
            return
        card = ApprovalCard(pending.call, pending.tool)
        pending.show_in(card)
        card.decided.connect(pending.decide)
        self.card_shown.emit(card)
