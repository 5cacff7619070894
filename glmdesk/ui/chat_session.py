"""The life of an answer and of a load, without widgets (GPT4All's ``Chat`` beside ``ChatLLM``).

:class:`ChatSession` is a non-visual QObject on the GUI thread. It owns the worker and
its thread, the :class:`~glmdesk.engine.backends.Backend` in use, the open
conversation (:class:`ChatState`), request and load ids, Stop, the one buffer of the
answer's text, and the load fallback (a last model that is gone -> the embedded one).
It emits what the chat view, status bar, gauge and history need; the window lays out
widgets and connects them.

One rule, for answers and loads alike: results of a request that is no longer the
newest are ignored (a superseded load is silent and its backend is released).
"""

from __future__ import annotations

import threading

from PySide6.QtCore import QCoreApplication, QEvent, QObject, Qt, Signal, Slot

from glmdesk.core.errors import ErrorInfo
from glmdesk.core.messages import ChatMessage
from glmdesk.core.settings import CacheSettings, LoadSettings, ParamsBox
from glmdesk.ui.conversation import AnswerRecord, ChatState
from glmdesk.ui.worker import Worker, start_thread, stop_thread

_QUEUED = Qt.ConnectionType.QueuedConnection


class ChatSession(QObject):
    """One conversation with one model, answered on the worker thread.

    Args:
        params: The live sampling parameters (the sidebar swaps its value).
        backend: A loaded backend to use at first (tests); it is not closed by the session.

    Signals:
        options_checked(dict): ``{option key: None or ErrorInfo}`` (Open model).
        load_started(LoadSettings): A load went to the worker.
        load_progressed(LoadProgress): A stage of the newest load.
        model_ready(ModelInfo): The newest load is in use (``capabilities`` is set).
        load_failed(ErrorInfo, bool): The newest load failed; the bool tells whether the
            embedded model is being loaded instead.
        load_finished(): No load is running any more (after ``model_ready`` or ``load_failed``).
        message_added(int, ChatMessage, AnswerRecord | None): A user message was sent, or an
            answer finished (once, partial answers included); the int is its index.
        answer_started(int): Request ``id`` went to the worker.
        chunk_shown(int, GenerationChunk): A chunk of the current request.
        answer_finished(int, GenerationChunk): The current request ended (``last_answer``
            holds its text and record).
        last_answer_removed(): Regenerate removed the newest answer.
        conversation_cleared(): New chat.
        conversation_replaced(list): The conversation was replaced (opened from history).
        conversation_rewound(int): Messages from this index on left the conversation (an
            edit or a regeneration of an earlier message makes a new branch from there).
        error_occurred(ErrorInfo): A failure outside a load or an answer.
    """

    options_checked = Signal(object)
    load_started = Signal(object)
    load_progressed = Signal(object)
    model_ready = Signal(object)
    load_failed = Signal(object, bool)
    load_finished = Signal()
    message_added = Signal(int, object, object)
    answer_started = Signal(int)
    chunk_shown = Signal(int, object)
    answer_finished = Signal(int, object)
    last_answer_removed = Signal()
    conversation_cleared = Signal()
    conversation_replaced = Signal(object)
    conversation_rewound = Signal(int)
    error_occurred = Signal(object)

    # To the worker (queued: the worker lives on its own thread).
    _options_requested = Signal()
    _announce_requested = Signal(int, object)
    _load_requested = Signal(int, object, object)
    _release_requested = Signal(object)
    _generation_requested = Signal(int, object, object, object, object)

    def __init__(self, params: ParamsBox, backend=None, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.params_box = params
        self.state = ChatState()
        self.backend = backend
        self.model_info = None
        self.capabilities = None
        self.load_settings: LoadSettings | None = None
        self.loaded_settings: LoadSettings | None = None
        self.last_answer: tuple[str, AnswerRecord] | None = None
        self._given = backend  # not ours to close
        self._request_id = 0
        self._current: int | None = None
        self._stop: threading.Event | None = None
        self._load_id = 0
        self._loading: LoadSettings | None = None
        self._cancel: threading.Event | None = None
        self._parts: list[str] = []
        self._last_chunk = None
        self._offset = 0
        self._closed = False
        self._events: list[threading.Event] = []

        self.worker = Worker(params)
        self.thread = start_thread(self.worker)
        self._options_requested.connect(self.worker.check_options, _QUEUED)
        self._announce_requested.connect(self.worker.announce, _QUEUED)
        self._load_requested.connect(self.worker.load, _QUEUED)
        self._release_requested.connect(self.worker.release, _QUEUED)
        self._generation_requested.connect(self.worker.generate, _QUEUED)
        self.worker.options_checked.connect(self.options_checked, _QUEUED)
        self.worker.load_progressed.connect(self._on_load_progressed, _QUEUED)
        self.worker.model_loaded.connect(self._on_model_loaded, _QUEUED)
        self.worker.load_failed.connect(self._on_load_failed, _QUEUED)
        self.worker.chunk_received.connect(self._on_chunk_received, _QUEUED)
        self.worker.generation_finished.connect(self._on_generation_finished, _QUEUED)
        self.worker.error_occurred.connect(self.error_occurred, _QUEUED)

    # State ------------------------------------------------------------------------
    def events(self) -> list[threading.Event]:
        """The stop and cancel events in use (set on shutdown)."""
        return [e for e in (self._stop, self._cancel) if e is not None]

    def is_streaming(self) -> bool:
        """True while an answer is being written."""
        return self._current is not None

    def is_loading(self) -> bool:
        """True while a model loads."""
        return self._loading is not None

    def is_ready(self) -> bool:
        """True when a model is in use and nothing loads."""
        return self.backend is not None and self.model_info is not None and self._loading is None

    # Loading ----------------------------------------------------------------------
    def start(self, settings: LoadSettings) -> None:
        """Check the load options, then announce the given backend or load ``settings``."""
        self._options_requested.emit()
        if self._given is not None:
            self._load_id += 1
            self._announce_requested.emit(self._load_id, self._given)
        else:
            self.load_model(settings)

    def load_model(self, settings: LoadSettings) -> None:
        """Load ``settings``; an answer being written is stopped, a running load superseded.

        The model in use stays until the new one is ready.
        """
        if self._cancel is not None:
            self._cancel.set()  # the superseded load ends quietly
        self.stop_answer()
        self._load_id += 1
        self._cancel = threading.Event()
        self._loading = settings
        self.load_started.emit(settings)
        self._load_requested.emit(self._load_id, settings, self._cancel)

    @Slot()
    def cancel_load(self) -> None:
        """Cancel the load in progress (the model in use stays)."""
        if self._cancel is not None:
            self._cancel.set()

    @Slot(int, object)
    def _on_load_progressed(self, load_id: int, progress) -> None:
        if load_id == self._load_id:
            self.load_progressed.emit(progress)

    @Slot(int, object, object, object)
    def _on_model_loaded(self, load_id: int, backend, info, capabilities) -> None:
        if load_id != self._load_id or self._closed:
            if backend is not self.backend and backend is not self._given:
                self._release_requested.emit(backend)  # a superseded load's model
            return
        settings = self._loading
        previous = self.backend
        self.backend, self.model_info, self.capabilities = backend, info, capabilities
        self._loading = self._cancel = None
        self.loaded_settings = settings  # None for a backend given at construction
        if settings is not None:
            self.load_settings = settings
        if previous is not None and previous is not backend and previous is not self._given:
            self._release_requested.emit(previous)
        self.load_finished.emit()
        self.model_ready.emit(info)

    @Slot(int, object)
    def _on_load_failed(self, load_id: int, error: ErrorInfo) -> None:
        if load_id != self._load_id or self._closed:
            return  # a superseded load: silent
        failed = self._loading
        self._loading = self._cancel = None
        fallback = self.model_info is None and failed is not None and failed.model is not None
        self.load_finished.emit()
        self.load_failed.emit(error, fallback)
        if fallback:
            self.load_model(LoadSettings())

    # Answers ------------------------------------------------------------------------
    def send(self, text: str, system_prompt: str, cache: CacheSettings) -> bool:
        """Send ``text`` as the user's next message; False when it cannot go now.

        Refused while an answer is written, for blank text, and while no model is
        ready (the caller tells the user to wait).
        """
        if self._current is not None or not text.strip() or not self.is_ready():
            return False
        message = ChatMessage("user", text)
        index = self.state.add(message)
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

    def _start_answer(self, system_prompt: str, cache: CacheSettings) -> None:
        self._request_id += 1
        self._current = self._request_id
        self._stop = threading.Event()
        self._parts, self._last_chunk = [], None
        messages, self._offset = self.state.request(system_prompt)
        self.answer_started.emit(self._current)
        self._generation_requested.emit(self._current, self.backend, messages, cache, self._stop)

    @Slot()
    def stop_answer(self) -> None:
        """Stop the answer being written (it ends within one token; the text is kept)."""
        if self._stop is not None and self._current is not None:
            self._stop.set()

    @Slot(int, object)
    def _on_chunk_received(self, request_id: int, chunk) -> None:
        if request_id != self._current:
            return  # a request the session has moved past
        self._last_chunk = chunk
        if chunk.text:
            self._parts.append(chunk.text)
        self.chunk_shown.emit(request_id, chunk)

    @Slot(int, object)
    def _on_generation_finished(self, request_id: int, chunk) -> None:
        if request_id != self._current:
            return
        if chunk.text:
            self._parts.append(chunk.text)
        self._finish_answer(chunk.finish_reason or "stop", chunk)

    def _finish_answer(self, reason: str, chunk) -> None:
        request_id = self._current
        self._current = self._stop = None
        text = "".join(self._parts)
        record = AnswerRecord(
            finish_reason=reason,
            model=self.model_info.name if self.model_info else "",
            params=self.params_box.get(),
            ttft_s=getattr(chunk, "ttft_s", 0.0),
            tokens_per_s=getattr(chunk, "tokens_per_s", 0.0),
            n_tokens=getattr(chunk, "n_generated", 0),
            prompt_tokens=getattr(chunk, "prompt_tokens", 0),
            dropped_messages=tuple(
                i - self._offset for i in getattr(chunk, "dropped_messages", ()) if i >= self._offset
            ),
            error=getattr(chunk, "error", None),
        )
        self.last_answer = (text, record)
        if text:
            index = self.state.add(ChatMessage("assistant", text), record)
            self.message_added.emit(index, self.state.messages[index], record)
        self.answer_finished.emit(request_id, chunk)

    def abandon_answer(self) -> None:
        """End the current answer here with the text received so far (cancelled)."""
        if self._current is None:
            return
        if self._stop is not None:
            self._stop.set()
        self._finish_answer("cancelled", self._last_chunk)

    # Conversations --------------------------------------------------------------------
    def new_chat(self) -> None:
        """Start an empty conversation (an answer being written is stopped and kept)."""
        self.abandon_answer()
        self.state.clear()
        self.conversation_cleared.emit()

    def show_conversation(self, messages: list[ChatMessage]) -> None:
        """Replace the open conversation with ``messages`` (from the history).

        An answer being written is stopped first and kept in the conversation it
        belongs to (its ``message_added`` goes out before the switch).
        """
        self.abandon_answer()
        self.state.clear()
        shown = [m for m in messages if m.role != "system"]
        for message in shown:
            self.state.add(message, AnswerRecord("stop") if message.role == "assistant" else None)
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
        stop_thread(self.thread, self._stop, self._cancel)
        # Deliver what the worker sent before it stopped (the final chunk of the answer).
        QCoreApplication.sendPostedEvents(self, QEvent.Type.MetaCall)
        self.abandon_answer()
        backend, self.backend = self.backend, None
        if backend is not None and backend is not self._given:
            backend.close()
