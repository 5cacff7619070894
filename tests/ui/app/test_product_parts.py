"""The welcome, About, Keyboard shortcuts and Recent models (widgets on their own)."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence

from glmdesk.engine.info import ModelInfo
from glmdesk.ui.app.about_dialog import AboutDialog
from glmdesk.ui.app.shortcuts_dialog import ShortcutsDialog
from glmdesk.ui.chat.welcome import WelcomeWidget, size_text
from glmdesk.ui.common.settings_store import RECENT_MODELS, SettingsStore
from glmdesk.ui.models.open_model_dialog import OpenModelDialog
from glmdesk.ui.models.recent_models import RecentModelsMenu, recent_label


def _info(**changes) -> ModelInfo:
    values = dict(
        name="chatglm3-6b",
        family="chatglm3",
        source_kind="folder",
        location="/models/chatglm3-6b",
        device="cuda:0",
        dtype="bf16",
        quantization="4bit",
        footprint_mib=3900.0,
        context_length=8192,
        kv_bytes_per_token=57344,
        prompt_format="chatglm3",
    )
    values.update(changes)
    return ModelInfo(**values)


def test_welcome_names_the_model_and_sends_an_example(qtbot) -> None:
    welcome = WelcomeWidget()
    qtbot.addWidget(welcome)
    assert not any(b.isEnabled() for b in welcome.example_buttons)  # nothing to answer yet
    welcome.set_model(_info())
    assert welcome.title_label.text() == "Chat with chatglm3\u20116b"  # never broken at the hyphen
    facts = welcome.model_label.text()
    for part in ("3.8 GiB on GPU 0", "4-bit weights (bitsandbytes NF4), bf16 compute", "8,192"):
        assert part in facts, part
    assert "cuda:" not in facts and "4bit" not in facts
    assert len(welcome.example_buttons) == 3
    assert any(any("\u4e00" <= ch <= "\u9fff" for ch in b.text()) for b in welcome.example_buttons)
    with qtbot.waitSignal(welcome.prompt_chosen, timeout=1000) as blocker:
        qtbot.mouseClick(welcome.example_buttons[1], Qt.MouseButton.LeftButton)
    assert blocker.args == [welcome.example_buttons[1].text()]
    with qtbot.waitSignal(welcome.open_model_requested, timeout=1000):
        qtbot.mouseClick(welcome.open_button, Qt.MouseButton.LeftButton)
    welcome.set_model(_info(source_kind="embedded", device="cpu", dtype="fp32", quantization="none"))
    assert "CPU" in welcome.model_label.text() and "embedded" in welcome.model_label.text()
    # The small English model gets examples it answers well (benchmarks/factual.py).
    assert [b.text() for b in welcome.example_buttons][0] == "What is the capital of Japan?"
    welcome.set_engine_line("Engine: llama.cpp, the fastest here for a GGUF file")
    assert welcome.model_label.text().endswith("\nEngine: llama.cpp, the fastest here for a GGUF file")
    assert size_text(540.4) == "540 MiB"
    welcome.set_model(
        _info(engine="llamacpp", device="cpu", dtype="fp32", quantization="Q4_1", family="gguf")
    )
    assert "Q4_1 GGUF on llama.cpp" in welcome.model_label.text() and "fp32" not in welcome.model_label.text()
    welcome.set_model(
        _info(engine="remote", device="http://127.0.0.1:8000/v1", location="http://127.0.0.1:8000/v1",
              dtype="server", quantization="none", footprint_mib=0.0, family="remote")
    )  # fmt: skip
    facts = welcome.model_label.text()
    assert facts.startswith("Answered by the server at http://127.0.0.1:8000/v1") and "MiB" not in facts


def test_about_shows_versions_and_the_apache_licence(qtbot) -> None:
    dialog = AboutDialog()
    qtbot.addWidget(dialog)
    from glmdesk import __version__

    assert __version__ in dialog.findChildren(type(dialog.parts_label))[0].text()
    assert "SmolLM2-135M-Instruct" in dialog.parts_label.text()
    assert "Apache-2.0" in dialog.parts_label.text()
    assert "Apache License" in dialog.licence_view.toPlainText()
    assert "Version 2.0" in dialog.licence_view.toPlainText()


def test_shortcuts_lists_every_action_with_keys(qtbot) -> None:
    with_keys = QAction("&Open model...")
    with_keys.setShortcut(QKeySequence("Ctrl+O"))
    without = QAction("About")
    dialog = ShortcutsDialog([with_keys, without])
    qtbot.addWidget(dialog)
    rows = dialog.rows()
    assert ("Open model...", QKeySequence("Ctrl+O").toString(QKeySequence.SequenceFormat.NativeText)) in rows
    assert all(what != "About" for what, _ in rows)
    assert ("Send the message", "Enter") in rows


def test_recent_models_newest_first_bounded_and_clearable(qtbot, tmp_path) -> None:
    store = SettingsStore()
    assert store.recent_models() == []
    folder = tmp_path / "glm-4-9b-chat"
    folder.mkdir()
    for i in range(RECENT_MODELS + 2):
        store.add_recent_model(f"/models/m{i}")
    store.add_recent_model(None)
    store.add_recent_model(str(folder))
    store.add_recent_model("/models/m9")  # again: moves to the front, no duplicate
    models = SettingsStore().recent_models()
    assert models[:3] == ["/models/m9", str(folder), None]
    assert len(models) == RECENT_MODELS and len(set(models)) == RECENT_MODELS

    menu = RecentModelsMenu(store)
    qtbot.addWidget(menu)
    assert menu.models() == models
    labels = [a.text() for a in menu.actions()]
    assert "&2 glm-4-9b-chat" in labels
    assert recent_label(None) in labels[2]
    with qtbot.waitSignal(menu.model_chosen, timeout=1000) as blocker:
        menu.actions()[2].trigger()
    assert blocker.args == [None]

    dialog = OpenModelDialog(recent=models)
    qtbot.addWidget(dialog)
    assert dialog.recent_combo.count() == len(models) + 1
    dialog.recent_combo.activated.emit(2)
    assert dialog.model_edit.text() == str(folder)
    assert dialog.trust_check.isEnabled()  # a real folder: the trust box names it

    [a for a in menu.actions() if a.text() == "&Clear the list"][0].trigger()
    assert store.recent_models() == [] and menu.models() == []


def test_a_damaged_recent_list_reads_as_empty(qtbot) -> None:
    store = SettingsStore()
    store.qsettings.setValue("model/recent", "{not json")
    assert store.recent_models() == []
    store.qsettings.setValue("model/recent", '{"a": 1}')
    assert store.recent_models() == []


def test_unmeasured_load_steps_show_a_busy_bar_and_the_seconds(qtbot) -> None:
    from glmdesk.ui.app.load_indicator import LoadIndicator

    indicator = LoadIndicator()
    qtbot.addWidget(indicator)
    indicator.start("SmolLM2-135M-Instruct")
    indicator.update_progress("converting", 0, 0)
    assert indicator.bar.maximum() == 0  # Qt's moving busy indicator, not a bar stuck at 0
    qtbot.waitUntil(lambda: "(1 s)" in indicator.stage_label.text(), timeout=5000)
    assert indicator.stage_label.text().startswith("Converting (first use only)")
    indicator.update_progress("loading", 2, 4)
    assert (indicator.bar.maximum(), indicator.bar.value()) == (4, 2)
    assert not indicator._ticker.isActive()
    indicator.finish()
    assert not indicator.isVisible()


def test_sidebar_sections_fold_and_advanced_rows_hide(qtbot) -> None:
    from glmdesk.ui.sidebar.sidebar import Sidebar

    sidebar = Sidebar()
    qtbot.addWidget(sidebar)
    sidebar.resize(400, 700)
    sidebar.show()
    sections = sidebar.sections
    headers = [sections[f"section{i}"].text() for i in range(6)]
    assert headers == ["Sampling", "System prompt", "Tools", "KV cache", "Model", "Interface"]
    assert not sidebar.tools_panel.isVisible()  # closed at start, like every section but the first two
    assert sidebar.temperature.isVisible() and not sidebar.cache_combo.isVisible()
    assert not sidebar.min_p.isVisible() and not sidebar.seed.isVisible()
    sections["sampling_advanced"].click()
    assert sidebar.min_p.isVisible() and sidebar.seed.isVisible() and sidebar.repetition_penalty.isVisible()
    sections["section3"].click()
    assert sidebar.cache_combo.isVisible() and not sidebar.budget_spin.isVisible()
    sections["cache_advanced"].click()
    assert sidebar.budget_spin.isVisible() and sidebar.sinks_spin.isVisible()
    sections["section0"].click()
    assert not sidebar.temperature.isVisible()
    # The controls still work folded: a value set while hidden is read back.
    sidebar.min_p.setValue(0.05)
    assert sidebar.params().min_p == 0.05


def test_splash_caption_sits_below_the_icon(qtbot) -> None:
    from glmdesk.ui.app.app import _app_icon, startup_splash

    splash = startup_splash(_app_icon())
    qtbot.addWidget(splash)
    image = splash.pixmap().toImage()
    assert image.height() >= 256 + 40
    band = {image.pixelColor(x, y).name() for x in (4, 128, 250) for y in range(262, image.height(), 8)}
    assert band == {"#2b2d31"}  # plain background under the icon, where the caption is drawn
