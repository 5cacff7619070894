"""The life of an answer, without widgets (GPT4All's ``Chat`` beside ``ChatLLM``).

:class:`ChatSession` is a non-visual QObject on the GUI thread. It owns the worker and
its thread, the open conversation (:class:`ChatState`), request ids, Stop and the one
buffer of the answer's text; its :class:`~glmdesk.ui.session.model_loader.ModelLoader`
(``session.loader``) owns the model in use and its loads. The session emits what the
chat view, status bar, gauge and history need; they connect to it (and to the loader)
themselves.

One answer is one run of :func:`glmdesk.chat.answer.answer_steps` on the worker: its
replies and, between them, the one tool loop (each call approved in its card through
:class:`~glmdesk.ui.session.answer_tools.AnswerTools`, run on the worker thread, its
result fed back). The session shows each reply as before (``answer_started``, its steps,
``answer_finished``) and the answer's end once (``answer_ended``).

One rule: results of a request that is no longer the newest are ignored.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable

from PySide6.QtCore import QCoreApplication, QEvent, QObject, Qt, Signal, Slot

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
from glmdesk.core.tools import ToolSet
from glmdesk.ui.session.answer_tools import AnswerTools
from glmdesk.ui.session.conversation import AnswerRecord, ChatState, continued_answer
from glmdesk.ui.session.model_loader import ModelLoader
from glmdesk.ui.session.worker import ReplyHold, Worker, start_thread, stop_thread

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


class ChatSession(QObject):
    """One conversation with one model, answered on the worker thread.

    Args:
        params: The live sampling parameters (the sidebar swaps its value).
        backend: A loaded backend to use at first (tests); it is not closed by the session
            (see :class:`~glmdesk.ui.session.model_loader.ModelLoader`, built here as ``loader``).
        factory: ``factory(LoadSettings) -> Backend`` for loads (default: the engine's
            :func:`~glmdesk.engine.backends.create_backend`).
        options: ``options() -> {key: None or ErrorInfo}`` for Open model (default: the
            engine's :func:`~glmdesk.engine.backends.availability`).
        tools: The conversation's tools and their approvals (default: built here, with
            the approvals kept in the config folder and no MCP servers).

    Signals (a load's are the loader's):
        message_added(int, ChatMessage, AnswerRecord | None): A user message was sent, or an
            answer finished (once, partial answers included); the int is its index.
        answer_started(int): Reply ``id`` begins. The answer's first reply goes to the
            worker once every listener that held it (:meth:`hold_answer`) has released
            it; a reply after tool results continues the same run.
        step_shown(int, tuple): The events of one step of the current reply
            (:mod:`glmdesk.chat.events`; :func:`glmdesk.chat.reader.parts_of` gives its parts).
        answer_finished(int, AnswerDone | AnswerFailed): The current reply ended
            (``last_answer`` holds its text and record). A reply that ends with calls is
            followed by their results and the next reply, unless Stop ends the answer.
        answer_ended(): The whole answer ended (after its last reply, or after Stop while
            a call waited or ran); :meth:`is_streaming` is False from here.
        tool_answered(ToolCall, ToolResult): A call of the answer was run or declined
            (the observation follows as ``message_added``).
        tools_noted(ToolsNote): What to tell the user about the answer's MCP tools (their
            tokens against the context, servers that could not start).
        last_answer_removed(): Regenerate removed the newest answer.
        conversation_cleared(): New chat.
        conversation_replaced(list): The conversation was replaced (opened from history).
        conversation_rewound(int): Messages from this index on left the conversation (an
            edit or a regeneration of an earlier message makes a new branch from there).
        error_occurred(ErrorInfo): A failure outside a load or an answer.
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
    tool_images_added = Signal(object, str)
    answer_ended = Signal()
    tool_answered = Signal(object, object)
    tools_noted = Signal(object)

    # To the worker (queued: the worker lives on its own thread).
    _generation_requested = Signal(int, object, object, object, object, object, object, object)

    def __init__(
        self,
        params: ParamsBox,
        backend=None,
        parent: QObject | None = None,
        factory=None,
        options=None,
        tools: AnswerTools | None = None,
    ) -> None:
        super().__init__(parent)
        self.params_box = params
        self.state = ChatState()
        self.last_answer: tuple[str, AnswerRecord] | None = None
        self._request_id = 0
        self._current: int | None = None  # the reply being written
        self._run: int | None = None  # the answer's run on the worker (its first reply's id)
        self._stop: threading.Event | None = None
        self._parts = PartsSoFar()  # the answer's typed parts (text, reasoning, calls)
        self._figures = AnswerFigures()  # the answer's newest figures
        self._offset = 0
        self._closed = False
        self._new_chats = 0
        #: Keys the KV cache the backend keeps between this conversation's turns.
        self.conversation_key: object = ("new", 0)
        #: The conversation's tools, the approvals of their calls and the interpreter.
        self.tools = tools if tools is not None else AnswerTools(parent=self)
        self._resumed: tuple[str, AnswerRecord | None] | None = None  # Continue: the text and record so far
        self._holds = 0  # listeners of answer_started that hold the request (hold_answer)
        self._held: tuple = ()  # the request's arguments while it is held
        self._reply_hold = ReplyHold()  # the run's replies after the first wait here
        self._run_ids: dict[str, int | None] = {}  # the history's ids of the answer (for the marker)
        self._marker = None  # this process's "engine was generating" marker (core/run_marker.py)
        self._model_text: tuple[int, str, str] | None = None  # (index, question, what the model reads)

        self.worker = Worker(params, factory, options)
        self.thread = start_thread(self.worker)
        self.loader = ModelLoader(self.worker, backend, self)
        self.loader.load_started.connect(self.stop_answer)  # a new model: the answer stops first
        self._generation_requested.connect(self.worker.generate, _QUEUED)
        self.worker.step_received.connect(self._on_step_received, _QUEUED)
        self.worker.tools_noted.connect(self._on_tools_noted, _QUEUED)
        self.worker.error_occurred.connect(self.error_occurred, _QUEUED)

    # State ------------------------------------------------------------------------
    def events(self) -> list[threading.Event]:
        """The stop and cancel events in use (set on shutdown)."""
        return [e for e in (self._stop, self.loader.cancel_event) if e is not None]

    def is_streaming(self) -> bool:
        """True while an answer runs (a reply is written, or a call waits or runs)."""
        return self._run is not None

    def offered_tools(self) -> ToolSet | None:
        """The conversation's own tools when the model has a tool format, else ``None``."""
        caps = self.loader.capabilities
        return self.tools.offered(bool(caps is not None and caps.tool_calls))

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
        if self._run is not None or not text.strip() or not self.is_ready():
            return False
        message = ChatMessage("user", text, attachments=tuple(attachments), documents=tuple(documents))
        index = self.state.add(message)
        self._model_text = (index, text, model_text) if model_text is not None else None
        self.message_added.emit(index, message, None)
        self._start_answer(system_prompt, cache)
        return True

    def regenerate(self, system_prompt: str, cache: CacheSettings) -> bool:
        """Write the last answer again; False when nothing can be regenerated now."""
        if self._run is not None or not self.is_ready():
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
        if self._run is not None or not self.is_ready() or not self.can_continue():
            return False
        self._resumed = (self.state.messages[-1].content, self.state.records[-1])
        self._start_answer(system_prompt, cache)
        return True

    def is_resuming(self) -> bool:
        """True while the answer being written continues the last answer (Continue)."""
        return self._resumed is not None

    def _start_answer(self, system_prompt: str, cache: CacheSettings) -> None:
        self._request_id += 1
        self._current = self._run = self._request_id
        self._stop = threading.Event()
        self._parts, self._figures = PartsSoFar(), AnswerFigures()
        caps, info = self.loader.capabilities, self.loader.model_info
        tool_calls = bool(caps is not None and caps.tool_calls)
        backend = self.loader.backend
        run_tools = self.tools.for_run(
            self._stop,
            _dialect(info),
            tool_calls,
            backend.prompt_tokens if backend is not None else None,
            caps.context_length if caps is not None else 0,
        )
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
        self._reply_hold = ReplyHold()
        self._held = (
            self._current,
            self.loader.backend,
            messages,
            cache,
            self._stop,
            self.conversation_key,
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
    def stop_answer(self) -> None:
        """Stop the answer (a reply ends within one token, its text kept; a call that
        waits for the user is not run; running code is killed)."""
        if self._stop is not None and self._run is not None:
            self._stop.set()
            self.tools.kill_code()

    @Slot()
    def kill_code(self) -> None:
        """Kill the running interpreter code now (the answer goes on from the note)."""
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

    def abandon_answer(self) -> None:
        """End the current answer here with the text received so far (cancelled); a call
        that waits is not run."""
        if self._run is None:
            return
        if self._stop is not None:
            self._stop.set()
        self.tools.kill_code()
        self._end_run()

    # Conversations --------------------------------------------------------------------
    def new_chat(self) -> None:
        """Start an empty conversation (an answer being written is stopped and kept)."""
        self.abandon_answer()
        self.tools.close_interpreter(self.loader.release)
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
        self.tools.close_interpreter(self.loader.release)
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
        if self._run is not None or not 0 <= index < len(self.state):
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
        self.tools.close()
