"""Server fixtures: the real embedded model behind a real ``glmdesk serve`` app on a
free port of 127.0.0.1 (uvicorn on its own thread), loaded once per session."""

from __future__ import annotations

import pytest

from glmdesk.engine.backends.transformers.backend import TransformersBackend
from glmdesk.server.app import create_app
from glmdesk.server.config import ServeSettings
from glmdesk.server.runner import ServerThread
from tests.helpers import tool_models as tm


@pytest.fixture(scope="session")
def backend(embedded):
    """The session's embedded model (SmolLM2-135M-Instruct, fp32, CPU) as a transformers
    backend (it does not close a model it was given)."""
    return TransformersBackend(embedded)


@pytest.fixture(scope="module")
def server(backend):
    """``glmdesk serve`` over :func:`backend` on a free port; stopped after the module."""
    settings = ServeSettings(port=0, queue_size=4)
    srv = ServerThread(create_app(backend, settings), settings).start()
    yield srv
    srv.stop()


@pytest.fixture
def state(server):
    """The running server's :class:`~glmdesk.server.app.ServerState`."""
    return server.server.config.app.state.glmdesk


#: An OpenAI ``tools`` entry and a question for it (tool tests against a real server).
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "查询天气",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}
ASK = [{"role": "user", "content": "北京天气怎么样？"}]


@pytest.fixture(scope="session")
def tiny(tmp_path_factory):
    """A tiny GLM-4 model (random weights, trained tiny vocabulary; see tests/helpers/tool_models.py)."""
    return tm.tiny_glm4(tm.write_glm4_tokenizer(tmp_path_factory.mktemp("glm4tok")))


@pytest.fixture(scope="module")
def glm_server(tiny):
    """``glmdesk serve`` over the tiny GLM-4 model on a free port."""
    settings = ServeSettings(port=0, queue_size=4)
    srv = ServerThread(create_app(TransformersBackend(tiny), settings), settings).start()
    yield srv
    srv.stop()


def force_replies(tiny, *replies: str) -> None:
    """The next answers write ``replies`` (a call, name, newline and arguments, ends with
    ``<|observation|>``; an answer, starting with a newline or one line, with ``<|user|>``,
    as GLM-4 does)."""
    special = tiny.tokenizer.special_ids
    scripts = []
    for reply in replies:
        call = "\n" in reply and not reply.startswith("\n")  # GLM-4: name, newline, arguments
        end = special["<|observation|>"] if call else special["<|user|>"]
        scripts.append(tiny.tokenizer.encode(reply) + [end])
    forcer = tm.ForceTokens(scripts)
    tiny.logits_processors = lambda: (forcer,)


@pytest.fixture
def force(tiny):
    """``force(*replies)``: the tiny model's next answers write ``replies``."""
    return lambda *replies: force_replies(tiny, *replies)
