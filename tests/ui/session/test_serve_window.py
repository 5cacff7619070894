"""The window as a server ("Serve on localhost") and as a client of a real
OpenAI-compatible server (the remote backend against ``glmdesk serve`` on 127.0.0.1)."""

from __future__ import annotations

import threading
from dataclasses import replace

import httpx
import openai
import pytest

from glmdesk.core.settings import LoadSettings, SamplingParams

ANSWER_MS = 180_000
LOAD_MS = 120_000


def _send(qtbot, window, text: str):
    with qtbot.waitSignal(window.session.answer_finished, timeout=ANSWER_MS) as blocker:
        assert window.send_message(text)
    return blocker.args[1]


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


def test_serve_toggle_shares_the_model_and_stops_with_the_window(qtbot, make_window, shared_model):
    window = make_window(shared_model)
    window.serve.port = 0
    file_actions = window.file_menu.actions()
    assert window.serve.action not in file_actions  # not one slip above Quit
    server_menu = window.menus.server_menu
    assert server_menu.actions()[:2] == [window.serve.action, window.serve.address_action]
    assert window.serve.address_action.text() == "Not serving"
    with qtbot.waitSignal(window.serve.serving_started, timeout=60_000) as started:
        window.serve.action.setChecked(True)
    url = started.args[0]
    assert window.serve.label.isVisible() and window.serve.label.text() == "Serving · 0 requests"
    assert url in window.serve.label.toolTip() and url not in window.serve.label.text()  # said once
    assert window.serve.address_action.text() == f"Serving at {url}"
    client = openai.OpenAI(base_url=url, api_key="none", max_retries=0, timeout=120)
    served: dict = {}

    def ask() -> None:  # a client of the window's model while the window answers too
        reply = client.chat.completions.create(
            model=window.model_info.name,
            messages=[{"role": "user", "content": "What is the capital of France?"}],
            temperature=0,
            max_tokens=24,
        )
        served["text"] = reply.choices[0].message.content

    thread = threading.Thread(target=ask)
    thread.start()
    final = _send(qtbot, window, "What is the capital of France?")
    thread.join(180)
    assert final.finish_reason == "stop" and "Paris" in window.state.messages[-1].content
    assert "Paris" in served["text"]
    qtbot.waitUntil(lambda: window.serve.requests == 1, timeout=10_000)
    assert window.serve.label.text() == "Serving · 1 request"
    window.close()
    assert not window.serve.is_serving()
    with pytest.raises(httpx.ConnectError):
        httpx.get(url.removesuffix("/v1") + "/health", timeout=5)


def test_remote_answer_stop_and_server_gone(qtbot, make_window, served):
    window = make_window()
    with qtbot.waitSignal(window.loader.model_ready, timeout=LOAD_MS):
        window.load_model(LoadSettings(remote_url=served.url))
    assert (
        window.model_info.engine == "remote" and window.session.loader.capabilities.memory_probe == "remote"
    )
    window.sidebar.set_params(SamplingParams(temperature=0.0, top_p=1.0, max_new_tokens=24))
    final = _send(qtbot, window, "What is the capital of France?")
    assert final.finish_reason == "stop" and "Paris" in window.state.messages[-1].content
    assert served.url in window.state.records[-1].model  # history names the server, never a key

    window.sidebar.set_params(replace(window.sidebar.params(), max_new_tokens=300))
    chunks: list = []
    window.session.step_shown.connect(lambda *args: chunks.append(args))
    with qtbot.waitSignal(window.session.answer_finished, timeout=ANSWER_MS) as finished:
        window.send_message("Write a long story about a dragon.")
        qtbot.waitUntil(lambda: len(chunks) >= 3, timeout=ANSWER_MS)
        window.stop_answer()
    assert finished.args[1].finish_reason == "cancelled" and window.state.messages[-1].content

    chunks.clear()
    with qtbot.waitSignal(window.session.answer_finished, timeout=ANSWER_MS) as finished:
        window.send_message("Write another long story about a dragon.")
        qtbot.waitUntil(lambda: len(chunks) >= 3, timeout=ANSWER_MS)
        served.server.force_exit = True  # the server goes away mid-answer
        served.stop(timeout_s=5)
    last = finished.args[1]
    assert last.finish_reason == "error" and last.error.kind in ("connection_lost", "server_error")
    assert window.state.messages[-1].role == "assistant" and window.state.messages[-1].content
    assert window.state.records[-1].error.kind == last.error.kind


def test_open_model_lists_a_servers_models(qtbot, served, shared_model):
    from glmdesk.ui.models.open_model_dialog import OpenModelDialog

    dialog = OpenModelDialog(LoadSettings())
    qtbot.addWidget(dialog)
    box = dialog.remote_box
    assert not box.isChecked() and dialog.load_settings().engine == "auto"
    box.setChecked(True)
    box.url_edit.setText("ftp://nowhere")
    dialog.accept()  # refused with the sentence, the dialog stays open
    assert "http:// or https://" in box.status_label.text() and dialog.result() == 0
    box.url_edit.setText(served.url)
    box.key_edit.setText("sesame-123")
    with qtbot.waitSignal(box.models_listed, timeout=60_000) as listed:
        box.list_button.click()
    name = served.server.config.app.state.glmdesk.model_id
    assert listed.args[0] == [name] and box.model_combo.currentText() == name
    settings = dialog.load_settings()
    assert (settings.engine, settings.remote_url, settings.remote_model) == ("remote", served.url, name)
    assert settings.remote_api_key == "sesame-123" and "sesame-123" not in repr(settings)


def test_remote_key_never_reaches_qsettings(isolated_qsettings, monkeypatch):
    from glmdesk.ui.common.settings_store import SettingsStore

    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")  # no keyring here
    store = SettingsStore()
    url = "http://gpu-box:8000/v1"
    store.save_last_model(LoadSettings(remote_url=url, remote_model="glm-4", remote_api_key="sesame-123"))
    store.sync()
    written = "".join(p.read_text(errors="replace") for p in isolated_qsettings.rglob("*") if p.is_file())
    assert url in written and "sesame-123" not in written
    back = store.last_model()
    assert (back.engine, back.remote_url, back.remote_model, back.remote_api_key) == (
        "remote",
        url,
        "glm-4",
        None,
    )
    store.save_last_model(LoadSettings())
    assert store.last_model().engine == "auto"
