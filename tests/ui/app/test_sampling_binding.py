"""A loaded model's family gives its sampling defaults to a user who never changed a
setting, without remembering them as the user's own; a user's settings stay."""

from __future__ import annotations

import dataclasses

from glmdesk.core.settings import SamplingParams
from glmdesk.ui.app.main_window import MainWindow
from glmdesk.ui.common.settings_store import SettingsStore
from tests.helpers.fake_backend import FakeBackend

MS = 10_000


def glm45_backend() -> FakeBackend:
    """A fake GLM-4.5 model (its family's defaults: temperature 0.6, top-p 0.95, 4096 tokens)."""
    backend = FakeBackend(name="GLM-4.5-Air")
    backend._info = dataclasses.replace(backend._info, family="glm4-moe")
    return backend


def ready_window(qtbot, store: SettingsStore) -> MainWindow:
    window = MainWindow(store=store, backend=glm45_backend(), options=lambda: {})
    qtbot.addWidget(window)
    with qtbot.waitSignal(window.loader.model_ready, timeout=MS):
        window.start()
    return window


def test_the_family_defaults_apply_to_a_user_who_never_changed_a_setting(qtbot):
    store = SettingsStore()
    window = ready_window(qtbot, store)
    try:
        shown = window.sidebar.params()
        assert (shown.temperature, shown.top_p, shown.max_new_tokens) == (0.6, 0.95, 4096)
        assert window.params_box.get() == shown  # the next answer uses them
        assert store.sampling() is None  # not remembered as the user's own
    finally:
        window.close()


def test_a_users_own_settings_stay_when_a_model_loads(qtbot):
    store = SettingsStore()
    store.save_sampling(SamplingParams(temperature=1.1, top_p=0.5, max_new_tokens=77))
    window = ready_window(qtbot, store)
    try:
        shown = window.sidebar.params()
        assert (shown.temperature, shown.top_p, shown.max_new_tokens) == (1.1, 0.5, 77)
        window.sidebar.set_params(dataclasses.replace(shown, temperature=0.3))
        assert store.sampling().temperature == 0.3 and window.params_box.get().temperature == 0.3
    finally:
        window.close()
