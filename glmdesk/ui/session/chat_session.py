"""The life of an answer, without widgets (GPT4All's ``Chat`` beside ``ChatLLM``).

:class:`ChatSession` is a non-visual QObject on the GUI thread. It owns the worker and
its thread, the open conversation (:class:`ChatState`), request ids, Stop and the one
buffer of the answer's text; its :class:`~glmdesk.ui.session.model_loader.ModelLoader`
(``session.loader``) owns the model in use and its loads. The session emits what the
chat view, status bar, gauge and history need; they connect to it (and to the loader)
themselves.

One rule: results of a request that is no longer the newest are ignored.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable

from PySide6.QtCore import QCoreApplication, QEvent, QObject, Qt, Signal, Slot

from glmdesk.chat.answer import exceeds_rounds
from glmdesk.chat.events import AnswerDone, AnswerFailed, AnswerFigures, StepFigures
from glmdesk.chat.reader import parts_of
from glmdesk.chat.tools import rounds_exceeded, unreadable_observations
from glmdesk.core.messages import ChatMessage
from glmdesk.core.parts import PartsSoFar, reasoning_of, text_of
from glmdesk.core.run_marker import begin_run, end_run
from glmdesk.core.settings import CacheSettings, ParamsBox
from glmdesk.core.tools import ToolCall, ToolSet, ToolSettings
from glmdesk.ui.session.conversation import AnswerRecord, ChatState, continued_answer
from glmdesk.ui.session.model_loader import ModelLoader
from glmdesk.ui.session.session_tools import ToolFlow
from glmdesk.ui.session.worker import Worker, start_thread, stop_thread

_QUEUED = Qt.ConnectionType.QueuedConnection


def model_label(info) -> str:
    """The model's name as the history records it; a remote model names its server's
    URL too (never its API key)."""
    if info is None:
        return ""
    return f"{info.name} @ {info.location}" if info.engine == "remote" else info.name


class ChatSession(ToolFlow, QObject):
    """One conversation with one model, answered on the worker thread.

    Args:
        params: The live sampling parameters (the sidebar swaps its value).
        backend: A loaded backend to use at first (tests); it is not closed by the session
            (see :class:`~glmdesk.ui.session.model_loader.ModelLoader`, built here as ``loader``).
        factory: ``factory(LoadSettings) -> Backend`` for loads (default: the engine's
            :func:`~glmdesk.engine.backends.create_backend`).
        options: ``options() -> {key: None or ErrorInfo}`` for Open model (default: the
            engine's :func:`~glmdesk.engine.backends.availability`).

    Signals (a load's are the loader's):
        message_added(int, ChatMessage, AnswerRecord | None): A user message was sent, or an
            answer finished (once, partial answers included); the int is its index.
        answer_started(int): Request ``id`` begins; it goes to the worker once every
            listener that held it (:meth:`hold_answer`) has released it.
        step_shown(int, tuple): The events of one step of the current request
            (:mod:`glmdesk.chat.events`; :func:`glmdesk.chat.reader.parts_of` gives its parts).
        answer_finished(int, AnswerDone | AnswerFailed): The current request ended
            (``last_answer`` holds its text and record).
        last_answer_removed(): Regenerate removed the newest answer.
        conversation_cleared(): New chat.
        conversation_replaced(list): The conversation was replaced (opened from history).
        conversation_rewound(int): Messages from this index on left the conversation (an
            edit or a regeneration of an earlier message makes a new branch from there).
        error_occurred(ErrorInfo): A failure outside a load or an answer.
        tool_call_requested(ToolCall): An answer ended with a call of an offered tool; it
            waits for :meth:`submit_tool_result`, :meth:`decline_tool_call` or (the
            interpreter) :meth:`run_tool_code`.
        code_started(): Interpreter code began running (on the worker thread).
        code_finished(object): Its :class:`~glmdesk.engine.tools.interpreter.RunResult`, or an
            ``ErrorInfo`` when the kernel could not start.
        tool_images_added(list, str): PNG images a tool returned, and the tool's name.
    """

    message_added = Signal(int, object, object)
    answer_started = Signal(int)
    step_shown = Signal(int, object)
    answer_finished = Signal(int, object)
    last_answer_removed = Signal()
    conversation_cleared = Signal()
    conversation_replaced = Signal(object)
    conversation_rewound = Signal(int)
    error_occurred = Signal(object)
    tool_call_requested = Signal(object)
    code_started = Signal()
    code_finished = Signal(object)
    tool_images_added = Signal(object, str)

    # To the worker (queued: the worker lives on its own thread).
    _generation_requested = Signal(int, object, object, object, object, object)
    _code_requested = Signal(int, object, str, float)

    def __init__(
        self, params: ParamsBox, backend=None, parent: QObject | None = None, factory=None, options=None
    ) -> None:
        super().__init__(parent)
        self.params_box = params
        self.state = ChatState()
        self.last_answer: tuple[str, AnswerRecord] | None = None
        self._request_id = 0
        self._current: int | None = None
        self._stop: threading.Event | None = None
        self._parts = PartsSoFar()  # the answer's typed parts (text, reasoning, calls)
        self._figures = AnswerFigures()  # the answer's newest figures
        self._offset = 0
        self._closed = False
        self._new_chats = 0
        #: Keys the KV cache the backend keeps between this conversation's turns.
        self.conversation_key: object = ("new", 0)
        self.tools = ToolSet()
        self.tool_settings = ToolSettings()
        self.pending_call: ToolCall | None = None
        self._queued_calls: list[ToolCall] = []  # the answer's further calls, asked in turn
        self._retold = 0  # answers since the question whose unreadable calls the model was told
        self.interpreter = None
        self._last_request: tuple[str, CacheSettings] = ("", CacheSettings())
        self._code_run = 0
        self._running_code: int | None = None
        self._resumed: tuple[str, AnswerRecord | None] | None = None  # Continue: the text and record so far
        self._holds = 0  # listeners of answer_started that hold the request (hold_answer)
        self._held: tuple = ()  # the request's arguments while it is held
        self._run_ids: dict[str, int | None] = {}  # the history's ids of the answer (for the marker)
        self._marker = None  # this process's "engine was generating" marker (core/run_marker.py)
        self._model_text: tuple[int, str, str] | None = None  # (index, question, what the model reads)

        self.worker = Worker(params, factory, options)
        self.thread = start_thread(self.worker)
        self.loader = ModelLoader(self.worker, backend, self)
        self.loader.load_started.connect(self.stop_answer)  # a new model: the answer stops first
        self._generation_requested.connect(self.worker.generate, _QUEUED)
        self._code_requested.connect(self.worker.run_code, _QUEUED)
        self.worker.code_finished.connect(self._on_code_finished, _QUEUED)
        self.worker.step_received.connect(self._on_step_received, _QUEUED)
        self.worker.error_occurred.connect(self.error_occurred, _QUEUED)

    # State ------------------------------------------------------------------------
    def events(self) -> list[threading.Event]:
        """The stop and cancel events in use (set on shutdown)."""
        return [e for e in (self._stop, self.loader.cancel_event) if e is not None]

    def is_streaming(self) -> bool:
        """True while an answer is being written."""
        return self._current is not None

    def is_ready(self) -> bool:
        """True when a model is in use and nothing loads (see :meth:`ModelLoader.is_ready`)."""
        return self.loader.is_ready()

    # Answers ------------------------------------------------------------------------
    def send(
        self,
        text: str,
        system_prompt: str,
        cache: CacheSettings,
        attachments: tuple = (),
        model_text: str | None = None,
        documents: tuple = (),
    ) -> bool:
        """Send ``text`` (with the images in ``attachments``, for a vision model) as the
        user's next message; False when it cannot go now.

        ``model_text``: what the model reads for this message instead of ``text`` (the
        question with its documents, :func:`glmdesk.documents.documents_for_turn`); the
        conversation and history keep ``text``. It stays this message's text for the model
        while the message is the conversation's latest question (regenerate, tool rounds).
        ``documents``: the :class:`~glmdesk.core.history_documents.DocumentUse` values it
        was given (history keeps their names, not their text).

        Refused while an answer is written, for blank text, and while no model is
        ready (the caller tells the user to wait).
        """
        if self._current is not None or not text.strip() or not self.is_ready():
            return False
        self.pending_call = None  # a call left waiting is answered by the new message
        self._queued_calls = []
        self._retold = 0  # answers since this message whose unreadable calls the model was told
        message = ChatMessage("user", text, attachments=tuple(attachments), documents=tuple(documents))
        index = self.state.add(message)
        self._model_text = (index, text, model_text) if model_text is not None else None
        self.message_added.emit(index, message, None)
        self._start_answer(system_prompt, cache)
        return True

    def regenerate(self, system_prompt: str, cache: CacheSettings) -> bool:
        """Write the last answer again; False when nothing can be regenerated now."""
        if self._current is not None or not self.is_ready():
            return False
        if self.state.last_role() == "assistant":
            self.state.pop()
            self.last_answer_removed.emit()
        if self.state.last_role() != "user":
            return False
        self._start_answer(system_prompt, cache)
        return True

    def can_continue(self) -> bool:
        """True when the last answer was cut by the length limit and the backend can continue it."""
        caps = self.loader.capabilities
        return self.state.continuable() and (caps is None or caps.continue_answers)

    def continue_answer(self, system_prompt: str, cache: CacheSettings) -> bool:
        """Continue the last answer where the length limit cut it, in the same message: the
        prompt ends with its text and the new text is appended (``message_added`` then
        carries the whole answer at the same index). False when it cannot continue now."""
        if self._current is not None or not self.is_ready() or not self.can_continue():
            return False
        self._resumed = (self.state.messages[-1].content, self.state.records[-1])
        self._start_answer(system_prompt, cache)
        return True

    def is_resuming(self) -> bool:
        """True while the answer being written continues the last answer (Continue)."""
        return self._resumed is not None

    def _start_answer(self, system_prompt: str, cache: CacheSettings) -> None:
        self._request_id += 1
        self._current = self._request_id
        self._stop = threading.Event()
        self._parts, self._figures = PartsSoFar(), AnswerFigures()
        self._last_request = (system_prompt, cache)
        messages, self._offset = self.state.request(system_prompt, self.offered_tools())
        if self._model_text is not None:  # the question as the model reads it (with its documents)
            index, text, model_text = self._model_text
            at = index + self._offset
            if at < len(messages) and messages[at].role == "user" and messages[at].content == text:
                messages = (
                    *messages[:at],
                    dataclasses.replace(messages[at], content=model_text),
                    *messages[at + 1 :],
                )
        self._holds, self._run_ids = 0, {}
        self._held = (self._current, self.loader.backend, messages, cache, self._stop, self.conversation_key)
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
        """The held request goes to the worker; this process's marker says an engine is
        generating until the answer ends (:mod:`glmdesk.core.run_marker`)."""
        request, self._held = self._held, ()
        if not request:
            return
        info = self.loader.model_info
        self._marker = begin_run(
            getattr(info, "engine", "") or "", model_label(info), "window", **self._run_ids
        )
        self._generation_requested.emit(*request)

    @Slot()
    def stop_answer(self) -> None:
        """Stop the answer being written (it ends within one token; the text is kept)."""
        if self._stop is not None and self._current is not None:
            self._stop.set()

    @Slot(int, object)
    def _on_step_received(self, request_id: int, events) -> None:
        if request_id != self._current:
            return  # a request the session has moved past
        for event in events:
            if isinstance(event, StepFigures):
                self._figures = event.figures
        self._parts.add(parts_of(events))  # the message's text and reasoning, saved together
        self.step_shown.emit(request_id, events)
        end = events[-1] if events else None
        if isinstance(end, (AnswerDone, AnswerFailed)):
            self._finish_answer(end)

    def _finish_answer(self, end: AnswerDone | AnswerFailed) -> None:
        request_id = self._current
        self._current = self._stop = None
        self._held = ()
        end_run(self._marker)
        self._marker = None
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
        if exceeds_rounds(self.state.messages, calls, self.tool_settings.max_rounds):
            notice = rounds_exceeded(self.tool_settings.max_rounds)
            record = dataclasses.replace(record, finish_reason="stop", notice=notice)
            end = dataclasses.replace(end, finish_reason="stop", calls=(), notice=notice)
            calls = ()
        resumed, self._resumed = self._resumed, None
        if resumed is not None:  # Continue: one answer, the old text and the new
            text, record = continued_answer(*resumed, text, record)
            reasoning = self.state.messages[-1].reasoning + reasoning
            self.state.pop()
        self.last_answer = (text, record)
        if calls:
            self._add_calls(calls, text, reasoning, record)
        elif text:
            index = self.state.add(ChatMessage("assistant", text, reasoning=reasoning), record)
            self.message_added.emit(index, self.state.messages[index], record)
        retold = () if calls or not text else self._retell(end)
        for message in retold:
            index = self.state.add(message)
            self.message_added.emit(index, message, None)
        self.answer_finished.emit(request_id, end)
        if calls:
            self._queued_calls = list(calls)
            self._ask_next_call()
        elif retold:  # the model reads why its calls could not be read, and writes them again
            self._start_answer(*self._last_request)

    def _retell(self, end: AnswerDone | AnswerFailed) -> tuple[ChatMessage, ...]:
        """The observations that tell the model its answer's calls could not be read
        (:func:`~glmdesk.chat.tools.unreadable_observations`), when tools are offered, Stop
        was not pressed and fewer than the tool-round limit were told since the question."""
        if (
            not isinstance(end, AnswerDone)
            or end.finish_reason == "cancelled"
            or self.offered_tools() is None
        ):
            return ()
        if self._retold >= self.tool_settings.max_rounds:
            return ()
        observations = unreadable_observations(end.notice)
        if observations:
            self._retold += 1
        return observations

    def abandon_answer(self) -> None:
        """End the current answer here with the text received so far (cancelled)."""
        if self._current is None:
            return
        if self._stop is not None:
            self._stop.set()
        self._finish_answer(AnswerDone("cancelled", self._figures, self._parts.parts()))

    # Conversations --------------------------------------------------------------------
    def new_chat(self) -> None:
        """Start an empty conversation (an answer being written is stopped and kept)."""
        self.abandon_answer()
        self._close_interpreter()
        self.state.clear()
        self._new_chats += 1
        self.conversation_key = ("new", self._new_chats)
        self.conversation_cleared.emit()

    def show_conversation(
        self, messages: list[ChatMessage], key: object = None, last_reason: str = "stop"
    ) -> None:
        """Replace the open conversation with ``messages`` (from the history).

        An answer being written is stopped first and kept in the conversation it
        belongs to (its ``message_added`` goes out before the switch). ``key`` names the
        conversation for the KV cache kept between turns (the history's id), so that
        switching back to it reuses its cache while the budget keeps it. ``last_reason``:
        the stored finish reason of the last answer (``length``: it can be continued).
        """
        self.abandon_answer()
        self._close_interpreter()
        self.state.clear()
        if key is None:
            self._new_chats += 1
            key = ("new", self._new_chats)
        self.conversation_key = key
        shown = [m for m in messages if m.role != "system"]
        for i, message in enumerate(shown):
            reason = last_reason if i == len(shown) - 1 else "stop"
            self.state.add(message, AnswerRecord(reason) if message.role == "assistant" else None)
        self.conversation_replaced.emit(shown)

    def rewind(self, index: int) -> bool:
        """Drop the messages from ``index`` on (then :meth:`send` an edited message, or
        :meth:`regenerate` the answer); False while an answer is written or for a bad index."""
        if self._current is not None or not 0 <= index < len(self.state):
            return False
        while len(self.state) > index:
            self.state.pop()
        self.conversation_rewound.emit(index)
        return True

    # Closing ------------------------------------------------------------------------
    def is_closed(self) -> bool:
        """True after :meth:`shutdown`."""
        return self._closed

    def shutdown(self) -> None:
        """Stop the answer (its text is kept), cancel loading, end the worker thread and
        close the backend. Idempotent."""
        if self._closed:
            return
        self._closed = True
        stop_thread(self.thread, self._stop, self.loader.cancel_event)
        # Deliver what the worker sent before it stopped (the final chunk of the answer).
        QCoreApplication.sendPostedEvents(self, QEvent.Type.MetaCall)
        self.abandon_answer()
        self.loader.close()
        if self.interpreter is not None:
            self.interpreter.close()
            self.interpreter = None
