"""File -> Get a model: the catalog with fit marks, search, filters and "best that fits";
"not reachable" without a hub; a download in its own row with progress, pause and
resume (from where it stopped), Load with the forecast's engine, the finished model in
the recent models Open model lists; errors as sentences."""

from __future__ import annotations

import os

import pytest

from glmdesk.engine.catalog.catalog import parse_catalog
from glmdesk.engine.catalog.fit import machine_named
from glmdesk.ui.common.settings_store import SettingsStore
from glmdesk.ui.models.get_model_dialog import COLUMNS, GetModelDialog
from tests.helpers.fake_hub import FakeHub, FakeRepo

WEIGHTS = os.urandom(3 << 20)
MACHINE = machine_named(16, 64, disk_gb=500)
_TINY = {"hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2}
_TINY |= {"intermediate_size": 512, "vocab_size": 1000, "max_position_embeddings": 4096}


def _tiny_catalog():
    model = {
        "name": "GLM-Tiny",
        "family": "glm4-0414",
        "licence": "MIT",
        "context": 4096,
        "params_b": 0.003,
        "shape_source": "config.json",
        "config": _TINY,
        "repos": [
            {
                "repo": "glm/tiny-GGUF",
                "format": "gguf",
                "quants": [{"quant": "Q4_K_M", "size_bytes": len(WEIGHTS)}],
            },
            {"repo": "glm/gated-GGUF", "format": "gguf", "quants": [{"quant": "Q8_0", "size_bytes": 10}]},
        ],
    }
    return parse_catalog({"format": 1, "date": "2026-12-01", "models": [model]})


@pytest.fixture
def online(monkeypatch, tmp_path):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setenv("GLMDESK_MODELS_DIR", str(tmp_path / "models"))


@pytest.fixture
def hub(online, monkeypatch):
    # No token from this machine's keyring or hub login: the gated repository must answer 401.
    monkeypatch.setattr("glmdesk.engine.catalog.hub_files.saved_token", lambda: None)
    repos = {
        "glm/tiny-GGUF": FakeRepo({"tiny-Q4_K_M.gguf": WEIGHTS}, lfs={"tiny-Q4_K_M.gguf"}),
        "glm/gated-GGUF": FakeRepo({"gated-Q8_0.gguf": b"0123456789"}, gated=True),
    }
    with FakeHub(repos) as server:
        monkeypatch.setenv("HF_ENDPOINT", server.endpoint)
        yield server


def _dialog(qtbot, **kwargs) -> GetModelDialog:
    dialog = GetModelDialog(machine=lambda: MACHINE, **kwargs)
    qtbot.addWidget(dialog)
    dialog.show()
    return dialog


def _cells(dialog, column: str) -> list[str]:
    index = COLUMNS.index(column)
    return [dialog.table.item(row, index).text() for row in range(dialog.table.rowCount())]


def _select(dialog, download: str) -> None:
    dialog.table.selectRow(_cells(dialog, "download").index(download))


def test_the_catalog_shows_marks_best_first_and_filters_offline(qtbot, online, monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # refused
    dialog = _dialog(qtbot)
    try:
        qtbot.waitUntil(lambda: "not reachable" in dialog.status.text(), timeout=15_000)
        marks = _cells(dialog, "fit")
        assert marks[0] == "Fits" and marks[-1] == "Too big"
        assert marks == sorted(marks, key=["Fits", "Fits, slower", "Too big"].index)
        assert dialog.table.rowCount() == len(dialog.catalog.variants())
        first = dialog.rows[0]
        assert first[2].mark == "fits" and "16.0 GiB GPU" in _cells(dialog, "why")[0]
        dialog.search.setText("4.7-flash")
        assert dialog.table.rowCount() > 0 and all("GLM-4.7-Flash" == m for m in _cells(dialog, "model"))
        assert any("fits with experts in RAM" in why for why in _cells(dialog, "why"))
        dialog.search.setText("unsloth/GLM-4-32B-0414-GGUF:Q4_K_M")
        assert _cells(dialog, "runs") == ["GPU + CPU layers, medium"]
        assert "43 of 61 layers on the GPU" in _cells(dialog, "why")[0]
        dialog.search.clear()
        dialog.capability.setCurrentIndex(dialog.capability.findData("vision"))
        assert {m.vision for m, _, _ in dialog.rows} == {True}
        dialog.capability.setCurrentIndex(0)
        dialog.only_fits.setChecked(True)
        assert "Too big" not in _cells(dialog, "fit")
        dialog.sort.setCurrentIndex(dialog.sort.findData("size"))
        sizes = [v.size_bytes for _, v, _ in dialog.rows]
        assert sizes == sorted(sizes)
    finally:
        dialog.shutdown()


def test_a_download_pauses_resumes_where_it_stopped_and_loads_in_one_click(qtbot, hub):
    store = SettingsStore()
    hub.hold_after["tiny-Q4_K_M.gguf"] = 1 << 20
    dialog = _dialog(qtbot, store=store, catalog=_tiny_catalog())
    try:
        qtbot.waitUntil(lambda: "reachable" in dialog.status.text(), timeout=15_000)
        _select(dialog, "glm/tiny-GGUF:Q4_K_M")
        dialog.download_button.click()
        (job,) = dialog.downloads.jobs
        row = dialog.downloads.jobs[job]["row"]
        assert not dialog.download_button.isEnabled()  # not twice
        qtbot.waitUntil(lambda: " left " in row.detail.text(), timeout=15_000)
        assert row.bar.value() > 0
        row.pause_button.click()
        hub.hold_after.clear()
        hub.release.set()
        qtbot.waitUntil(lambda: row.pause_button.text() == "Resume", timeout=15_000)
        assert "Paused" in row.detail.text()
        with qtbot.waitSignal(dialog.downloads.worker.pulled, timeout=30_000):
            row.pause_button.click()
        qtbot.waitUntil(row.load_button.isVisible, timeout=5_000)
        starts = [start for path, start in hub.requests]
        assert (
            starts[0] == 0 and 0 < starts[1] <= 1 << 20 and len(starts) == 2
        )  # the resume asked for the rest
        path = dialog.downloads.jobs[job]["path"]
        assert path.endswith("tiny-Q4_K_M.gguf") and open(path, "rb").read() == WEIGHTS
        assert store.recent_models()[0] == path  # Open model lists it
        assert (
            "downloaded" in _cells(dialog, "size")[_cells(dialog, "download").index("glm/tiny-GGUF:Q4_K_M")]
        )
        with qtbot.waitSignal(dialog.load_requested, timeout=5_000) as loaded:
            row.load_button.click()
        assert loaded.args[0].model == path
        assert loaded.args[0].engine in ("llamacpp", "auto")
    finally:
        dialog.shutdown()


def test_a_gated_repository_says_what_to_do_in_its_row(qtbot, hub):
    dialog = _dialog(qtbot, catalog=_tiny_catalog())
    try:
        _select(dialog, "glm/gated-GGUF:Q8_0")
        dialog.download_button.click()
        (entry,) = dialog.downloads.jobs.values()
        qtbot.waitUntil(lambda: "needs permission" in entry["row"].detail.text(), timeout=15_000)
        assert "401" in entry["row"].detail.text() and "Hub token" in entry["row"].detail.text()
        assert entry["row"].pause_button.text() == "Retry"
    finally:
        dialog.shutdown()


def test_get_a_model_from_the_file_menu_never_blocks_chat_and_loads_what_it_pulled(
    qtbot, window, online, monkeypatch, tmp_path
):
    import json

    from PySide6.QtGui import QAction

    from glmdesk.engine.files.sources import embedded_gguf_path
    from tests.ui.conftest import ANSWER_TIMEOUT_MS, LOAD_TIMEOUT_MS

    gguf = embedded_gguf_path()
    entry = {
        "name": "SmolLM2-135M",
        "family": "generic",
        "licence": "Apache-2.0",
        "context": 8192,
        "params_b": 0.135,
        "shape_source": "config.json",
        "config": _TINY,
        "repos": [
            {
                "repo": "glm/smol-GGUF",
                "format": "gguf",
                "quants": [{"quant": "Q4_1", "size_bytes": gguf.stat().st_size}],
            }
        ],
    }
    catalog = tmp_path / "catalog.json"
    catalog.write_text(json.dumps({"format": 1, "date": "2026-12-01", "models": [entry]}))
    monkeypatch.setenv("GLMDESK_CATALOG", str(catalog))
    with FakeHub({"glm/smol-GGUF": FakeRepo({gguf.name: gguf.read_bytes()}, lfs={gguf.name})}) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
        hub.hold_after[gguf.name] = 4 << 20
        window.findChild(QAction, "get_model_action").trigger()
        dialog = window.findChild(GetModelDialog)
        assert dialog.isVisible() and not dialog.isModal()
        _select(dialog, "glm/smol-GGUF:Q4_1")
        dialog.download_button.click()
        assert hub.held.wait(15)  # the download is mid-file, held by the server...
        with qtbot.waitSignal(window.session.answer_finished, timeout=ANSWER_TIMEOUT_MS):
            window.send_message("What is the capital of France?")  # ...and the chat answers
        hub.release.set()
        (entry_,) = dialog.downloads.jobs.values()
        qtbot.waitUntil(entry_["row"].load_button.isVisible, timeout=60_000)
    dialog.close()
    assert dialog.isHidden()
    with qtbot.waitSignal(window.loader.model_ready, timeout=LOAD_TIMEOUT_MS):
        entry_["row"].load_button.click()
    assert window.load_settings.model == entry_["path"]
    assert window.store.recent_models()[0] == entry_["path"]


def test_a_pulled_model_is_offered_in_open_model(qtbot, hub):
    from glmdesk.core.settings import LoadSettings
    from glmdesk.engine.catalog.pull import Puller
    from glmdesk.engine.catalog.pulled import models_dir
    from glmdesk.ui.models.open_model_dialog import OpenModelDialog

    puller = Puller(models_dir(), hub_cache=False)
    folder = puller.pull(puller.plan("glm/tiny-GGUF", "Q4_K_M"))
    dialog = OpenModelDialog(LoadSettings(), {}, recent=[])
    qtbot.addWidget(dialog)
    combo = dialog.recent_combo
    labels = [combo.itemText(i) for i in range(combo.count())]
    assert "glm/tiny-GGUF:Q4_K_M (downloaded)" in labels and not combo.isHidden()
    index = labels.index("glm/tiny-GGUF:Q4_K_M (downloaded)")
    combo.activated.emit(index)
    assert dialog.model_edit.text() == str(folder / "tiny-Q4_K_M.gguf")
