"""The worker: one QObject on one QThread for the app's lifetime; it owns the model.

The window talks to it only through queued signals (its own signals connected to
the slots below) and through two ``threading.Event`` objects it sets directly:
a load's cancel and an answer's stop (the worker is busy in the decode loop, so a
queued slot would only run after the answer). Every answer carries a request id;
the window ignores chunks of ids it has moved past.

The engine (torch, transformers) is imported inside the slots. ``run_app`` imports
it once with :func:`preload_engine` before the window is shown: importing torch
holds the GIL for hundreds of milliseconds at a time, which would stall the GUI
thread's event loop if it happened on the worker while the window is up.

Shutdown (:func:`stop_thread`): set stop and cancel, ``quit()``, ``wait()``, then
:meth:`Worker.release_model` from the GUI thread once the thread has ended.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from PySide6.QtCore import QObject, QThread, Signal, Slot

from glmdesk.core.errors import ErrorInfo, GlmdeskError
from glmdesk.core.messages import ChatMessage
from glmdesk.core.settings import CACHE_STRATEGIES, CacheSettings, LoadSettings, ParamsBox
from glmdesk.engine.chunk import GenerationChunk


def _error_chunk(info: ErrorInfo) -> GenerationChunk:
    return GenerationChunk(finish_reason="error", error=info)


class Worker(QObject):
    """Loads models and streams answers on its own thread.

    Args:
        params: The box the decode loop reads sampling parameters from before every token.
        model: An already loaded model to use at first (tests share one); the worker
            does not close a model it was given.

    Signals:
        options_checked(dict): ``loader.option_availability()``.
        load_progressed(LoadProgress): A loading stage.
        model_loaded(ModelInfo, dict): The new model, and ``{cache strategy: None or ErrorInfo}``.
        load_failed(ErrorInfo): Loading failed or was cancelled; the previous model stays.
        chunk_received(int, GenerationChunk): A streamed chunk of request ``id``.
        generation_finished(int, GenerationChunk): The final chunk of request ``id``.
        error_occurred(ErrorInfo): A failure outside a load or an answer.
    """

    options_checked = Signal(object)
    load_progressed = Signal(object)
    model_loaded = Signal(object, object)
    load_failed = Signal(object)
    chunk_received = Signal(int, object)
    generation_finished = Signal(int, object)
    error_occurred = Signal(object)

    def __init__(self, params: ParamsBox, model=None) -> None:
        super().__init__()
        self.params = params
        self._model = model
        self._owns_model = model is None

    # Options and models ---------------------------------------------------------
    @Slot()
    def check_options(self) -> None:
        """Emit :attr:`options_checked` with what this machine can load."""
        try:
            from glmdesk.engine.loader import option_availability

            self.options_checked.emit(option_availability())
        except Exception as exc:  # a broken CUDA or bitsandbytes install
            self.error_occurred.emit(ErrorInfo("load_failed", str(exc), {"detail": str(exc)}))

    @Slot()
    def announce(self) -> None:
        """Emit :attr:`model_loaded` for a model given at construction."""
        if self._model is not None:
            self.model_loaded.emit(self._model.info, self._cache_availability(self._model))

    @Slot(object, object)
    def load(self, settings: LoadSettings, cancel: threading.Event) -> None:
        """Load ``settings``; on success it replaces the current model.

        The previous model stays loaded (and usable) until the new one is ready, so a
        failed or cancelled load leaves it in place.
        """
        try:
            from glmdesk.engine.loader import load_model

            loaded = load_model(settings, progress=self.load_progressed.emit, cancel=cancel)
        except GlmdeskError as exc:
            self.load_failed.emit(exc.info)
            return
        except Exception as exc:  # the loader words its errors; this is a safety net
            detail = f"{exc.__class__.__name__}: {exc}"
            self.load_failed.emit(
                ErrorInfo("load_failed", f"The model could not be loaded: {detail}", {"detail": detail})
            )
            return
        if cancel.is_set():
            loaded.close()
            self.load_failed.emit(ErrorInfo("load_cancelled", "Loading was cancelled."))
            return
        previous, owned = self._model, self._owns_model
        self._model, self._owns_model = loaded, True
        if previous is not None and owned:
            previous.close()
        self.model_loaded.emit(loaded.info, self._cache_availability(loaded))

    @staticmethod
    def _cache_availability(loaded) -> dict[str, ErrorInfo | None]:
        """Which KV-cache strategies ``make_cache_strategy`` accepts for this model."""
        from glmdesk.engine.cache import make_cache_strategy

        out: dict[str, ErrorInfo | None] = {}
        for name in CACHE_STRATEGIES:
            try:
                strategy = make_cache_strategy(loaded.model, CacheSettings(strategy=name))
                strategy.release()
                out[name] = None
            except GlmdeskError as exc:
                out[name] = exc.info
            except Exception as exc:
                out[name] = ErrorInfo(
                    "invalid_setting", str(exc), {"name": "kv_cache", "value": name, "reason": str(exc)}
                )
        return out

    # Answers ----------------------------------------------------------------------
    @Slot(int, object, object, object)
    def generate(
        self,
        request_id: int,
        messages: Sequence[ChatMessage],
        cache: CacheSettings,
        stop: threading.Event,
    ) -> None:
        """Stream an answer to ``messages``; every chunk carries ``request_id``.

        Ends with exactly one :attr:`generation_finished` (finish reason ``stop``,
        ``length``, ``cancelled`` or ``error``).
        """
        if self._model is None:
            self.generation_finished.emit(
                request_id,
                _error_chunk(
                    ErrorInfo("generation_failed", "No model is loaded.", {"detail": "no model is loaded"})
                ),
            )
            return
        if stop.is_set():  # Stop pressed before the request reached this thread
            self.generation_finished.emit(request_id, GenerationChunk(finish_reason="cancelled"))
            return
        final = None
        try:
            from glmdesk.engine.generate import stream_chat

            for chunk in stream_chat(self._model, messages, self.params, cache, stop):
                if chunk.finish_reason is not None:
                    final = chunk
                    break
                self.chunk_received.emit(request_id, chunk)
        except Exception as exc:  # stream_chat never raises; this is a safety net
            detail = f"{exc.__class__.__name__}: {exc}"
            final = _error_chunk(
                ErrorInfo("generation_failed", f"The answer failed: {detail}", {"detail": detail})
            )
        if final is None:
            final = GenerationChunk(finish_reason="cancelled" if stop.is_set() else "stop")
        self.generation_finished.emit(request_id, final)

    def release_model(self) -> None:
        """Drop the model (call after the thread has ended, or from the worker thread)."""
        model, self._model = self._model, None
        if model is not None and self._owns_model:
            model.close()


def preload_engine(first_load: LoadSettings | None = None) -> None:
    """Import torch, transformers and the engine modules on the calling thread.

    Call before the window appears (a few seconds on two cores, once per process).
    Without it the worker imports them on first load, and the event loop sees
    GIL stalls of up to a few hundred milliseconds meanwhile.

    Args:
        first_load: The model the window will load first; its tokenizer is built
            here too when its files are on disk (one ~100 ms native call that holds
            the GIL; see :func:`glmdesk.engine.loader.prebuild_tokenizer`).
    """
    import importlib

    import transformers

    import glmdesk.engine.cache
    import glmdesk.engine.generate
    import glmdesk.engine.loader  # noqa: F401

    _ = transformers.AutoModelForCausalLM, transformers.AutoTokenizer  # resolve the lazy modules
    # Modules from_pretrained imports on first use (optional ones may be missing).
    for name in (
        "accelerate",
        "torch._inductor.lowering",
        "safetensors.torch",
        "transformers.tokenization_utils_tokenizers",
        "transformers.models.llama.modeling_llama",
        "transformers.models.glm.modeling_glm",
        "transformers.models.glm4.modeling_glm4",
        "transformers.models.auto.tokenization_auto",
        "transformers.convert_slow_tokenizer",
        "sentencepiece",
    ):
        try:
            importlib.import_module(name)
        except Exception:
            pass
    if first_load is not None:
        glmdesk.engine.loader.prebuild_tokenizer(first_load)


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
