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

import threading
from collections.abc import Sequence

from PySide6.QtCore import QObject, QThread, Signal, Slot

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
        step_received(int, tuple): The events of one step of request ``id``
            (:mod:`glmdesk.chat.events`, read by :func:`glmdesk.chat.answer.reply_events`);
            the last step ends with ``AnswerDone`` or ``AnswerFailed``.
        error_occurred(ErrorInfo): A failure outside a load or an answer.
    """

    options_checked = Signal(object)
    load_progressed = Signal(int, object)
    model_loaded = Signal(int, object, object, object)
    load_failed = Signal(int, object)
    step_received = Signal(int, object)
    code_finished = Signal(int, object)
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

    @Slot(int, object, object, object, object, object)
    def generate(
        self,
        request_id: int,
        backend,
        messages: Sequence[ChatMessage],
        cache: CacheSettings,
        stop: threading.Event,
        conversation=None,
    ) -> None:
        """Stream an answer to ``messages`` from ``backend`` and read it into events here,
        off the GUI thread; every step carries ``request_id``.

        ``conversation`` keys the KV cache the backend keeps between this conversation's turns.

        The last :attr:`step_received` ends with exactly one ``AnswerDone`` (finish reason
        ``stop``, ``length``, ``cancelled`` or ``tool_calls``) or ``AnswerFailed``.
        """
        from glmdesk.chat.answer import reply_events

        if stop.is_set():  # Stop pressed before the request reached this thread
            chunks = iter(())
        else:
            chunks = _started(backend.stream, messages, self.params, cache, stop, conversation=conversation)
        for events in reply_events(chunks, stop=stop):
            self.step_received.emit(request_id, tuple(events))

    @Slot(int, object, str, float)
    def run_code(self, run_id: int, interpreter, code: str, timeout_s: float) -> None:
        """Run interpreter code (a tool call the user allowed); emit :attr:`code_finished`
        with ``run_id`` and the :class:`~glmdesk.engine.tools.interpreter.RunResult`, or an
        ``ErrorInfo`` when the kernel cannot start. The session kills a runaway run from
        the GUI thread (``interpreter.kill()`` returns at once)."""
        try:
            result = interpreter.run(code, timeout_s)
        except GlmdeskError as exc:
            result = exc.info
        except Exception as exc:  # a safety net: the interpreter words its errors
            result = _failure("interpreter_failed", "The Python interpreter could not run", exc)
        self.code_finished.emit(run_id, result)


def _started(stream, *args, **kwargs):
    """``stream(...)`` called on the first ``next`` (a backend that raises while starting
    fails the answer like one that raises while streaming)."""
    yield from stream(*args, **kwargs)


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
