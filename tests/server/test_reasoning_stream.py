"""GLM-Z1's reasoning through ``glmdesk serve`` and back through the remote backend: the
engine's reasoning parts go out as ``reasoning_content`` (stream and not), and the
remote backend turns them into the same parts the local backend gave."""

from __future__ import annotations

import openai
import pytest

from glmdesk.core.messages import ChatMessage
from glmdesk.core.parts import ReasoningPart, TextPart, merged
from glmdesk.core.settings import LoadSettings, ParamsBox, SamplingParams
from glmdesk.engine.backends.remote.backend import RemoteBackend
from glmdesk.engine.backends.transformers.backend import TransformersBackend
from glmdesk.server.app import create_app
from glmdesk.server.config import ServeSettings
from glmdesk.server.runner import ServerThread
from tests.helpers import glm4_0414_models as glm0414
from tests.helpers import tool_models as tm

REPLY = "x</think>answer"  # Z1's template opened <think>


@pytest.fixture(scope="module")
def z1_server(tmp_path_factory):
    folder = glm0414.write_glm4_0414(
        tmp_path_factory.mktemp("z1") / "GLM-Z1-9B-0414", glm0414.Z1_TEMPLATE, "THUDM/GLM-Z1-9B-0414"
    )
    backend = TransformersBackend()
    backend.load(LoadSettings(model=str(folder), device="cpu"))
    loaded = backend.loaded
    tok = loaded.tokenizer
    forcer = tm.ForceTokens(
        [tok.encode(REPLY, add_special_tokens=False) + [tok.convert_tokens_to_ids("<|user|>")]]
    )
    loaded.logits_processors = lambda: (forcer,)
    settings = ServeSettings(port=0, queue_size=4)
    srv = ServerThread(create_app(backend, settings), settings).start()
    yield srv
    srv.stop()
    backend.close()


def test_reasoning_goes_out_as_reasoning_content(z1_server):
    client = openai.OpenAI(base_url=z1_server.url, api_key="none")
    ask = [{"role": "user", "content": "Hello world"}]
    whole = client.chat.completions.create(model="GLM-Z1-9B-0414", messages=ask, temperature=0)
    message = whole.choices[0].message
    assert (message.content, message.model_extra["reasoning_content"]) == ("answer", "x")
    events = list(client.chat.completions.create(model="GLM-Z1-9B-0414", messages=ask, stream=True))
    deltas = [e.choices[0].delta for e in events if e.choices]
    assert "".join(d.model_extra.get("reasoning_content") or "" for d in deltas) == "x"
    assert "".join(d.content or "" for d in deltas) == "answer"
    first_content = next(i for i, d in enumerate(deltas) if d.content)
    assert any(d.model_extra.get("reasoning_content") for d in deltas[:first_content])


def test_remote_backend_gives_the_same_parts(z1_server):
    remote = RemoteBackend()
    remote.load(LoadSettings(remote_url=z1_server.url))
    try:
        chunks = list(
            remote.stream([ChatMessage("user", "Hello world")], ParamsBox(SamplingParams(temperature=0)))
        )
    finally:
        remote.close()
    assert chunks[-1].finish_reason == "stop"
    assert merged(p for c in chunks for p in c.parts) == (ReasoningPart("x"), TextPart("answer"))
    assert "".join(c.text for c in chunks) == "answer"


def _event(content: str, finish: str | None = None):
    from openai.types.chat import ChatCompletionChunk

    choice = {"index": 0, "delta": {"content": content}, "finish_reason": finish}
    body = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m", "choices": [choice]}
    return ChatCompletionChunk.model_validate(body)


def test_a_served_z1_without_a_reasoning_parser_is_split_on_the_client():
    import threading

    from glmdesk.engine.backends.remote.stream import RemoteAnswer
    from glmdesk.engine.families import family_for_model_id

    model = "THUDM/GLM-Z1-9B-0414"  # its template opened <think>: the text starts inside it
    answer = RemoteAnswer(
        "http://gpu-box:8000/v1", model, 5.0, True, None, ("glm4",), family_for_model_id(model)
    )
    events = [_event("st"), _event("ep</th"), _event("ink>\nans"), _event("wer", "stop")]
    chunks = list(answer.run(lambda: iter(events), threading.Event()))
    assert chunks[-1].finish_reason == "stop"
    assert merged(p for c in chunks for p in c.parts) == (ReasoningPart("step"), TextPart("answer"))


def test_a_served_glm_4_1v_shows_its_thinking_apart_and_not_its_answer_wrapper():
    import threading

    from glmdesk.engine.backends.remote.stream import RemoteAnswer
    from glmdesk.engine.families import family_for_model_id

    model = "zai-org/GLM-4.1V-9B-Thinking"  # vLLM without a reasoning parser: all of it as text
    answer = RemoteAnswer(
        "http://gpu-box:8000/v1", model, 5.0, True, None, ("glm4",), family_for_model_id(model)
    )
    written = ["<thi", "nk>It is red.</think><ans", "wer>A red square, 1 <", " 2</ans", "wer>", "<"]
    events = [_event(piece) for piece in written] + [_event("", "stop")]
    chunks = list(answer.run(lambda: iter(events), threading.Event()))
    assert chunks[-1].finish_reason == "stop"
    parts = merged(p for c in chunks for p in c.parts)
    assert parts == (ReasoningPart("It is red."), TextPart("A red square, 1 < 2<"))
