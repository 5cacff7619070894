"""Connects the session's tool calls to the Tools section and the chat's cards (GUI thread)."""

from __future__ import annotations

import dataclasses

from PySide6.QtCore import QObject, Slot

from glmdesk.chat.events import AnswerDone, ToolCallDropped, ToolCallParsed
from glmdesk.core.errors import ErrorInfo
from glmdesk.core.messages import call_of, message_parts
from glmdesk.core.parts import ToolCallPart
from glmdesk.core.tools import ToolCall, ToolSet, ToolSettings
from glmdesk.ui.chat.image_thumbnails import ThumbnailRow
from glmdesk.ui.chat.message_widget import MessageWidget
from glmdesk.ui.chat.text_safety import clean_parts
from glmdesk.ui.common.messages import error_sentence
from glmdesk.ui.tools.tool_call_card import ToolCallCard


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
    """Tools section -> session; session's calls -> cards; cards' buttons -> session.

    A message asks for a card for each :class:`~glmdesk.core.parts.ToolCallPart` it shows
    (``ChatView.call_added``): a call being written gets a live card, which grows with
    the call's parts (the card's ``show_part``) and becomes the finished card when the
    answer ends with the call, or goes when the call ends as text (not parsed, Stop,
    length: the answer run's ``ToolCallDropped``); a reopened call gets its
    answered card. Several calls of one answer (GLM-4.5) each keep their card, asked in
    the order written.

    Args:
        session: The :class:`~glmdesk.ui.session.chat_session.ChatSession`.
        chat_view: Where cards go.
        panel: The sidebar's :class:`~glmdesk.ui.tools.tools_panel.ToolsPanel`.
        notice: The window's notice bar (notes about calls shown as text).
        parent: The window.
    """

    def __init__(self, session, chat_view, panel, notice, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.session, self.chat_view, self.panel, self.notice = session, chat_view, panel, notice
        self.card: ToolCallCard | None = None
        self.live: ToolCallCard | None = None  # the call being written in the answer that streams
        self.written: list[ToolCallCard] = []  # calls of that answer already written (GLM-4.5: several)
        panel.tools_changed.connect(self._on_tools_changed)
        session.loader.model_ready.connect(self._on_model_ready)
        session.tool_call_requested.connect(self._on_tool_call_requested)
        session.step_shown.connect(self._on_step_shown)
        chat_view.call_added.connect(self._on_call_added)
        session.code_started.connect(self._on_code_started)
        session.code_finished.connect(self._on_code_finished)
        session.answer_finished.connect(self._on_answer_finished)
        panel.set_available(False, self.tr("Load a model first."))

    @Slot(object, object)
    def _on_tools_changed(self, tools: ToolSet, settings: ToolSettings) -> None:
        self.session.set_tools(
            tools, dataclasses.replace(settings, memory_mib=self.session.tool_settings.memory_mib)
        )
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
        self.session.set_tools(self.panel.toolset(), self.panel.tool_settings())
        self._update_note()

    def _add_card(self, call: ToolCall, done: bool = False) -> ToolCallCard:
        card = ToolCallCard(call)
        self.chat_view.add_card(
            card, under=self.chat_view.messages()[-1] if self.chat_view.messages() else None
        )
        if done:
            card.set_done()
        return card

    @Slot(object, int, object)
    def _on_call_added(self, widget: MessageWidget, index: int, part: ToolCallPart) -> None:
        """A message shows a call without a card: a reopened call gets its answered card,
        a call being written its live card (a call already parsed is one of the answer's
        written calls, asked in turn)."""
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
        """A call that parsed while the answer goes on keeps its card (a next call gets its
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

    @Slot(object)
    def _on_tool_call_requested(self, call: ToolCall) -> None:
        if self.written:  # the answer's calls, asked in the order written
            card = self.written.pop(0)
        else:
            card, self.live = self.live, None
        if card is not None:  # the live card becomes the finished one
            card.set_call(call)
        else:
            card = self._add_card(call)
        card.result_submitted.connect(self.session.submit_tool_result)
        card.declined.connect(self.session.decline_tool_call)
        card.run_requested.connect(self.session.run_tool_code)
        card.kill_requested.connect(self.session.kill_code)
        self.card = card
        self.chat_view.scroll_to_end()

    @Slot()
    def _on_code_started(self) -> None:
        if self.card is not None:
            self.card.set_running(True)

    @Slot(object)
    def _on_code_finished(self, result) -> None:
        if self.card is None:
            return
        if isinstance(result, ErrorInfo):
            self.card.set_running(False)
            return
        self.card.set_done()  # the output follows as the observation block

    @Slot(int, object)
    def _on_answer_finished(self, _request_id: int, end) -> None:
        calls = end.calls if isinstance(end, AnswerDone) and end.finish_reason == "tool_calls" else ()
        if not calls:
            self._drop_live(
                written=True
            )  # no call to answer: the text (if any) and the note say what happened
        else:
            if self.live is not None:  # the last call's card: asked after the others
                self.written.append(self.live)
                self.live = None
            for card, call in zip(self.written[1:], calls[1:], strict=False):
                card.set_queued(call)
        notice = getattr(end, "notice", None)
        if notice is not None:
            self.notice.show_info(error_sentence(notice))
