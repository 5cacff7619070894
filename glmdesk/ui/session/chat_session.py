"""The open conversation and its answers, without widgets (GPT4All's ``Chat`` beside
``ChatLLM``).

:class:`ChatSession` is a non-visual QObject on the GUI thread, built from parts that
each do one thing and get what they need in their constructor:

- the model's :class:`~glmdesk.ui.session.worker.Worker` on its QThread;
- :class:`~glmdesk.ui.session.model_loader.ModelLoader` (``session.loader``): the model
  in use and its loads;
- :class:`~glmdesk.ui.session.answer_tools.AnswerTools` (``session.tools``): the
  conversation's tools, the approvals of their calls, the interpreter, the MCP servers;
- :class:`~glmdesk.ui.session.answer_run.AnswerRun` (``session.run``): one answer from
  the request to its end (replies, the tool loop between them, the run marker).

The session itself keeps the conversation (:class:`ChatState`) and what the user does
to it: send, regenerate, continue, rewind, new chat, open another; it relays the
answer's signals so the chat view, status bar, gauge and history connect to one object.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable

from PySide6.QtCore import QCoreApplication, QEvent, QObject, Qt, Signal, Slot

from glmdesk.core.messages import ChatMessage
from glmdesk.core.settings import CacheSettings, ParamsBox
from glmdesk.core.tools import ToolSet
from glmdesk.ui.session.answer_run import AnswerRun, model_label
from glmdesk.ui.session.answer_tools import AnswerTools
from glmdesk.ui.session.conversation import AnswerRecord, ChatState
from glmdesk.ui.session.model_loader import ModelLoader
from glmdesk.ui.session.worker import Worker, start_thread, stop_thread

_QUEUED = Qt.ConnectionType.QueuedConnection

__all__ = ["ChatSession", "model_label"]


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
            it; a reply after tool results continues the same run once released too.
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
        self._closed = False
        self._new_chats = 0
        #: Keys the KV cache the backend keeps between this conversation's turns.
        self.conversation_key: object = ("new", 0)
        self._resumed: tuple[str, AnswerRecord | None] | None = None  # Continue: the text and record so far
        self._model_text: tuple[int, str, str] | None = None  # (index, question, what the model reads)

        self.worker = Worker(params, factory, options)
        self.worker_thread = start_thread(self.worker)
        self.loader = ModelLoader(self.worker, backend, self)
        #: The conversation's tools, the approvals of their calls and the interpreter.
        self.tools = tools if tools is not None else AnswerTools(parent=self)
        #: The answer being written (requests, replies, the tool loop's results).
        self.run = AnswerRun(self.worker, self.loader, self.state, params, self.tools, self)
        for mine, theirs in (
            (self.message_added, self.run.message_added),
            (self.answer_started, self.run.answer_started),
            (self.step_shown, self.run.step_shown),
            (self.answer_finished, self.run.answer_finished),
            (self.answer_ended, self.run.answer_ended),
            (self.tool_answered, self.run.tool_answered),
            (self.tool_images_added, self.run.tool_images_added),
            (self.tools_noted, self.run.tools_noted),
        ):
            theirs.connect(mine)  # direct: listeners hold the answer while it is announced
        self.loader.load_started.connect(self.stop_answer)  # a new model: the answer stops first
        self.worker.error_occurred.connect(self.error_occurred, _QUEUED)

    @property
    def last_answer(self) -> tuple[str, AnswerRecord] | None:
        """The newest reply's text and record (set when it finished)."""
        return self.run.last_answer

    # State ------------------------------------------------------------------------
    def events(self) -> list[threading.Event]:
        """The stop and cancel events in use (set on shutdown)."""
        return [e for e in (self.run.stop_event(), self.loader.cancel_event) if e is not None]

    def is_streaming(self) -> bool:
        """True while an answer runs (a reply is written, or a call waits or runs)."""
        return self.run.is_running()

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
        if self.run.is_running() or not text.strip() or not self.is_ready():
            return False
        message = ChatMessage("user", text, attachments=tuple(attachments), documents=tuple(documents))
        index = self.state.add(message)
        self._model_text = (index, text, model_text) if model_text is not None else None
        self.message_added.emit(index, message, None)
        self._start_answer(system_prompt, cache)
        return True

    def regenerate(self, system_prompt: str, cache: CacheSettings) -> bool:
        """Write the last answer again; False when nothing can be regenerated now."""
        if self.run.is_running() or not self.is_ready():
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
        if self.run.is_running() or not self.is_ready() or not self.can_continue():
            return False
        self._resumed = (self.state.messages[-1].content, self.state.records[-1])
        self._start_answer(system_prompt, cache)
        return True

    def is_resuming(self) -> bool:
        """True while the answer being written continues the last answer (Continue)."""
        return self.run.is_resuming()

    def _start_answer(self, system_prompt: str, cache: CacheSettings) -> None:
        messages, offset = self.state.request(system_prompt, self.offered_tools())
        if self._model_text is not None:  # the question as the model reads it (with its documents)
            index, text, model_text = self._model_text
            at = index + offset
            if at < len(messages) and messages[at].role == "user" and messages[at].content == text:
                messages = (
                    *messages[:at],
                    dataclasses.replace(messages[at], content=model_text),
                    *messages[at + 1 :],
                )
        resumed, self._resumed = self._resumed, None
        self.run.start(messages, offset, cache, self.conversation_key, resumed)

    def hold_answer(self) -> Callable[..., None]:
        """See :meth:`AnswerRun.hold_answer` (the history holds each reply until what it
        follows is stored)."""
        return self.run.hold_answer()

    @Slot()
    def stop_answer(self) -> None:
        """Stop the answer (a reply ends within one token, its text kept; a call that
        waits for the user is not run; running code is killed)."""
        self.run.stop()

    @Slot()
    def kill_code(self) -> None:
        """Kill the running interpreter code now (the answer goes on from the note)."""
        self.tools.kill_code()

    def abandon_answer(self) -> None:
        """End the current answer here with the text received so far (cancelled); a call
        that waits is not run."""
        self.run.abandon()

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
        if self.run.is_running() or not 0 <= index < len(self.state):
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
        stop_thread(self.worker_thread, self.run.stop_event(), self.loader.cancel_event)
        # Deliver what the worker sent before it stopped (the final chunk of the answer).
        QCoreApplication.sendPostedEvents(self.run, QEvent.Type.MetaCall)
        QCoreApplication.sendPostedEvents(self, QEvent.Type.MetaCall)
        self.abandon_answer()
        self.loader.close()
        self.tools.close()
        # Freed by Qt now, in its own order, not by Python's cycle collector later: a
        # collected session's Qt children (loader, run, tools, the history controller)
        # were destroyed in an arbitrary order and crashed the process.
        self.deleteLater()
