"""A dense GLM-4-0414 checkpoint carrying GLM-4.7's published template, served by
``glmdesk serve`` and read with the official ``openai`` client: its reasoning comes
apart and its XML calls as ``tool_calls``; ``chat_template_kwargs`` reach the template
as vLLM passes them (``clear_thinking`` beside ``enable_thinking``)."""

from __future__ import annotations

import json

import openai
import pytest

from glmdesk.core.settings import LoadSettings
from glmdesk.engine.backends.transformers.backend import TransformersBackend
from glmdesk.server.app import create_app
from glmdesk.server.config import ServeSettings
from glmdesk.server.runner import ServerThread
from tests.helpers import tool_models as tm
from tests.helpers.published_templates import GLM47_TEMPLATE, write_dense_glm

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": ["string", "null"]}}},
    },
}
ASK = [{"role": "user", "content": "what is the weather today in Paris?"}]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    folder = write_dense_glm(tmp_path_factory.mktemp("dense47") / "GLM-4-9B-0414-tune", GLM47_TEMPLATE)
    backend = TransformersBackend()
    backend.load(LoadSettings(model=str(folder), device="cpu"))
    settings = ServeSettings(port=0, queue_size=4)
    srv = ServerThread(create_app(backend, settings), settings).start()
    yield srv, backend.loaded
    srv.stop()
    backend.close()


def _script(loaded, *texts: str) -> None:
    tok = loaded.tokenizer
    end = tok.convert_tokens_to_ids("<|observation|>")
    forcer = tm.ForceTokens([tok.encode(t, add_special_tokens=False) + [end] for t in texts])
    loaded.logits_processors = lambda: (forcer,)


def test_reasoning_apart_and_the_xml_call_reach_the_client(served):
    srv, loaded = served
    assert loaded.info.family == "glm4-moe" and loaded.info.chat_format == "glm45"
    # GLM-4.7's template opens <think> itself; the call has no newlines; an Optional
    # string stays a string.
    _script(
        loaded,
        "I need the weather.</think><tool_call>get_weather<arg_key>city</arg_key><arg_value>12345</arg_value></tool_call>",
    )
    client = openai.OpenAI(base_url=srv.url, api_key="none")
    whole = client.chat.completions.create(
        model="GLM-4-9B-0414-tune", messages=ASK, tools=[WEATHER], temperature=0
    )
    choice = whole.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.model_extra["reasoning_content"] == "I need the weather."
    (call,) = choice.message.tool_calls
    assert (call.function.name, json.loads(call.function.arguments)) == ("get_weather", {"city": "12345"})


def test_chat_template_kwargs_reach_the_template_as_vllm_passes_them(served):
    srv, loaded = served
    client = openai.OpenAI(base_url=srv.url, api_key="none")
    history = [
        {"role": "user", "content": "Hello"},
        {"role": "assistant", "content": "<think>old steps</think>Hi."},
        *ASK,
    ]
    prompts: list[str] = []
    encode = loaded.prompt_format.encode
    loaded.prompt_format.encode = lambda messages: (
        prompts.append(loaded.tokenizer.decode(encode(messages))) or encode(messages)
    )
    try:
        for kwargs in ({"clear_thinking": False}, None, {"clear_thinking": False, "enable_thinking": False}):
            _script(loaded, "Sunny.")
            extra = {"chat_template_kwargs": kwargs} if kwargs else None
            client.chat.completions.create(
                model="GLM-4-9B-0414-tune", messages=history, temperature=0, extra_body=extra
            )
        with pytest.raises(openai.BadRequestError) as refused:
            client.chat.completions.create(
                model="GLM-4-9B-0414-tune",
                messages=history,
                extra_body={"chat_template_kwargs": {"clear_thinking": [1]}},
            )
    finally:
        del loaded.prompt_format.encode
    # Each request is encoded to check its size, then for its answer (with the kwargs).
    kept, cleared, kept_off = prompts[1], prompts[3], prompts[5]
    assert "<think>old steps</think>Hi." in kept and "old steps" not in cleared
    assert kept.endswith("<|assistant|><think>") and kept_off.endswith("<|assistant|></think>")
    assert "old steps" in kept_off
    assert "chat_template_kwargs.clear_thinking must be text, a number" in str(refused.value)
    assert loaded.prompt_format.template_kwargs == ()


def test_the_remote_backend_sends_the_template_values(served):
    from glmdesk.core.messages import ChatMessage
    from glmdesk.core.settings import ParamsBox, SamplingParams
    from glmdesk.engine.backends.remote.backend import RemoteBackend

    srv, loaded = served
    remote = RemoteBackend()
    remote.load(LoadSettings(remote_url=srv.url))
    history = [
        ChatMessage("user", "Hello"),
        ChatMessage("assistant", "<think>old steps</think>Hi."),
        ChatMessage("user", "Weather?"),
    ]
    prompts: list[str] = []
    encode = loaded.prompt_format.encode
    loaded.prompt_format.encode = lambda messages: (
        prompts.append(loaded.tokenizer.decode(encode(messages))) or encode(messages)
    )
    try:
        _script(loaded, "</think>Sunny.")  # the prompt opened <think>
        box = ParamsBox(
            SamplingParams(temperature=0, max_new_tokens=20, template_kwargs=(("clear_thinking", False),))
        )
        answer = list(remote.stream(history, box))
    finally:
        del loaded.prompt_format.encode
        remote.close()
    assert "".join(c.text for c in answer) == "Sunny." and "<think>old steps</think>Hi." in prompts[-1]
