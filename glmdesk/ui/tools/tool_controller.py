"""Connects the Tools section to the session, and the answer's tool calls to the chat's
cards and the cards' approvals to the waiting call (GUI thread)."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Slot

from glmdesk.chat.events import AnswerDone, ToolCallDropped, ToolCallParsed
from glmdesk.core.messages import call_of, message_parts
from glmdesk.core.parts import ToolCallPart
from glmdesk.core.tools import ToolCall, ToolSet, ToolSettings
from glmdesk.ui.chat.image_thumbnails import ThumbnailRow
from glmdesk.ui.chat.message_widget import MessageWidget
from glmdesk.ui.chat.text_safety import clean_parts
from glmdesk.ui.common.messages import error_sentence
from glmdesk.ui.session.answer_tools import ToolsNote
from glmdesk.ui.tools.approval_card import ApprovalCard
from glmdesk.ui.tools.approval_gate import ResultRequest
from glmdesk.ui.tools.mcp_choice import McpChoiceList
from glmdesk.ui.tools.tool_call_card import ToolCallCard

if TYPE_CHECKING:  # the types of the constructor's collaborators only
    from glmdesk.ui.app.notice_bar import NoticeBar
    from glmdesk.ui.chat.chat_view import ChatView
    from glmdesk.ui.session.chat_session import ChatSession
    from glmdesk.ui.tools.tools_panel import ToolsPanel


def stored_card(part: ToolCallPart) -> ToolCallCard | None:
    """The card of a reopened (answered) call: its name and arguments, no buttons;
    ``None`` for a part that is not a whole call."""
    if not part.done:
        return None
    try:
        card = ToolCallCard(call_of(part))
    except ValueError:
        return None
    card.set_done()
    return card


def show_stored(chat_view, message) -> MessageWidget:
    """Add a stored message (a reopened conversation) to ``chat_view`` as it looked while
    streaming: its parts (:func:`~glmdesk.core.messages.message_parts`: reasoning
    collapsed above the text, a tool call as its answered card, given by the
    :class:`ToolController` as for a live call, an observation as its own block with the
    tool's images), a user message with its attached images' thumbnails under its text.

    Args:
        chat_view: The :class:`~glmdesk.ui.chat.chat_view.ChatView`.
        message: A :class:`~glmdesk.core.messages.ChatMessage`.

    Returns:
        The message's widget (one per message, so indices match the conversation).
    """
    widget = chat_view.add_message(message.role)
    widget.show_parts(clean_parts(message_parts(message)))  # a call's card: ToolController
    if message.reasoning:  # the figures come with the stored statistics
        widget.reasoning_block.set_done()
    if message.attachments:  # a user's images: thumbnails, click to view
        widget.attach(ThumbnailRow(message.attachments))
    return widget


class ToolController(QObject):
    """Tools section -> session; the answer's calls -> cards; cards -> the waiting call.

    A message asks for a card for each :class:`~glmdesk.core.parts.ToolCallPart` it shows
    (``ChatView.call_added``): a call being written gets a live card, which grows with
    the call's parts (the card's ``show_part``) and becomes the finished card when the
    reply ends with the call, or goes when the call ends as text (not parsed, Stop,
    length: the answer run's ``ToolCallDropped``); a reopened call gets its answered
    card. Several calls of one reply (GLM-4.5) each keep their card.

    The answer's tool loop then asks about each call in turn through the session's
    :class:`~glmdesk.ui.tools.approval_gate.ApprovalGate`: an approval card goes inside
    the call's card, a custom function's card asks for the typed result; a call that
    runs shows "running..." (code: a Stop that kills it), an answered one its result
    below (the observation block).

    Args:
        session: The :class:`~glmdesk.ui.session.chat_session.ChatSession`.
        chat_view: Where cards go.
        panel: The sidebar's :class:`~glmdesk.ui.tools.tools_panel.ToolsPanel`.
        notice: The window's notice bar (notes about calls shown as text).
        parent: The window.
    """

    def __init__(
        self,
        session: ChatSession,
        chat_view: ChatView,
        panel: ToolsPanel,
        notice: NoticeBar,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.session, self.chat_view, self.panel, self.notice = session, chat_view, panel, notice
        self.tools = session.tools  # the conversation's tools and the gate their calls wait at
        self.live: ToolCallCard | None = None  # the call being written in the reply that streams
        self.written: list[ToolCallCard] = []  # calls of that reply already written (GLM-4.5: several)
        self.asked: list[tuple[ToolCall, ToolCallCard]] = []  # the reply's calls, until answered
        panel.tools_changed.connect(self._on_tools_changed)
        session.loader.model_ready.connect(self._on_model_ready)
        session.step_shown.connect(self._on_step_shown)
        chat_view.call_added.connect(self._on_call_added)
        session.answer_finished.connect(self._on_answer_finished)
        session.tool_answered.connect(self._on_tool_answered)
        gate = self.tools.gate
        gate.card_shown.connect(self._on_approval_shown)
        gate.result_asked.connect(self._on_result_asked)
        gate.call_started.connect(self._on_call_started)
        session.tools_noted.connect(self._on_tools_noted)
        #: The chat's MCP servers and tools in the Tools section (``None``: no MCP).
        self.mcp_list = McpChoiceList(self.tools.mcp) if self.tools.mcp is not None else None
        if self.mcp_list is not None:
            panel.add_mcp_list(self.mcp_list)
        panel.set_available(False, self.tr("Load a model first."))

    @Slot(object, object)
    def _on_tools_changed(self, tools: ToolSet, settings: ToolSettings) -> None:
        self.tools.set_tools(tools, dataclasses.replace(settings, memory_mib=self.tools.settings.memory_mib))
        self._update_note()

    def _update_note(self) -> None:
        """The code interpreter has no OpenAI form: a server is offered nothing for it."""
        info = self.session.loader.model_info
        remote = info is not None and info.engine == "remote"
        interpreter = self.panel.current_mode() == "interpreter"
        self.panel.set_note(
            self.tr(
                "The code interpreter runs only with a local model: a server is not offered it "
                "(it has no OpenAI form). Custom functions are sent to the server."
            )
            if remote and interpreter
            else ""
        )

    @Slot(object)
    def _on_model_ready(self, info) -> None:
        capabilities = self.session.loader.capabilities
        available = bool(capabilities is not None and capabilities.tool_calls)
        reason = self.tr("{model} has no tool-call format (ChatGLM3 and GLM-4 have one).").format(
            model=info.name
        )
        self.panel.set_available(available, reason)
        self.tools.set_tools(self.panel.toolset(), self.panel.tool_settings())
        self._update_note()

    def _add_card(self, call: ToolCall) -> ToolCallCard:
        card = ToolCallCard(call)
        self.chat_view.add_card(
            card, under=self.chat_view.messages()[-1] if self.chat_view.messages() else None
        )
        return card

    @Slot(object, int, object)
    def _on_call_added(self, widget: MessageWidget, index: int, part: ToolCallPart) -> None:
        """A message shows a call without a card: a reopened call gets its answered card,
        a call being written its live card (a call already parsed is one of the reply's
        written calls)."""
        if not widget.is_streaming():
            card = stored_card(part)
        else:
            card = ToolCallCard(pending=part.name)
            card.show_part(part)
            if part.done:
                self.written.append(card)
            else:
                self.live = card
        if card is not None:
            widget.set_call_card(index, card)

    @Slot(int, object)
    def _on_step_shown(self, _request_id: int, events) -> None:
        """A call that parsed while the reply goes on keeps its card (a next call gets its
        own); a call released as text (it did not parse) takes its card away."""
        for event in events:
            if self.live is None:
                return
            if isinstance(event, ToolCallParsed):
                self.written.append(self.live)
                self.live = None
            elif isinstance(event, ToolCallDropped):
                self._drop_live()

    def _drop_live(self, written: bool = False) -> None:
        cards, self.live = [self.live], None
        if written:
            cards, self.written = cards + self.written, []
        for card in cards:
            if card is not None:
                self.chat_view.remove_card(card)

    @Slot(int, object)
    def _on_answer_finished(self, _request_id: int, end) -> None:
        calls = end.calls if isinstance(end, AnswerDone) and end.finish_reason == "tool_calls" else ()
        if not calls:
            self._drop_live(
                written=True
            )  # no call to answer: the text (if any) and the note say what happened
        else:
            cards = self.written + ([self.live] if self.live is not None else [])
            self.written, self.live = [], None
            self.asked = []
            for k, call in enumerate(calls):
                card = cards[k] if k < len(cards) else self._add_card(call)
                if k == 0:
                    card.set_call(call)  # the live card becomes the finished one
                else:
                    card.set_queued(call)
                card.kill_requested.connect(self.session.kill_code)
                self.asked.append((call, card))
            for extra in cards[len(calls) :]:
                self.chat_view.remove_card(extra)
            self.chat_view.scroll_to_end()
        notice = getattr(end, "notice", None)
        if notice is not None:
            self.notice.show_info(error_sentence(notice))

    def _card_for(self, call: ToolCall) -> ToolCallCard:
        """The card of ``call``, one of the reply's calls (a card is added if it has none)."""
        card = next((card for c, card in self.asked if c == call), None)
        if card is None:
            card = self._add_card(call)
            card.kill_requested.connect(self.session.kill_code)
            self.asked.append((call, card))
        return card

    @Slot(object)
    def _on_tools_noted(self, note: ToolsNote) -> None:
        """Servers that could not start, and a tool list that takes much of the context."""
        sentences = list(note.unavailable)
        if note.too_large():
            sentences.append(
                self.tr(
                    "The tools' descriptions take about {tokens} tokens, {share} of the {context}-token "
                    "context; turn off servers or tools this chat does not need."
                ).format(
                    tokens=f"{note.tokens:,}",
                    share=f"{note.tokens / note.context_tokens:.0%}",
                    context=f"{note.context_tokens:,}",
                )
            )
        if sentences:
            self.notice.show_info(" ".join(sentences))
        if self.mcp_list is not None:
            self.mcp_list.listen()  # the servers started: their tools can be listed

    @Slot(object)
    def _on_approval_shown(self, approval: ApprovalCard) -> None:
        """A call waits for Allow once / Always allow / Deny: its approval card goes into
        the call's card."""
        self._card_for(approval.call).show_approval(approval)
        self.chat_view.scroll_to_end()

    @Slot(object)
    def _on_result_asked(self, request: ResultRequest) -> None:
        """A custom function's call waits for the result the user types."""
        card = self._card_for(request.call)
        card.ask_result()
        card.result_submitted.connect(request.submit)
        card.declined.connect(request.decline)
        request.cancelled.connect(card.set_done)
        self.chat_view.scroll_to_end()

    @Slot(object)
    def _on_call_started(self, call: ToolCall) -> None:
        self._card_for(call).set_running(True)

    @Slot(object, object)
    def _on_tool_answered(self, call: ToolCall, _result) -> None:
        """The call ran or was declined: no more buttons (its result shows as the
        observation block under the card)."""
        for k, (c, card) in enumerate(self.asked):
            if c == call:
                card.set_done()
                del self.asked[k]
                return
