"""The sampling settings' life: remembered, shown in the sidebar, live in the decode loop,
and the model family's defaults once a model is in use."""

from __future__ import annotations

from PySide6.QtCore import QObject, Slot

from glmdesk.core.settings import ParamsBox, SamplingParams
from glmdesk.engine.families import sampling_defaults


def initial_params(store) -> ParamsBox:
    """The box the decode loop reads: the remembered settings, or the generic defaults
    until a model's family gives its own.

    Args:
        store: The :class:`~glmdesk.ui.common.settings_store.SettingsStore`.
    """
    return ParamsBox(store.sampling() or sampling_defaults("generic"))


class SamplingBinding(QObject):
    """Sidebar -> live parameters and settings store; a loaded model's family -> defaults.

    The sidebar's changes go into ``params_box`` (the decode loop reads it before the
    next token) and are remembered. When a model is ready, the sidebar learns its
    family's defaults (the "Defaults" button); a user who never changed a setting gets
    them applied, without remembering them as the user's own.

    Args:
        params_box: The live parameters (:func:`initial_params`).
        store: The :class:`~glmdesk.ui.common.settings_store.SettingsStore`.
        sidebar: The window's :class:`~glmdesk.ui.sidebar.sidebar.Sidebar`.
        loader: The :class:`~glmdesk.ui.session.model_loader.ModelLoader`.
        parent: The owning QObject (the window).
    """

    def __init__(self, params_box: ParamsBox, store, sidebar, loader, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.params_box, self.store, self.sidebar, self.loader = params_box, store, sidebar, loader
        self._applying_defaults = False
        sidebar.params_changed.connect(self._on_params_changed)
        loader.model_ready.connect(self._on_model_ready)

    @Slot(object)
    def _on_model_ready(self, info) -> None:
        caps = self.loader.capabilities
        no_switch = self.tr("{model} has no thinking switch (GLM-4.5/4.6/4.7 have one).").format(
            model=info.name
        )
        self._applying_defaults = True  # the model's switch, not the user's choice: not saved
        try:
            self.sidebar.set_thinking_available(caps is not None and caps.thinking_switch, no_switch)
            no_levels = self.tr("{model} has no reasoning effort levels (GLM-5.2 and 5.3 have them).").format(
                model=info.name
            )
            self.sidebar.set_effort_levels(tuple(getattr(info, "effort_levels", ())), no_levels)
        finally:
            self._applying_defaults = False
        defaults = sampling_defaults(info.family)
        self.sidebar.set_defaults(defaults)
        if self.store.sampling() is None:
            self._applying_defaults = True
            try:
                self.sidebar.set_params(defaults)
            finally:
                self._applying_defaults = False

    @Slot(object)
    def _on_params_changed(self, params: SamplingParams) -> None:
        self.params_box.set(params)  # the decode loop reads it before the next token
        if not self._applying_defaults:
            self.store.save_sampling(params)
