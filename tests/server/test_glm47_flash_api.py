"""GLM-4.7-Flash's GGUF (``deepseek2``) served by ``glmdesk serve`` on llama.cpp, read with
the official ``openai`` client: its thinking (the prompt opened ``<think>``) comes as
``reasoning_content`` and its XML call as ``tool_calls``, streamed and whole, as vLLM
returns them with its GLM-4.5 parsers."""

from __future__ import annotations

import json

import openai
import pytest

from glmdesk.core.settings import LoadSettings
from glmdesk.engine.backends.llamacpp.backend import LlamaCppBackend
from glmdesk.server.app import create_app
from glmdesk.server.config import ServeSettings
from glmdesk.server.runner import ServerThread
from tests.helpers import tool_models as tm
from tests.helpers.gguf_models import write_gguf
from tests.helpers.glm47_flash_models import write_glm47_flash

CALL = (
    "I need the weather.</think>\n<tool_call>get_weather\n"
    "<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>"
)
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}
ASK = [{"role": "user", "content": "what is the weather today in Paris?"}]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("glm47-flash")
    path = write_gguf(write_glm47_flash(root / "GLM-4.7-Flash"), root / "GLM-4.7-Flash-F32.gguf")
    backend = LlamaCppBackend()
    backend.load(LoadSettings(model=str(path), engine="llamacpp"))
    settings = ServeSettings(port=0, queue_size=4)
    srv = ServerThread(create_app(backend, settings), settings).start()
    yield srv, backend.model
    srv.stop()
    backend.close()


def test_reasoning_and_tool_calls_reach_the_openai_client(served, monkeypatch):
    srv, model = served
    vocab = model.vocab
    script = vocab.encode(CALL, special=True) + [vocab.special_id("<|observation|>")]
    forcer = tm.ForceTokens([script])
    monkeypatch.setattr(model, "logits_processors", lambda: (forcer,))
    client = openai.OpenAI(base_url=srv.url, api_key="none")
    whole = client.chat.completions.create(
        model="GLM-4.7-Flash-F32", messages=ASK, tools=[WEATHER], temperature=0
    )
    choice = whole.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.model_extra["reasoning_content"] == "I need the weather."
    (call,) = choice.message.tool_calls
    assert (call.function.name, json.loads(call.function.arguments)) == ("get_weather", {"city": "Paris"})

    events = list(
        client.chat.completions.create(
            model="GLM-4.7-Flash-F32", messages=ASK, tools=[WEATHER], temperature=0, stream=True
        )
    )
    deltas = [e.choices[0].delta for e in events if e.choices]
    assert "".join(d.model_extra.get("reasoning_content") or "" for d in deltas) == "I need the weather."
    pieces = [t for d in deltas for t in d.tool_calls or []]
    assert pieces[0].function.name == "get_weather"
    assert json.loads("".join(t.function.arguments or "" for t in pieces)) == {"city": "Paris"}
    assert [e.choices[0].finish_reason for e in events if e.choices][-1] == "tool_calls"
