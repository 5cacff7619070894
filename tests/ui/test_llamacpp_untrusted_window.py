"""The window on a machine whose installed llama.cpp build crashes on a prompt batch (as
its AMX path does on some Xeons): the build's smoke test, in a child process, sees the
SIGSEGV before the first load that would switch to it, the window answers on
transformers, and the model facts say which build, the signal and what to do."""

from __future__ import annotations

import pytest

from glmdesk.core.settings import LoadSettings, SamplingParams
from tests.helpers.fake_llamacpp import fake_build, install_on_path

LOAD_MS = 180_000
ANSWER_MS = 120_000


@pytest.fixture
def crashing_build(tmp_path, monkeypatch):
    monkeypatch.setenv("GLMDESK_LLAMACPP_VERDICTS", str(tmp_path / "verdicts.json"))
    return install_on_path(fake_build(tmp_path / "site", "crash"), monkeypatch)


def test_a_crashing_build_is_not_used_and_the_facts_say_why(qtbot, make_window, crashing_build) -> None:
    window = make_window(start=False)
    with qtbot.waitSignal(window.loader.model_ready, timeout=LOAD_MS) as ready:
        window.load_model(LoadSettings(device="cpu"))
    info = ready.args[0]
    assert info.engine == "transformers" and info.quantization == "int4-wo"
    line = (
        "Engine: transformers, int4-wo. llama.cpp (llama-cpp-python 0.3.36) crashed (SIGSEGV) on its "
        "test answer, so it is not used and transformers answers. Keep transformers, or rebuild "
        "llama.cpp: glmdesk build-llamacpp"
    )
    qtbot.waitUntil(lambda: window.status.engine_label.text() == line, timeout=10_000)
    assert window.chat_area.welcome.model_label.text().endswith("\n" + line)
    window.sidebar.set_params(SamplingParams(temperature=0.0, top_p=1.0, max_new_tokens=12))
    with qtbot.waitSignal(window.session.answer_finished, timeout=ANSWER_MS):
        assert window.send_message("What is the capital of Japan?")
    assert "Tokyo" in window.chat_view.messages()[-1].text()
