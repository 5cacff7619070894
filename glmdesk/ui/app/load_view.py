"""What a load looks like on screen: the loader's signals bound to the widgets.

:class:`LoadView` is a GUI-thread QObject built with the
:class:`~glmdesk.ui.session.model_loader.ModelLoader` and the widgets it drives. It connects
to the loader itself: the load indicator while a model loads, then the model's name,
footprint and capabilities (status bar, memory gauge, image button, sidebar), its load
notes, or the sentence of a failed load; it remembers the model for the next start and
what Open model may offer.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal, Slot

from glmdesk.core.errors import ErrorInfo
from glmdesk.core.settings import LoadSettings
from glmdesk.engine.memory import MIB
from glmdesk.ui.common.messages import error_sentence, note_sentence


class LoadView(QObject):
    """Shows loads and the model in use.

    Args:
        loader: The :class:`~glmdesk.ui.session.model_loader.ModelLoader`.
        store: The :class:`~glmdesk.ui.common.settings_store.SettingsStore` (the last model).
        window: The main window (its title names the model).
        status, gauge, input_box, sidebar, notice: The window's widgets.

    Attributes:
        availability: ``{option key: None or ErrorInfo}`` from the last options check.

    Signals:
        load_error_shown(str): A load failed; the sentence shown.
    """

    load_error_shown = Signal(str)

    def __init__(self, loader, store, window, status, gauge, input_box, sidebar, notice) -> None:
        super().__init__(window)
        self.loader, self.store, self.window = loader, store, window
        self.status, self.gauge, self.input_box = status, gauge, input_box
        self.sidebar, self.notice = sidebar, notice
        self.availability: dict = {}
        loader.options_checked.connect(self._on_options_checked)
        loader.load_started.connect(self._on_load_started)
        loader.load_progressed.connect(self._on_load_progressed)
        loader.load_finished.connect(self.status.load_indicator.finish)
        loader.model_ready.connect(self._on_model_ready)
        loader.load_failed.connect(self._on_load_failed)

    @Slot(object)
    def _on_options_checked(self, availability: dict) -> None:
        self.availability = dict(availability)

    @Slot(object)
    def _on_load_started(self, settings: LoadSettings) -> None:
        self.status.load_indicator.start(settings.model or self.tr("the embedded model"))

    @Slot(object)
    def _on_load_progressed(self, progress) -> None:
        self.status.load_indicator.update_progress(progress.stage, progress.done, progress.total)

    @Slot(object)
    def _on_model_ready(self, info) -> None:
        loader = self.loader
        if loader.loaded_settings is not None:
            self.store.save_last_model(loader.loaded_settings)
        self.status.show_model(info)
        # On a GPU the gauge reads the card: weights kept in RAM (a MoE's experts) are not there.
        on_gpu = info.device.startswith("cuda")
        self.gauge.set_weights_bytes(int((info.footprint_mib - (info.offloaded_mib if on_gpu else 0)) * MIB))
        self.gauge.set_kv_bytes(loader.kept_kv_bytes())  # the new model's (a compiled step's warm-up slab)
        self.gauge.show_capabilities(loader.capabilities, info.device)
        caps = loader.capabilities
        no_vision = ErrorInfo("vision_unavailable", "", {"model": info.name, "engine": info.engine})
        sizing = caps.image_sizing if caps is not None else None  # the attach button, or why not
        self.input_box.set_vision(caps is not None and caps.vision, error_sentence(no_vision), sizing)
        if caps is not None:  # when sampling changes apply: per token or per answer
            self.sidebar.set_sampling_timing(caps.live_sampling)
        kv = caps.kv_strategies if caps is not None else {"full": None}
        self.sidebar.set_cache_availability(
            {k: (None if v is None else error_sentence(v)) for k, v in kv.items()}
        )
        if info.notes and self.notice.kind != "error":  # keep a load error visible (fallback model)
            self.notice.show_info(" ".join(note_sentence(note) for note in info.notes))
        self.window.setWindowTitle(self.tr("{model} - glmdesk").format(model=info.name))

    @Slot(object, bool)
    def _on_load_failed(self, error: ErrorInfo, fallback: bool) -> None:
        sentence = error_sentence(error)
        if self.loader.model_info is not None:
            sentence = self.tr("{error} {model} stays in use.").format(
                error=sentence, model=self.loader.model_info.name
            )
            if error.kind == "load_cancelled":
                self.notice.show_info(sentence)
            else:
                self.notice.show_error(sentence)
        elif fallback:
            sentence = self.tr("{error} The embedded model is loaded instead.").format(error=sentence)
            self.notice.show_error(sentence)
        else:
            self.notice.show_error(sentence)
        self.load_error_shown.emit(sentence)
