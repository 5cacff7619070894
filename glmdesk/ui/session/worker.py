"""The worker: one QObject on one QThread for the app's lifetime; it runs the backends.

It holds no model of its own: :class:`~glmdesk.ui.session.chat_session.ChatSession` owns the
:class:`~glmdesk.engine.backends.Backend` in use and names it in every request, so a
superseded load's backend can never be taken for the current one. The session talks
to the worker only through queued signals connected to the slots below, and through
two ``threading.Event`` objects it sets directly: a load's cancel and an answer's
stop (the worker is busy in the decode loop, so a queued slot would run too late).

The engine (torch, transformers) is imported inside the slots. ``run_app`` imports
it once with :func:`glmdesk.engine.backends.transformers.warmup.preload_engine` before the window is shown:
importing torch holds the GIL for hundreds of milliseconds at a time.

Shutdown (:func:`stop_thread`): set stop and cancel, ``quit()``, ``wait()``; the
session then closes its backend from the GUI thread once the thread has ended.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Sequence

from PySide6.QtCore import QObject, QThread, Signal, Slot

from glmdesk.chat.events import AnswerDone, AnswerFailed
from glmdesk.core.errors import ErrorInfo, GlmdeskError
from glmdesk.core.messages import ChatMessage
from glmdesk.core.settings import CacheSettings, LoadSettings
from glmdesk.engine.quiet import quiet_libraries


def _failure(kind: str, prefix: str, exc: Exception) -> ErrorInfo:
    detail = f"{exc.__class__.__name__}: {exc}"
    return ErrorInfo(kind, f"{prefix}: {detail}", {"detail": detail})


class Worker(QObject):
    """Loads backends and streams answers on its own thread.

    Args:
        params: The box the decode loop reads sampling parameters from before every token.
        factory: ``factory(LoadSettings) -> Backend`` (unloaded); default
            :func:`glmdesk.engine.backends.create_backend`.
        options: ``options() -> {key: None or ErrorInfo}``; default
            :func:`glmdesk.engine.backends.availability` (every engine's; imports torch).

    Signals:
        options_checked(dict): ``{option key: None or ErrorInfo}`` for the Open model dialog.
        load_progressed(int, LoadProgress): A loading stage of load ``id``.
        model_loaded(int, Backend, ModelInfo, Capabilities): Load ``id`` is ready.
        load_failed(int, ErrorInfo): Load ``id`` failed or was cancelled.
        step_received(int, tuple, bool): The events of one step of request ``id``
            (:mod:`glmdesk.chat.events`, :func:`glmdesk.chat.answer.answer_steps`), and
            whether it is the answer's last.
        tools_noted(int, ToolsNote): What to tell the user about request ``id``'s MCP
            tools (:class:`~glmdesk.ui.session.answer_tools.ToolsNote`).
        error_occurred(ErrorInfo): A failure outside a load or an answer.
    """

    options_checked = Signal(object)
    load_progressed = Signal(int, object)
    model_loaded = Signal(int, object, object, object)
    load_failed = Signal(int, object)
    step_received = Signal(int, object, bool)
    tools_noted = Signal(int, object)
    error_occurred = Signal(object)

    def __init__(self, params, factory=None, options=None) -> None:
        super().__init__()
        self.params = params
        self._factory = factory
        self._options = options

    @Slot()
    def check_options(self) -> None:
        """Emit :attr:`options_checked` with what this machine can load."""
        try:
            if self._options is None:
                from glmdesk.engine.backends import availability

                self._options = availability
            self.options_checked.emit(self._options())
        except Exception as exc:  # a broken CUDA or bitsandbytes install
            self.error_occurred.emit(_failure("load_failed", "The load options could not be read", exc))

    @Slot(int, object)
    def announce(self, load_id: int, backend) -> None:
        """Emit :attr:`model_loaded` for a backend that is loaded already."""
        try:
            self.model_loaded.emit(load_id, backend, backend.info, backend.capabilities())
        except Exception as exc:
            self.load_failed.emit(load_id, _failure("load_failed", "The model could not be loaded", exc))

    @Slot(int, object, object)
    def load(self, load_id: int, settings: LoadSettings, cancel: threading.Event) -> None:
        """Create and load a backend for ``settings``; emit it, or why not."""
        backend = None
        try:
            if self._factory is None:
                from glmdesk.engine.backends import create_backend

                self._factory = create_backend
            backend = self._factory(settings)
            # The window's stderr stays as quiet as the CLI's: no library progress bars
            # (transformers' GGUF conversion draws tqdm bars), each library note once.
            with quiet_libraries():
                info = backend.load(
                    settings, progress=lambda p: self.load_progressed.emit(load_id, p), cancel=cancel
                )
            capabilities = backend.capabilities()
        except GlmdeskError as exc:
            self._discard(backend)
            self.load_failed.emit(load_id, exc.info)
            return
        except Exception as exc:  # the loader words its errors; this is a safety net
            self._discard(backend)
            self.load_failed.emit(load_id, _failure("load_failed", "The model could not be loaded", exc))
            return
        if cancel.is_set():
            self._discard(backend)
            self.load_failed.emit(load_id, ErrorInfo("load_cancelled", "Loading was cancelled."))
            return
        self.model_loaded.emit(load_id, backend, info, capabilities)

    @staticmethod
    def _discard(backend) -> None:
        if backend is not None:
            try:
                backend.close()
            except Exception:  # closing a half-loaded backend must not hide the load's error
                pass

    @Slot(object)
    def release(self, backend) -> None:
        """Close a backend the session no longer uses (on this thread)."""
        self._discard(backend)

    @Slot(int, object, object, object, object, object, object, object)
    def generate(
        self,
        request_id: int,
        backend,
        messages: Sequence[ChatMessage],
        cache: CacheSettings,
        stop: threading.Event,
        conversation=None,
        tools=None,
        hold: ReplyHold | None = None,
    ) -> None:
        """Run one answer (:func:`glmdesk.chat.answer.answer_steps`: its replies and, with
        ``tools``, the one tool loop between them) here, off the GUI thread; every step
        carries ``request_id``.

        ``conversation`` keys the KV cache the backend keeps between this conversation's
        turns. ``tools``: a :class:`~glmdesk.ui.session.answer_tools.RunTools` (its
        ``prepare`` runs first, here: MCP servers start and their tools join the
        prompt's list), or ``None``: a reply's calls end the answer. ``hold``: each
        reply after the first waits there until the window released it
        (:class:`ReplyHold`).

        Each reply's last step ends with exactly one ``AnswerDone`` (finish reason
        ``stop``, ``length``, ``cancelled`` or ``tool_calls``) or ``AnswerFailed``; the
        answer's last :attr:`step_received` says ``last`` (an empty step when Stop
        ended it while a call waited or ran).
        """
        from glmdesk.chat.answer import answer_steps

        if tools is not None and tools.prepare is not None and not stop.is_set():
            try:
                messages, note = tools.prepare(messages)
            except Exception as exc:  # a safety net: the hub words its failures
                from glmdesk.ui.session.answer_tools import ToolsNote

                note = ToolsNote(
                    0, 0, (f"The MCP tools could not be added: {exc.__class__.__name__}: {exc}",)
                )
            if note is not None:
                self.tools_noted.emit(request_id, note)
        if stop.is_set():  # Stop pressed before the request reached this thread
            stream = _nothing
        else:
            stream = _held(functools.partial(backend.stream, conversation=conversation), hold, stop)
        run = tools.tools if tools is not None else None
        held = None  # a reply's last step, sent once it is known whether the answer goes on
        for step in answer_steps(stream, messages, self.params, cache, stop, run):
            if held is not None:
                self.step_received.emit(request_id, held, False)
                held = None
            end = step[-1] if step else None
            if isinstance(end, (AnswerDone, AnswerFailed)) and not (
                run is not None and isinstance(end, AnswerDone) and end.calls
            ):
                held = tuple(step)  # ends the answer, unless the model is told its calls were unreadable
                continue
            self.step_received.emit(request_id, tuple(step), False)
        self.step_received.emit(request_id, held or (), True)


class ReplyHold:
    """Where an answer's replies after the first wait until the window released them
    (its history stored what they follow, as for the first reply: the request is held
    until then). Released from the GUI thread, waited for on the worker's."""

    def __init__(self) -> None:
        self._released = 1  # the first reply goes with the request itself
        self._changed = threading.Condition()

    def release(self) -> None:
        """Let the next reply start."""
        with self._changed:
            self._released += 1
            self._changed.notify_all()

    def wait(self, reply: int, stop: threading.Event) -> None:
        """Block until reply number ``reply`` (from 1) is released, or ``stop`` is set."""
        with self._changed:
            while self._released < reply and not stop.is_set():
                self._changed.wait(0.05)


def _held(stream, hold: ReplyHold | None, stop: threading.Event):
    """``stream`` whose calls after the first wait at ``hold``."""
    replies = [0]

    def held(*args, **kwargs):
        replies[0] += 1
        if hold is not None and replies[0] > 1:
            hold.wait(replies[0], stop)
        return stream(*args, **kwargs)

    return held


def _nothing(*_args, **_kwargs):
    """A stream that ends at once (the answer then ends ``cancelled``)."""
    yield from ()


def start_thread(worker: Worker) -> QThread:
    """Move ``worker`` to a new, started QThread and return the thread."""
    thread = QThread()
    thread.setObjectName("glmdesk-worker")
    worker.moveToThread(thread)
    thread.start()
    return thread


def stop_thread(thread: QThread, *events: threading.Event | None) -> None:
    """Set ``events`` (stop, cancel), end the thread's event loop and wait for it."""
    for event in events:
        if event is not None:
            event.set()
    thread.quit()
    thread.wait()
