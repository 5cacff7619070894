"""What an answer looks like on screen: the session's answer signals bound to the widgets.

:class:`AnswerView` is a GUI-thread QObject built with the
:class:`~glmdesk.ui.session.chat_session.ChatSession` and the widgets it drives (chat view,
input box, status bar, memory gauge, notice bar). It connects to the session itself:
a message added, an answer started, each chunk (reasoning, text, KV bytes, context
and cache figures), an answer finished (figures, notices, an empty message removed),
a conversation replaced, rewound or cleared.
"""

from __future__ import annotations

import time

from PySide6.QtCore import QObject, Slot

from glmdesk.chat.events import StepFigures, TextDelta
from glmdesk.chat.reader import parts_of
from glmdesk.core.messages import ChatMessage
from glmdesk.core.settings import ParamsBox
from glmdesk.ui.chat.answer_notes import AnswerNotes
from glmdesk.ui.common.messages import error_sentence
from glmdesk.ui.tools.tool_controller import show_stored


class AnswerView(QObject):
    """Shows the session's answers in the chat view and their figures around it.

    Args:
        session: The :class:`~glmdesk.ui.session.chat_session.ChatSession`.
        params_box: The live sampling parameters (``max_new_tokens``: a reply cut short
            by the context is told).
        chat_view, input_box, status, gauge, notice: The window's widgets
            (:class:`~glmdesk.ui.chat.chat_view.ChatView`, :class:`~glmdesk.ui.chat.input_box.InputBox`,
            :class:`~glmdesk.ui.app.status_bar.StatusBar`, :class:`~glmdesk.ui.sidebar.memory_gauge.MemoryGauge`,
            :class:`~glmdesk.ui.app.notice_bar.NoticeBar`).
        parent: The owning QObject (the window).
    """

    def __init__(
        self,
        session,
        params_box: ParamsBox,
        chat_view,
        input_box,
        status,
        gauge,
        notice,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.session, self.params_box = session, params_box
        self.chat_view, self.input_box, self.status = chat_view, input_box, status
        self.gauge, self.notice = gauge, notice
        self.notes = AnswerNotes(self)
        session.message_added.connect(self._on_message_added)
        session.answer_started.connect(self._on_answer_started)
        session.step_shown.connect(self._on_step_shown)
        session.answer_finished.connect(self._on_answer_finished)
        session.answer_ended.connect(self._on_answer_ended)
        session.conversation_replaced.connect(self._on_conversation_replaced)
        session.conversation_rewound.connect(self._on_conversation_rewound)
        session.conversation_cleared.connect(self._on_conversation_cleared)
        session.last_answer_removed.connect(self.chat_view.remove_last)
        session.error_occurred.connect(self._on_error_occurred)
        session.loader.model_ready.connect(self._on_model_ready)
        self._limit_note = ""  # the reply-limit sentence shown now, if any
        self._thinking_since: float | None = None  # when the answer's first reasoning showed (monotonic s)

    @Slot(int, object, object)
    def _on_message_added(self, _index: int, message: ChatMessage, _record) -> None:
        if message.role == "user":
            show_stored(self.chat_view, message)  # with its images' thumbnails
            self.chat_view.scroll_to_end()
            self.input_box.clear_text()
        elif message.role == "observation":  # a tool's result: its own block, as when reopened
            show_stored(self.chat_view, message)
            self.chat_view.scroll_to_end()

    @Slot(object)
    def _on_model_ready(self, _info) -> None:
        """Another model: the last reply-limit sentence was about the one before."""
        if self._limit_note and self.notice.text() == self._limit_note:
            self.notice.dismiss()
        self._limit_note = ""

    @Slot(int)
    def _on_answer_started(self, _request_id: int) -> None:
        self._thinking_since = None
        self.status.reset_answer_figures()
        self.notice.dismiss()
        self.chat_view.begin_stream(resume=self.session.is_resuming())
        self.input_box.set_streaming(True)

    @Slot(int, object)
    def _on_step_shown(self, _request_id: int, events) -> None:
        """A step's parts (reasoning, answer text, calls) go into the message being
        written; its figures into the gauge and the status bar."""
        self.chat_view.append_parts(parts_of(events))
        figures = next((e.figures for e in events if isinstance(e, StepFigures)), None)
        if figures is None:
            return
        self._note_thinking(figures, any(isinstance(e, TextDelta) for e in events))
        self.gauge.set_kv_bytes(figures.cache.kv_bytes + figures.kept_kv_bytes)
        self.status.show_context(figures.prompt_tokens + figures.n_generated)
        self.status.show_cache(figures.cache)

    @Slot(int, object)
    def _on_answer_finished(self, _request_id: int, end) -> None:
        text, record = self.session.last_answer
        widget = self.chat_view.finish_stream()
        self.input_box.set_streaming(self.session.is_streaming())  # a call may wait: Stop stays
        self.gauge.set_kv_bytes(self.session.loader.kept_kv_bytes())  # kept for the next turns
        most = self.params_box.get().max_new_tokens
        limit = end.figures.reply_limit
        if record.error is not None:
            self.notice.show_error(error_sentence(record.error))
        elif record.finish_reason == "length" and 0 < limit < most:
            # Cut short because the prompt left less room than max new tokens: say so
            # (not on every answer: GLM-4.5's defaults ask for the whole context).
            self._limit_note = self.notes.reply_limit(limit, most)
            self.notice.show_info(self._limit_note)
        if widget is not None:
            if text:
                widget.set_stats(self.notes.stats_text(record))
                if record.finish_reason == "repetition":
                    widget.set_note(self.notes.repetition())
            elif record.finish_reason != "tool_calls":  # a call's message holds its card
                self.chat_view.remove_last()  # nothing was written
                if record.finish_reason == "cancelled":
                    self.status.showMessage(self.tr("Stopped before the first token."), 5000)
        self.notes.mark_dropped(self.chat_view, self.status, record.dropped_messages)
        if record.n_tokens:
            self.status.show_speed(record.ttft_s, record.tokens_per_s)

    @Slot()
    def _on_answer_ended(self) -> None:
        self.input_box.set_streaming(False)

    def _note_thinking(self, figures, answered: bool) -> None:
        """The answer after a reasoning block began: its Thinking block collapses, with
        how long the model thought and the tokens it spent."""
        widget = self.chat_view.streaming_message()
        if widget is None or widget.reasoning_block.is_done():
            return
        thinking = bool(self.chat_view.stream_reasoning())
        if thinking and self._thinking_since is None:
            self._thinking_since = time.monotonic()  # timed here for a server that gives no times
        began = figures.answer_ttft_s  # 0 from a server that does not time it
        if began:
            widget.reasoning_block.set_done(began - figures.ttft_s, figures.reasoning_tokens)
        elif answered and thinking and self._thinking_since is not None:  # set above when thinking
            widget.reasoning_block.set_done(time.monotonic() - self._thinking_since)

    @Slot(object)
    def _on_conversation_replaced(self, messages: list) -> None:
        self.chat_view.clear()
        self.notice.dismiss()
        for message in messages:
            show_stored(self.chat_view, message)
        self.chat_view.scroll_to_end()

    @Slot(int)
    def _on_conversation_rewound(self, index: int) -> None:
        while len(self.chat_view.messages()) > index:
            self.chat_view.remove_last()

    @Slot()
    def _on_conversation_cleared(self) -> None:
        self.status.reset_answer_figures()
        self.chat_view.clear()
        self.notice.dismiss()

    @Slot(object)
    def _on_error_occurred(self, error) -> None:
        self.notice.show_error(error_sentence(error))
