"""A tool call streams while it is written, over a real ``glmdesk serve`` on 127.0.0.1
(tiny GLM-4, forced tokens; see conftest): the official ``openai`` client's stream
accumulation rebuilds the non-stream answer's call, a call that does not parse ends as
text (what the docs say a client sees), and the remote backend turns the server's
fragments into the same live chunks the local backends give."""

from __future__ import annotations

import json

import openai

from glmdesk.core.messages import ChatMessage
from glmdesk.core.settings import LoadSettings, ParamsBox, SamplingParams
from glmdesk.core.tools import INTERPRETER, FunctionSpec, ToolSet
from glmdesk.engine.backends.remote.backend import RemoteBackend
from tests.server.conftest import ASK, WEATHER

CALL = 'get_weather\n{"city": "北京", "unit": "celsius"}'


def client(server) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.url, api_key="none", max_retries=0, timeout=120)


def test_the_clients_stream_accumulation_rebuilds_the_non_stream_call(glm_server, force):
    force(CALL)
    whole = client(glm_server).chat.completions.create(
        model="tiny-glm4", messages=ASK, tools=[WEATHER], temperature=0, max_tokens=60
    )
    force(CALL)
    kinds = []
    with client(glm_server).chat.completions.stream(
        model="tiny-glm4", messages=ASK, tools=[WEATHER], temperature=0, max_tokens=60
    ) as stream:
        for event in stream:
            kinds.append(event.type)
            if event.type == "chunk" and event.chunk.choices and event.chunk.choices[0].delta.tool_calls:
                head = event.chunk.choices[0].delta.tool_calls[0]
                if head.id:  # the first delta: id, type and name, arguments still ""
                    assert head.type == "function" and head.function.name == "get_weather"
                    assert head.function.arguments == ""
        streamed = stream.get_final_completion()
    # The arguments arrived piece by piece while written, not in one piece at the end.
    assert kinds.count("tool_calls.function.arguments.delta") >= 5
    a, b = whole.choices[0], streamed.choices[0]
    assert a.finish_reason == b.finish_reason == "tool_calls"
    (x,), (y,) = a.message.tool_calls, b.message.tool_calls
    assert (x.type, x.function.name) == (y.type, y.function.name) == ("function", "get_weather")
    assert y.id.startswith("call_") and y.function.arguments == '{"city": "北京", "unit": "celsius"}'
    assert json.loads(x.function.arguments) == json.loads(y.function.arguments)
    assert not a.message.content and not b.message.content


def test_a_call_that_does_not_parse_ends_as_text_after_its_first_deltas(glm_server, force):
    """What the docs promise: the first delta and the arguments' valid JSON prefix went
    out; the answer then ends with ``stop`` and the call's text as content."""
    force('get_weather\n{"city": 北京}')
    chunks = list(
        client(glm_server).chat.completions.create(
            model="tiny-glm4", messages=ASK, tools=[WEATHER], stream=True, max_tokens=60
        )
    )
    deltas = [d for c in chunks if c.choices for d in (c.choices[0].delta.tool_calls or [])]
    assert deltas[0].function.name == "get_weather" and deltas[0].id.startswith("call_")
    assert "".join(d.function.arguments or "" for d in deltas) == '{"city":'
    assert [c.choices[0].finish_reason for c in chunks if c.choices[0].finish_reason] == ["stop"]
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == 'get_weather\n{"city": 北京}'


def test_the_remote_backend_shows_the_servers_fragments_as_a_live_call(glm_server, force):
    remote = RemoteBackend()
    remote.load(LoadSettings(remote_url=glm_server.url))
    try:
        spec = FunctionSpec("get_weather", raw=WEATHER["function"])
        messages = [ChatMessage("system", "", tools=ToolSet((spec,))), ChatMessage("user", "北京天气？")]
        force(CALL)
        chunks = list(remote.stream(messages, ParamsBox(SamplingParams(temperature=0, max_new_tokens=60))))
    finally:
        remote.close()
    live = [c.tool_text for c in chunks if c.tool_pending == "get_weather"]
    assert len(set(live)) >= 5 and all(b.startswith(a) for a, b in zip(live, live[1:], strict=False))
    assert live[-1] == '{"city": "北京", "unit": "celsius"}'
    last = chunks[-1]
    assert last.finish_reason == "tool_calls" and last.tool_call.arguments == {
        "city": "北京",
        "unit": "celsius",
    }
    assert "".join(c.text for c in chunks) == ""


def test_glm_call_text_from_a_server_without_a_parser_shows_live_too(glm_server, force):
    """The interpreter is not sent to servers, so its call comes back as GLM text; the
    remote backend holds it back and gives the same live chunks (code as written)."""
    remote = RemoteBackend()
    remote.load(LoadSettings(remote_url=glm_server.url))
    try:
        messages = [ChatMessage("system", "", tools=ToolSet(interpreter=True)), ChatMessage("user", "6*7?")]
        force("python\n```python\nx = 6 * 7\nprint(x)\n```")
        chunks = list(remote.stream(messages, ParamsBox(SamplingParams(temperature=0, max_new_tokens=60))))
    finally:
        remote.close()
    live = [c.tool_text for c in chunks if c.tool_pending is not None]
    assert {c.tool_pending for c in chunks if c.tool_pending is not None} == {INTERPRETER}
    assert len(set(live)) >= 5 and all(b.startswith(a) for a, b in zip(live, live[1:], strict=False))
    assert live[-1] == "```python\nx = 6 * 7\nprint(x)\n```"
    assert chunks[-1].finish_reason == "tool_calls" and chunks[-1].tool_call.code == "x = 6 * 7\nprint(x)"
