"""Where the answer's thread waits for the user's decision on a call (the approval hook's
``ask`` of :func:`glmdesk.chat.mcp.source.approval_hook`), shown on the GUI thread as an
:class:`~glmdesk.ui.tools.approval_card.ApprovalCard`.

:meth:`ApprovalGate.ask` runs on the answer's thread: it asks the GUI thread (a queued
signal) for a card, then blocks until the card is decided or ``stop`` is set; Stop
denies and cancels the card, so nothing runs.
"""

from __future__ import annotations

import threading

from PySide6.QtCore import QObject, Qt, Signal, Slot

from glmdesk.chat.mcp.approvals import Decision, deny
from glmdesk.chat.mcp.hub import McpTool
from glmdesk.core.tools import ToolCall
from glmdesk.ui.tools.approval_card import ApprovalCard


class _Pending:
    def __init__(self, call: ToolCall, tool: McpTool | None) -> None:
        self.call, self.tool = call, tool
        self.done = threading.Event()
        self.decision: Decision | None = None
        self.card: ApprovalCard | None = None
        self.cancelled = False


class ApprovalGate(QObject):
    """Lives on the GUI thread.

    Args:
        stop: The answer's Stop (checked while waiting).

    Signals:
        card_shown(ApprovalCard): A card to place (the chat view puts it under the call).
    """

    card_shown = Signal(object)
    _asked = Signal(object)
    _cancelled = Signal(object)

    def __init__(self, stop: threading.Event, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.stop = stop
        self._asked.connect(self._show, Qt.ConnectionType.QueuedConnection)
        self._cancelled.connect(self._cancel, Qt.ConnectionType.QueuedConnection)

    def ask(self, call: ToolCall, tool: McpTool | None) -> Decision:
        """Block (on the answer's thread) until the user decides, or Stop denies."""
        pending = _Pending(call, tool)
        self._asked.emit(pending)
        while not pending.done.wait(0.05):
            if self.stop.is_set():
                pending.cancelled = True
                self._cancelled.emit(pending)
                return deny("The answer was stopped.")
        return pending.decision or deny()

    @Slot(object)
    def _cancel(self, pending: _Pending) -> None:
        if pending.card is not None:
            pending.card.cancel()

    @Slot(object)
    def _show(self, pending: _Pending) -> None:
        if pending.cancelled:
            return
        card = ApprovalCard(pending.call, pending.tool)
        pending.card = card

        def decided(decision: Decision) -> None:
            if pending.cancelled:
                return
            pending.decision = decision
            pending.done.set()

        card.decided.connect(decided)
        self.card_shown.emit(card)
