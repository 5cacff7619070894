"""One answer of the window, from the request to its end: :class:`AnswerRun`.

The answer runs on the model's worker (:meth:`~glmdesk.ui.session.worker.Worker.generate`:
:func:`glmdesk.chat.answer.answer_steps`, its replies and the one tool loop between them).
:class:`AnswerRun` (GUI thread) sends the request once every listener that held it has
released it (the history stores the question first), keeps this process's run marker
(:mod:`glmdesk.core.run_marker`), accumulates each reply's parts from the worker's steps,
adds the reply (or its calls) and the tools' results to the conversation
(:class:`~glmdesk.ui.session.conversation.ChatState`) and says so in its signals; a reply
after tool results waits the same way (:class:`~glmdesk.ui.session.worker.ReplyHold`).

One rule: steps of a run that is no longer the newest are ignored.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from PySide6.QtCore import QObject, Qt, Signal, Slot

from glmdesk.chat.answer import call_messages
from glmdesk.chat.events import (
    AnswerDone,
    AnswerFailed,
    AnswerFigures,
    StepFigures,
    ToolResultReady,
    ToolsAnswered,
)
from glmdesk.chat.reader import parts_of
from glmdesk.core.messages import ChatMessage
from glmdesk.core.parts import PartsSoFar, reasoning_of, text_of
from glmdesk.core.run_marker import begin_run, end_run
from glmdesk.core.settings import CacheSettings, ParamsBox
from glmdesk.ui.session.answer_tools import AnswerTools
from glmdesk.ui.session.conversation import AnswerRecord, ChatState, continued_answer
from glmdesk.ui.session.model_loader import ModelLoader
from glmdesk.ui.session.worker import ReplyHold, Worker

_QUEUED = Qt.ConnectionType.QueuedConnection
#: The held "request" of a reply after tool results: the run goes on once it is released.
_NEXT_REPLY = ("next reply",)


def _dialect(info) -> str:
    """How the loaded model reads interpreter output (``glm4`` when unknown)."""
    if info is None:
        return "glm4"
    from glmdesk.engine.families import loaded_tool_dialect

    return loaded_tool_dialect(info) or "glm4"


def model_label(info) -> str:
    """The model's name as the history records it; a remote model names its server's
    URL too (never its API key)."""
    if info is None:
        return ""
    return f"{info.name} @ {info.location}" if info.engine == "remote" else info.name


class AnswerRun(QObject):
    """The open conversation's answers, one at a time (see the module docstring).

    Args:
        worker: The model's worker (its thread runs the answer).
        loader: The model in use (backend, capabilities, info).
        state: The open conversation (replies and results are added to it).
        params: The live sampling parameters (recorded with each reply).
        tools: The conversation's tools (how the answer answers calls).
        parent: The owner (the session).

    Signals: ``message_added``, ``answer_started``, ``step_shown``, ``answer_finished``,
    ``answer_ended``, ``tool_answered``, ``tool_images_added``, ``tools_noted``, as
    :class:`~glmdesk.ui.session.chat_session.ChatSession` relays them.
    """

    message_added = Signal(int, object, object)
    answer_started = Signal(int)
    step_shown = Signal(int, object)
    answer_finished = Signal(int, object)
    answer_ended = Signal()
    tool_answered = Signal(object, object)
    tool_images_added = Signal(object, str)
    tools_noted = Signal(object)

    # To the worker (queued: the worker lives on its own thread).
    _generation_requested = Signal(int, object, object, object, object, object, object, object)

    def __init__(
        self,
        worker: Worker,
        loader: ModelLoader,
        state: ChatState,
        params: ParamsBox,
        tools: AnswerTools,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.loader, self.state, self.params_box, self.tools = loader, state, params, tools
        self.last_answer: tuple[str, AnswerRecord] | None = None
        self._request_id = 0
        self._current: int | None = None  # the reply being written
        self._run: int | None = None  # the answer's run on the worker (its first reply's id)
        self._stop: threading.Event | None = None
        self._parts = PartsSoFar()  # the reply's typed parts (text, reasoning, calls)
        self._figures = AnswerFigures()  # the reply's newest figures
        self._offset = 0
        self._resumed: tuple[str, AnswerRecord | None] | None = None  # Continue: the text and record so far
        self._holds = 0  # listeners of answer_started that hold the request (hold_answer)
        self._held: tuple = ()  # the request's arguments while it is held
        self._reply_hold = ReplyHold()  # the run's replies after the first wait here
        self._run_ids: dict[str, int | None] = {}  # the history's ids of the answer (for the marker)
        self._marker = None  # this process's "engine was generating" marker (core/run_marker.py)
        self._generation_requested.connect(worker.generate, _QUEUED)
        worker.step_received.connect(self._on_step_received, _QUEUED)
        worker.tools_noted.connect(self._on_tools_noted, _QUEUED)

    def is_running(self) -> bool:
        """True while an answer runs (a reply is written, or a call waits or runs)."""
        return self._run is not None

    def is_resuming(self) -> bool:
        """True while the answer being written continues the last answer (Continue)."""
        return self._resumed is not None

    def stop_event(self) -> threading.Event | None:
        """The running answer's Stop, or ``None``."""
        return self._stop

    def start(
        self,
        messages: tuple[ChatMessage, ...],
        offset: int,
        cache: CacheSettings,
        conversation: object,
        resumed: tuple[str, AnswerRecord | None] | None = None,
    ) -> None:
        """Start an answer to ``messages`` (the request as the model reads it; ``offset``:
        messages before the conversation's first, the system prompt). ``conversation``
        keys the backend's KV cache; ``resumed``: Continue's text and record so far.
        ``answer_started`` goes out at once; the request goes to the worker once every
        listener that held it has released it."""
        self._request_id += 1
        self._current = self._run = self._request_id
        self._stop = threading.Event()
        self._parts, self._figures = PartsSoFar(), AnswerFigures()
        self._offset, self._resumed = offset, resumed
        caps, info = self.loader.capabilities, self.loader.model_info
        backend = self.loader.backend
        run_tools = self.tools.for_run(
            self._stop,
            _dialect(info),
            bool(caps is not None and caps.tool_calls),
            backend.prompt_tokens if backend is not None else None,
            caps.context_length if caps is not None else 0,
        )
        self._holds, self._run_ids = 0, {}
        self._reply_hold = ReplyHold()
        self._held = (
            self._current,
            self.loader.backend,
            messages,
            cache,
            self._stop,
            conversation,
            run_tools,
            self._reply_hold,
        )
        self.answer_started.emit(self._current)
        if self._holds == 0:
            self._send_request()

    def hold_answer(self) -> Callable[..., None]:
        """Keep the answer that ``answer_started`` announces from the engine until the
        returned ``release(conversation_id=None, message_id=None)`` is called (the history
        holds it until its question is stored, so a crash of the engine cannot lose the
        question). Call it from a slot of ``answer_started``; ``release`` may be called
        once, later, on the GUI thread (further calls, and a call after the answer ended,
        do nothing); the ids it is given go into the answer's run marker."""
        request_id, released = self._current, []
        self._holds += 1

        def release(conversation_id: int | None = None, message_id: int | None = None) -> None:
            if released or request_id != self._current:
                return
            released.append(True)
            self._run_ids.update(conversation_id=conversation_id, message_id=message_id)
            self._holds -= 1
            if self._holds == 0:
                self._send_request()

        return release

    def _send_request(self) -> None:
        """The held request goes to the worker (a later reply of the run: the worker's
        :class:`ReplyHold` lets it start); this process's marker says an engine is
        generating, and which message, until the answer ends (:mod:`glmdesk.core.run_marker`)."""
        request, self._held = self._held, ()
        if not request:
            return
        info = self.loader.model_info
        end_run(self._marker)
        self._marker = begin_run(
            getattr(info, "engine", "") or "", model_label(info), "window", **self._run_ids
        )
        if request == _NEXT_REPLY:
            self._reply_hold.release()
        else:
            self._generation_requested.emit(*request)

    @Slot()
    def stop(self) -> None:
        """Stop the answer (a reply ends within one token, its text kept; a call that
        waits for the user is not run; running code is killed)."""
        if self._stop is not None and self._run is not None:
            self._stop.set()
            self.tools.kill_code()

    @Slot(int, object)
    def _on_tools_noted(self, request_id: int, note) -> None:
        if request_id == self._run:
            self.tools_noted.emit(note)

    @Slot(int, object, bool)
    def _on_step_received(self, request_id: int, events, last: bool) -> None:
        if request_id != self._run:
            return  # a request the session has moved past
        if last:  # the answer ends with this step: not streaming for its listeners
            self._run = None
        head = events[0] if events else None
        if isinstance(head, ToolResultReady):
            self.tool_answered.emit(head.call, head.result)
        elif isinstance(head, ToolsAnswered):
            self._on_tools_answered(head)
        elif events and self._current is not None:
            self._on_reply_step(events)
        if last:
            self._end_run()

    def _on_reply_step(self, events) -> None:
        for event in events:
            if isinstance(event, StepFigures):
                self._figures = event.figures
        self._parts.add(parts_of(events))  # the message's text and reasoning, saved together
        self.step_shown.emit(self._current, events)
        end = events[-1] if events else None
        if isinstance(end, (AnswerDone, AnswerFailed)):
            self._finish_reply(end)

    def _on_tools_answered(self, answered: ToolsAnswered) -> None:
        """The calls' results (or why unreadable calls were not run) join the
        conversation; the next reply of the same run begins, unless Stop ended it."""
        for message in answered.messages:
            if message.role != "observation":
                continue  # the calls (or the unreadable reply) were added when the reply ended
            index = self.state.add(message)
            self.message_added.emit(index, message, None)
            if message.images:
                self.tool_images_added.emit(list(message.images), message.name)
        if self._run is None or (self._stop is not None and self._stop.is_set()):
            return
        self._request_id += 1
        self._current = self._request_id
        self._parts, self._figures = PartsSoFar(), AnswerFigures()
        self._holds, self._run_ids, self._held = 0, {}, _NEXT_REPLY
        self.answer_started.emit(self._current)
        if self._holds == 0:
            self._send_request()

    def _end_run(self) -> None:
        """The answer's run ended: a reply still open ends as stopped, then ``answer_ended``."""
        self._run = None
        if self._current is not None:  # Stop before the reply wrote its end
            self._finish_reply(AnswerDone("cancelled", self._figures, self._parts.parts()))
        self._stop, self._held = None, ()
        end_run(self._marker)
        self._marker = None
        self.answer_ended.emit()

    def _finish_reply(self, end: AnswerDone | AnswerFailed) -> None:
        request_id = self._current
        self._current = None
        parts = self._parts.parts()
        text, reasoning = text_of(parts), reasoning_of(parts)
        f = end.figures
        record = AnswerRecord(
            finish_reason=end.finish_reason,
            model=model_label(self.loader.model_info),
            params=self.params_box.get(),
            ttft_s=f.ttft_s,
            answer_ttft_s=f.answer_ttft_s,
            reasoning_tokens=f.reasoning_tokens,
            tokens_per_s=f.tokens_per_s,
            n_tokens=f.n_generated,
            prompt_tokens=f.prompt_tokens,
            dropped_messages=tuple(i - self._offset for i in f.dropped_messages if i >= self._offset),
            error=end.error if isinstance(end, AnswerFailed) else None,
            notice=end.notice if isinstance(end, AnswerDone) else None,
        )
        calls = end.calls if isinstance(end, AnswerDone) and end.finish_reason == "tool_calls" else ()
        resumed, self._resumed = self._resumed, None
        if resumed is not None:  # Continue: one answer, the old text and the new
            text, record = continued_answer(*resumed, text, record)
            reasoning = self.state.messages[-1].reasoning + reasoning
            self.state.pop()
        self.last_answer = (text, record)
        if calls:  # as the run feeds them back (call_messages), the record on the first
            for k, message in enumerate(call_messages(calls, text, reasoning)):
                index = self.state.add(message, record if k == 0 else None)
                self.message_added.emit(index, message, record if k == 0 else None)
        elif text:
            index = self.state.add(ChatMessage("assistant", text, reasoning=reasoning), record)
            self.message_added.emit(index, self.state.messages[index], record)
        self.answer_finished.emit(request_id, end)

    def abandon(self) -> None:
        """End the current answer here with the text received so far (cancelled); a call
        that waits is not run."""
        if self._run is None:
            return
        if self._stop is not None:
            self._stop.set()
        self.tools.kill_code()
        self._end_run()
