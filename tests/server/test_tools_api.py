"""Tool calls over ``glmdesk serve``, through the official ``openai`` client: a real
server on 127.0.0.1 serving a tiny GLM-4 model (random weights on a trained tiny
vocabulary); a test-only logits processor forces the tokens a trained model would
write, so the real decode loop, parser and routes do the rest."""

from __future__ import annotations

import json

import httpx
import openai
import pytest

from glmdesk.core.messages import ChatMessage
from glmdesk.core.tools import FunctionSpec, ToolCall, ToolSet
from tests.helpers import tool_models as tm
from tests.server.conftest import ASK, WEATHER


def client(server) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.url, api_key="none", max_retries=0, timeout=120)


def test_non_stream_tool_call_then_the_result_continues(glm_server, tiny, force):
    force('get_weather\n{"city": "北京"}')
    reply = client(glm_server).chat.completions.create(
        model="tiny-glm4", messages=ASK, tools=[WEATHER], temperature=0, max_tokens=60
    )
    choice = reply.choices[0]
    assert choice.finish_reason == "tool_calls"
    (call,) = choice.message.tool_calls
    assert call.type == "function" and call.id.startswith("call_")
    assert call.function.name == "get_weather" and json.loads(call.function.arguments) == {"city": "北京"}
    assert not choice.message.content

    force("\n北京 22 度。")
    follow = ASK + [
        choice.message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": '{"temperature": 22}'},
    ]
    again = client(glm_server).chat.completions.create(
        model="tiny-glm4", messages=follow, tools=[WEATHER], temperature=0, max_tokens=60
    )
    assert again.choices[0].message.content == "北京 22 度。"
    assert again.choices[0].finish_reason == "stop" and again.choices[0].message.tool_calls is None
    # The call and the result went into the prompt as GLM-4's call and observation turns.
    tools = ToolSet((FunctionSpec("get_weather", raw=WEATHER["function"]),))
    expected = [
        ChatMessage("system", "", tools=tools),
        ChatMessage("user", ASK[0]["content"]),
        ChatMessage("assistant", "", tool_call=ToolCall("get_weather", {"city": "北京"}, call_id=call.id)),
        ChatMessage("observation", '{"temperature": 22}', name="get_weather"),
    ]
    assert again.usage.prompt_tokens == len(tiny.prompt_format.encode(expected))


def test_streamed_tool_call_arrives_as_deltas(glm_server, tiny, force):
    force('get_weather\n{"city": "上海"}')
    chunks = list(
        client(glm_server).chat.completions.create(
            model="tiny-glm4", messages=ASK, tools=[WEATHER], tool_choice="auto", stream=True, max_tokens=60
        )
    )
    deltas = [d for c in chunks if c.choices for d in (c.choices[0].delta.tool_calls or [])]
    assert deltas[0].id.startswith("call_") and deltas[0].function.name == "get_weather"
    assert all(d.index == 0 for d in deltas)
    arguments = "".join(d.function.arguments or "" for d in deltas)
    assert json.loads(arguments) == {"city": "上海"}
    assert [c.choices[0].finish_reason for c in chunks if c.choices[0].finish_reason] == ["tool_calls"]
    assert not "".join(c.choices[0].delta.content or "" for c in chunks)


def force_arguments(tiny, *arguments: str) -> None:
    """The next answers write only ``arguments`` then ``<|observation|>``: the forced
    call's name is the prompt's, never written by the model."""
    observation = tiny.tokenizer.special_ids["<|observation|>"]
    forcer = tm.ForceTokens([tiny.tokenizer.encode(a) + [observation] for a in arguments])
    tiny.logits_processors = lambda: (forcer,)


OTHER = {"type": "function", "function": {"name": "get_time", "parameters": {}}}
NAMED = {"type": "function", "function": {"name": "get_time"}}


def test_named_tool_choice_forces_the_call(glm_server, tiny):
    force_arguments(tiny, '{"zone": "UTC"}')
    reply = client(glm_server).chat.completions.create(
        model="tiny-glm4", messages=ASK, tools=[WEATHER, OTHER], tool_choice=NAMED, max_tokens=60
    )
    choice = reply.choices[0]
    assert choice.finish_reason == "tool_calls" and not choice.message.content
    (call,) = choice.message.tool_calls
    assert call.function.name == "get_time" and json.loads(call.function.arguments) == {"zone": "UTC"}
    # Both functions are offered; the prompt ends with get_time's metadata line.
    specs = tuple(FunctionSpec(t["function"]["name"], raw=t["function"]) for t in (WEATHER, OTHER))
    forced = [ChatMessage("system", "", tools=ToolSet(specs, forced="get_time")), ChatMessage("user", ASK[0]["content"])]  # fmt: skip
    prompt = tiny.prompt_format.encode(forced)
    assert reply.usage.prompt_tokens == len(prompt)
    assert prompt[-len(tiny.tokenizer.encode("get_time\n")) :] == tiny.tokenizer.encode("get_time\n")


def test_named_tool_choice_forces_the_call_streamed(glm_server, tiny):
    force_arguments(tiny, '{"city": "上海"}')
    chunks = list(
        client(glm_server).chat.completions.create(
            model="tiny-glm4",
            messages=ASK,
            tools=[WEATHER, OTHER],
            tool_choice={"type": "function", "function": {"name": "get_weather"}},
            stream=True,
            max_tokens=60,
        )
    )
    deltas = [d for c in chunks if c.choices for d in (c.choices[0].delta.tool_calls or [])]
    assert deltas[0].id.startswith("call_") and deltas[0].function.name == "get_weather"
    assert json.loads("".join(d.function.arguments or "" for d in deltas)) == {"city": "上海"}
    assert [c.choices[0].finish_reason for c in chunks if c.choices[0].finish_reason] == ["tool_calls"]
    assert not "".join(c.choices[0].delta.content or "" for c in chunks)


def test_required_forces_the_only_function(glm_server, tiny):
    force_arguments(tiny, '{"city": "北京"}')
    reply = client(glm_server).chat.completions.create(
        model="tiny-glm4", messages=ASK, tools=[WEATHER], tool_choice="required", max_tokens=60
    )
    assert reply.choices[0].finish_reason == "tool_calls"
    assert reply.choices[0].message.tool_calls[0].function.name == "get_weather"


def test_tool_choice_none_offers_nothing(glm_server, tiny, force):
    force("Hello world")
    reply = client(glm_server).chat.completions.create(
        model="tiny-glm4", messages=ASK, tools=[WEATHER], tool_choice="none", max_tokens=60
    )
    assert reply.choices[0].message.content == "Hello world"
    assert reply.usage.prompt_tokens == len(
        tiny.prompt_format.encode([ChatMessage("user", ASK[0]["content"])])
    )


@pytest.mark.parametrize(
    ("body", "param", "words"),
    [
        (
            {"tools": [WEATHER, OTHER], "tool_choice": "required"},
            "tool_choice",
            '"required" needs exactly one function here, not 2',
        ),
        (
            {"tools": [{"type": "function", "function": {"name": "bad name"}}]},
            "tools",
            "Function 1 needs a name",
        ),
        (
            {"tools": [WEATHER], "tool_choice": {"type": "function", "function": {"name": "x"}}},
            "tool_choice",
            "'x'",
        ),
        ({"tools": [{"type": "retrieval"}]}, "tools", "not a function tool"),
    ],
)
def test_bad_tools_are_refused_with_a_sentence(glm_server, body, param, words):
    response = httpx.post(glm_server.url + "/chat/completions", json={"messages": ASK} | body, timeout=60)
    error = response.json()["error"]
    assert response.status_code == 400 and error["param"] == param and words in error["message"]


def test_a_model_without_a_tool_format_refuses_tools(server):
    """The embedded SmolLM2 has no tool format: tools get a 400 (as vLLM refuses tools it has
    no parser for); with ``tool_choice: "none"`` they are ignored."""
    c = openai.OpenAI(base_url=server.url, api_key="none", max_retries=0, timeout=120)
    with pytest.raises(openai.BadRequestError) as caught:
        c.chat.completions.create(
            model=c.models.list().data[0].id, messages=ASK, tools=[WEATHER], max_tokens=4
        )
    assert "no tool-call format" in caught.value.body["message"] and caught.value.body["param"] == "tools"
    reply = c.chat.completions.create(
        model=c.models.list().data[0].id, messages=ASK, tools=[WEATHER], tool_choice="none", max_tokens=4
    )
    assert reply.choices[0].finish_reason in ("stop", "length")
    with pytest.raises(openai.BadRequestError):
        c.chat.completions.create(
            model=c.models.list().data[0].id,
            messages=ASK + [{"role": "tool", "tool_call_id": "x", "content": "1"}],
            max_tokens=4,
        )
