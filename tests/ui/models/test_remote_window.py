"""The window as the client of a real ``glmdesk serve`` on 127.0.0.1: the sidebar and the
memory gauge word the remote backend's ``Capabilities`` (sampling per answer, no local KV
cache, the server's KV-cache use from its Prometheus ``/metrics``), and Open model greys
out this computer's load options for a server."""

from __future__ import annotations

import pytest

from glmdesk.core.settings import LoadSettings, SamplingParams
from glmdesk.ui.common.messages import error_sentence

ANSWER_MS = 180_000
LOAD_MS = 120_000


@pytest.fixture
def served(shared_model):
    """``glmdesk serve`` over the shared embedded model on a free port."""
    from glmdesk.engine.backends.transformers.backend import TransformersBackend
    from glmdesk.server.app import create_app
    from glmdesk.server.config import ServeSettings
    from glmdesk.server.runner import ServerThread

    settings = ServeSettings(port=0)
    server = ServerThread(create_app(TransformersBackend(shared_model), settings), settings).start()
    yield server
    server.stop(timeout_s=5)


def _local_state(window) -> None:
    sidebar, gauge = window.sidebar, window.gauge
    assert "next token" in sidebar.sampling_timing.text()
    assert sidebar.cache_combo.isEnabled() and sidebar.cache_reason.isHidden()
    assert gauge.remote_url is None and "remote" not in gauge.title_label.text()
    assert not gauge.plot.isHidden() and "server" not in gauge.amount_label.text()


def test_sidebar_and_gauge_word_the_remote_capabilities(qtbot, make_window, shared_model, served):
    window = make_window(shared_model)
    _local_state(window)
    sidebar, gauge = window.sidebar, window.gauge
    with qtbot.waitSignal(window.loader.model_ready, timeout=LOAD_MS):
        window.load_model(LoadSettings(remote_url=served.url))
    caps = window.session.loader.capabilities
    assert caps.memory_probe == "remote" and not caps.live_sampling

    # Sampling applies per answer; no KV-cache choice here, with the reason.
    assert (
        "next answer" in sidebar.sampling_timing.text() and "next token" not in sidebar.sampling_timing.text()
    )
    assert not sidebar.cache_combo.isEnabled()
    assert not any(w.isEnabled() for w in (sidebar.window_spin, sidebar.sinks_spin, sidebar.budget_spin))
    reason = error_sentence(caps.kv_strategies["full"])
    assert (
        "server" in reason and sidebar.cache_reason.text() == reason and not sidebar.cache_reason.isHidden()
    )

    # The code interpreter is not offered to a server: the Tools section says so.
    tools = window.sidebar.tools_panel
    assert tools.note_label.isHidden()
    tools.set_mode("interpreter")
    assert not tools.note_label.isHidden() and "not offered" in tools.note_label.text()
    tools.set_mode("none")
    assert tools.note_label.isHidden()

    # The gauge: "remote", then the server's own KV-cache figure from /metrics.
    assert "remote" in gauge.title_label.text() and gauge.plot.isHidden() and gauge.split_label.isHidden()
    qtbot.waitUntil(lambda: gauge.remote_usage is not None, timeout=30_000)
    assert gauge.remote_usage == 0.0 and "0.0%" in gauge.amount_label.text()  # idle
    window.sidebar.set_params(SamplingParams(temperature=0.0, top_p=1.0, max_new_tokens=400))
    with qtbot.waitSignal(window.session.answer_finished, timeout=ANSWER_MS):
        assert window.send_message("Write a long story about a dragon.")
        qtbot.waitUntil(lambda: (gauge.remote_usage or 0.0) > 0.0, timeout=ANSWER_MS)
        window.stop_answer()
    assert "%" in gauge.amount_label.text() and "0.0%" not in gauge.amount_label.text()

    # The server goes away: the figure goes, "remote" stays.
    served.stop(timeout_s=5)
    qtbot.waitUntil(lambda: gauge.remote_usage is None, timeout=30_000)
    assert "remote" in gauge.title_label.text() and "%" not in gauge.amount_label.text()
    assert served.url in gauge.amount_label.text()

    # A local model again: per-token sampling, the KV-cache choice and this machine's memory.
    with qtbot.waitSignal(window.loader.model_ready, timeout=LOAD_MS):
        window.load_model(LoadSettings())
    _local_state(window)


def test_open_model_greys_out_local_options_for_a_server(qtbot):
    from glmdesk.ui.models.open_model_dialog import OpenModelDialog

    dialog = OpenModelDialog(LoadSettings())
    qtbot.addWidget(dialog)
    assert dialog.local_options.isEnabled() and dialog.local_reason.isHidden()
    assert dialog.quantization_combo.isEnabled()
    dialog.remote_box.setChecked(True)
    assert not dialog.quantization_combo.isEnabled() and not dialog.precision_combo.isEnabled()
    assert not dialog.local_reason.isHidden() and "server" in dialog.local_reason.text()
    assert dialog.local_options.toolTip() == dialog.local_reason.text()
    dialog.remote_box.setChecked(False)
    assert dialog.quantization_combo.isEnabled() and dialog.local_reason.isHidden()

    remote = OpenModelDialog(LoadSettings(remote_url="http://gpu-box:8000/v1"))
    qtbot.addWidget(remote)
    assert not remote.local_options.isEnabled() and not remote.local_reason.isHidden()


def test_sampling_timing_follows_the_capabilities_fields(qtbot):
    from glmdesk.engine.backends.base import SAMPLING_FIELDS, Capabilities
    from glmdesk.ui.sidebar.sidebar import Sidebar

    sidebar = Sidebar()
    qtbot.addWidget(sidebar)
    assert "next token" in sidebar.sampling_timing.text()  # before any model: the local engines' rule
    mixed = Capabilities(engine="x", live_sampling=frozenset({"temperature", "max_new_tokens"}))
    sidebar.set_sampling_timing(mixed.live_sampling)
    text = sidebar.sampling_timing.text()
    assert text.startswith("Temperature, Max new tokens apply from the next token") and "next answer" in text
    sidebar.set_sampling_timing(frozenset())
    assert "next answer" in sidebar.sampling_timing.text()
    sidebar.set_sampling_timing(Capabilities(engine="x").live_sampling)
    assert sidebar.sampling_timing.text().startswith("Applies from the next token")
    assert Capabilities(engine="x").live_sampling == frozenset(SAMPLING_FIELDS) - {"seed"}
