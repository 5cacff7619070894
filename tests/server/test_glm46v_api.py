"""``glmdesk serve`` with GLM-4.6V (``glm46v``): an image part, offered tools and the
model's thinking come back as ``reasoning_content`` and an OpenAI tool call."""

from __future__ import annotations

import json

import openai
import pytest

from glmdesk.engine.backends.transformers.backend import TransformersBackend
from glmdesk.server.app import create_app
from glmdesk.server.config import ServeSettings
from glmdesk.server.runner import ServerThread
from tests.helpers.tool_models import ForceTokens

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather of a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


@pytest.fixture
def glm46v_server(glm46v_loaded, monkeypatch):
    tok = glm46v_loaded.tokenizer
    written = (
        "<think>The sign says Paris.</think>\n<tool_call>get_weather\n"
        "<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>"
    )
    script = tok.encode(written, add_special_tokens=False) + [tok.convert_tokens_to_ids("<|observation|>")]
    forcer = ForceTokens([script])
    monkeypatch.setattr(glm46v_loaded, "logits_processors", lambda: (forcer,))
    settings = ServeSettings(port=0, queue_size=2)
    srv = ServerThread(create_app(TransformersBackend(glm46v_loaded), settings), settings).start()
    yield srv, len(script)
    srv.stop()


def test_an_image_with_tools_gives_reasoning_and_a_tool_call(glm46v_server, red_photo):
    server, n = glm46v_server
    client = openai.OpenAI(base_url=server.url, api_key="none", max_retries=0, timeout=120)
    reply = client.chat.completions.create(
        model=client.models.list().data[0].id,
        messages=[
            {
                "role": "user",
                "content": [
                    {"type": "image_url", "image_url": {"url": red_photo.data_url()}},
                    {"type": "text", "text": "What is the weather where this photo was taken?"},
                ],
            }
        ],
        tools=[WEATHER],
        temperature=0,
        max_tokens=n + 4,
    )
    choice = reply.choices[0]
    assert choice.finish_reason == "tool_calls"
    (call,) = choice.message.tool_calls
    assert call.function.name == "get_weather" and json.loads(call.function.arguments) == {"city": "Paris"}
    assert choice.message.model_extra["reasoning_content"] == "The sign says Paris."
    assert reply.usage.prompt_tokens > 12  # the image's tokens are prompt tokens


def test_the_remote_engine_asks_a_served_glm_ocr_greedily(tmp_path, red_photo):
    """A vision model served under a GLM-OCR name (its server samples as asked): the
    remote engine sends temperature 0 whatever the sampling settings say."""
    from glmdesk.chat.ocr import is_ocr_model, ocr_messages
    from glmdesk.core.settings import LoadSettings, ParamsBox, SamplingParams
    from glmdesk.engine.backends.remote.backend import RemoteBackend
    from glmdesk.engine.backends.transformers.loader import load_model
    from glmdesk.engine.decode.generate import stream_answer
    from tests.helpers.glm4v import write_glm4v_folder

    loaded = load_model(
        LoadSettings(model=str(write_glm4v_folder(tmp_path / "GLM-OCR-served")), device="cpu")
    )
    settings = ServeSettings(port=0, queue_size=2)
    server = ServerThread(create_app(TransformersBackend(loaded), settings), settings).start()
    remote = RemoteBackend()
    try:
        remote.load(LoadSettings(remote_url=server.url))
        assert is_ocr_model(remote.info)  # named by its id
        hot = ParamsBox(SamplingParams(temperature=1.5, top_k=5, max_new_tokens=8))
        answers = {"".join(c.text for c in remote.stream(ocr_messages(red_photo), hot)) for _ in range(2)}
    finally:
        remote.close()
        server.stop()
    greedy = ParamsBox(SamplingParams(temperature=0.0, max_new_tokens=8))
    assert answers == {"".join(c.text for c in stream_answer(loaded, ocr_messages(red_photo), greedy))}


def test_a_request_without_thinking_reaches_glm_4_6v_s_template(glm46v_loaded, red_photo, monkeypatch):
    tok = glm46v_loaded.tokenizer
    script = tok.encode("A red square", add_special_tokens=False) + [tok.convert_tokens_to_ids("<|user|>")]
    prompts: list[str] = []

    class Recording(ForceTokens):
        def __call__(self, ids, scores):
            if self.last is None or ids.shape[1] != self.last + 1:
                prompts.append(tok.decode(ids[0]))
            return super().__call__(ids, scores)

    forcer = Recording([script])
    monkeypatch.setattr(glm46v_loaded, "logits_processors", lambda: (forcer,))
    settings = ServeSettings(port=0, queue_size=2)
    server = ServerThread(create_app(TransformersBackend(glm46v_loaded), settings), settings).start()
    try:
        client = openai.OpenAI(base_url=server.url, api_key="none", max_retries=0, timeout=120)
        ask = [
            {
                "role": "user",
                "content": [
                    {"type": "image_url", "image_url": {"url": red_photo.data_url()}},
                    {"type": "text", "text": "What is it?"},
                ],
            }
        ]
        model = client.models.list().data[0].id
        for thinking in (False, True):
            reply = client.chat.completions.create(
                model=model,
                messages=ask,
                max_tokens=len(script) + 2,
                extra_body={"chat_template_kwargs": {"enable_thinking": thinking}},
            )
            assert reply.choices[0].message.content == "A red square"
    finally:
        server.stop()
    assert "/nothink" in prompts[0] and prompts[0].endswith("<think></think>")
    assert "/nothink" not in prompts[1] and glm46v_loaded.prompt_format.thinking  # one answer's setting only
