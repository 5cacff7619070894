"""The life of a load, without widgets: which model is in use and which load is newest.

:class:`ModelLoader` is a non-visual QObject on the GUI thread beside the
:class:`~glmdesk.ui.session.chat_session.ChatSession` (which answers with the model it holds).
It owns the :class:`~glmdesk.engine.backends.Backend` in use, its ``ModelInfo`` and
capabilities, load ids and the load's cancel event, and the load fallback (a last
model that is gone -> the embedded one). It talks to the session's worker only through
queued signals.

One rule: results of a load that is no longer the newest are ignored (a superseded
load is silent and its backend is released).
"""

from __future__ import annotations

import threading

from PySide6.QtCore import QObject, Qt, Signal, Slot

from glmdesk.core.errors import ErrorInfo
from glmdesk.core.settings import LoadSettings

_QUEUED = Qt.ConnectionType.QueuedConnection


class ModelLoader(QObject):
    """The model in use and the loads that replace it, run on ``worker``'s thread.

    Args:
        worker: The :class:`~glmdesk.ui.session.worker.Worker` (on its own thread).
        backend: A loaded backend to use at first (tests); it is not closed by the loader.

    Signals:
        options_checked(dict): ``{option key: None or ErrorInfo}`` (Open model).
        load_started(LoadSettings): A load went to the worker.
        load_progressed(LoadProgress): A stage of the newest load.
        model_ready(ModelInfo): The newest load is in use (``capabilities`` is set).
        load_failed(ErrorInfo, bool): The newest load failed; the bool tells whether the
            embedded model is being loaded instead.
        load_finished(): No load is running any more (after ``model_ready`` or ``load_failed``).
    """

    options_checked = Signal(object)
    load_started = Signal(object)
    load_progressed = Signal(object)
    model_ready = Signal(object)
    load_failed = Signal(object, bool)
    load_finished = Signal()

    # To the worker (queued: the worker lives on its own thread).
    _options_requested = Signal()
    _announce_requested = Signal(int, object)
    _load_requested = Signal(int, object, object)
    _release_requested = Signal(object)

    def __init__(self, worker, backend=None, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.backend = backend
        self.model_info = None
        self.capabilities = None
        self.load_settings: LoadSettings | None = None
        self.loaded_settings: LoadSettings | None = None
        self._given = backend  # not ours to close
        self._load_id = 0
        self._loading: LoadSettings | None = None
        self.cancel_event: threading.Event | None = None
        self._closed = False
        self._options_requested.connect(worker.check_options, _QUEUED)
        self._announce_requested.connect(worker.announce, _QUEUED)
        self._load_requested.connect(worker.load, _QUEUED)
        self._release_requested.connect(worker.release, _QUEUED)
        worker.options_checked.connect(self.options_checked, _QUEUED)
        worker.load_progressed.connect(self._on_load_progressed, _QUEUED)
        worker.model_loaded.connect(self._on_model_loaded, _QUEUED)
        worker.load_failed.connect(self._on_load_failed, _QUEUED)

    def is_loading(self) -> bool:
        """True while a model loads."""
        return self._loading is not None

    def is_ready(self) -> bool:
        """True when a model is in use and nothing loads."""
        return self.backend is not None and self.model_info is not None and self._loading is None

    def start(self, settings: LoadSettings) -> None:
        """Check the load options, then announce the given backend or load ``settings``."""
        self._options_requested.emit()
        if self._given is not None:
            self._load_id += 1
            self._announce_requested.emit(self._load_id, self._given)
        else:
            self.load_model(settings)

    def check_options(self) -> None:
        """Read again what this machine can load (e.g. llama.cpp was just installed)."""
        self._options_requested.emit()

    def load_model(self, settings: LoadSettings) -> None:
        """Load ``settings``; a running load is superseded (``load_started`` goes out
        first: the session stops an answer being written). The model in use stays until
        the new one is ready."""
        if self.cancel_event is not None:
            self.cancel_event.set()  # the superseded load ends quietly
        self._load_id += 1
        self.cancel_event = threading.Event()
        self._loading = settings
        self.load_started.emit(settings)
        self._load_requested.emit(self._load_id, settings, self.cancel_event)

    @Slot()
    def cancel_load(self) -> None:
        """Cancel the load in progress (the model in use stays)."""
        if self.cancel_event is not None:
            self.cancel_event.set()

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
        self._loading = self.cancel_event = None
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
        self._loading = self.cancel_event = None
        fallback = self.model_info is None and failed is not None and failed.model is not None
        self.load_finished.emit()
        self.load_failed.emit(error, fallback)
        if fallback:
            self.load_model(LoadSettings())

    def release(self, resource) -> None:
        """Close ``resource`` (a backend or a code interpreter: anything with ``close()``)
        on the worker thread, after what runs there now."""
        self._release_requested.emit(resource)

    def kept_kv_bytes(self) -> int:
        """KV bytes the backend keeps for conversations between answers, in bytes."""
        return self.backend.kept_kv_bytes() if self.backend is not None else 0

    def close(self) -> None:
        """Ignore loads from now on and close the backend in use (unless it was given);
        call after the worker's thread has ended. Idempotent."""
        self._closed = True
        backend, self.backend = self.backend, None
        if backend is not None and backend is not self._given:
            backend.close()
