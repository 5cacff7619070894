"""A new backend (one package, tests/helpers/new_backend.py) reaches the window with no
change to ui/: Open model lists its engine and renders its option, the choice is
remembered, and the window answers with it."""

from __future__ import annotations

import pytest

from glmdesk.core.settings import LoadSettings
from glmdesk.ui.common.settings_store import SettingsStore
from glmdesk.ui.models.open_model_dialog import OpenModelDialog
from tests.helpers.new_backend import install_echo, uninstall_echo


@pytest.fixture
def echo(tmp_path, monkeypatch):
    install_echo(tmp_path, monkeypatch)
    yield
    uninstall_echo()


def test_open_model_offers_the_new_engine_and_its_option(qtbot, echo) -> None:
    dialog = OpenModelDialog(LoadSettings(), {"engine:llamacpp": None, "llamacpp:gpu": None})
    qtbot.addWidget(dialog)
    combo = dialog.engine_combo
    assert combo.findData("echo") >= 0 and combo.itemText(combo.findData("echo")) == "echo"
    combo.setCurrentIndex(combo.findData("echo"))
    repeat = dialog.engine_options["echo"].field("echo_repeat")
    assert repeat.isEnabled() and (repeat.minimum(), repeat.maximum()) == (1, 5)
    assert not dialog.engine_options["llamacpp"].field("n_ctx").isEnabled()  # another engine's
    repeat.setValue(4)
    chosen = dialog.load_settings()
    assert (chosen.engine, chosen.option("echo_repeat")) == ("echo", 4)


def test_the_new_engines_option_is_remembered(qtbot, echo) -> None:
    store = SettingsStore()
    store.save_last_model(LoadSettings(engine="echo", echo_repeat=3, n_ctx=2048))
    again = store.last_model()
    assert (again.engine, again.option("echo_repeat"), again.n_ctx) == ("echo", 3, 2048)


def test_the_window_answers_on_the_new_engine(qtbot, make_window, echo) -> None:
    window = make_window(start=False)
    with qtbot.waitSignal(window.loader.model_ready, timeout=30_000) as ready:
        window.load_model(LoadSettings(engine="echo", echo_repeat=2))
    assert ready.args[0].engine == "echo"
    with qtbot.waitSignal(window.session.answer_finished, timeout=30_000) as finished:
        assert window.send_message("hello window")
    assert finished.args[1].finish_reason == "stop"
    assert window.chat_view.messages()[-1].text().strip() == "hello window hello window"
