"""A server's answer that thinks first: the finished Thinking block says how long it
thought, timed in the window when the server sends no times (it said only "Thought")."""

from __future__ import annotations

import re

import pytest

from glmdesk.core.settings import LoadSettings, SamplingParams
from glmdesk.engine.backends.transformers.loader import load_model
from tests.helpers import glm45_models
from tests.helpers import tool_models as tm

MS = 120_000


@pytest.fixture
def served_glm45(tmp_path):
    from glmdesk.engine.backends.transformers.backend import TransformersBackend
    from glmdesk.server.app import create_app
    from glmdesk.server.config import ServeSettings
    from glmdesk.server.runner import ServerThread

    model = load_model(
        LoadSettings(model=str(glm45_models.write_glm45(tmp_path / "GLM-4.5-Air")), device="cpu")
    )
    tok = model.tokenizer
    reply = tok.encode("\n<think>let me think</think>\nParis.", add_special_tokens=False)
    forcer = tm.ForceTokens([reply + [tok.convert_tokens_to_ids("<|user|>")]])
    model.logits_processors = lambda: (forcer,)
    settings = ServeSettings(port=0)
    server = ServerThread(create_app(TransformersBackend(model), settings), settings).start()
    yield server
    server.stop(timeout_s=5)
    model.close()


def test_a_servers_thinking_is_timed_in_the_window(qtbot, make_window, served_glm45) -> None:
    window = make_window()
    with qtbot.waitSignal(window.loader.model_ready, timeout=MS):
        window.load_model(LoadSettings(remote_url=served_glm45.url))
    window.sidebar.set_params(SamplingParams(temperature=0.0, top_p=1.0, max_new_tokens=40))
    with qtbot.waitSignal(window.session.answer_finished, timeout=MS):
        assert window.send_message("Capital of France?")
    widget = window.chat_view.messages()[-1]
    assert widget.reasoning().strip() == "let me think"
    header = widget.reasoning_block.header_text()
    assert re.match(r"Thought for (\d+\.\d s|\d+ ms)", header), header
