"""OpenAI tools and tool messages <-> glmdesk's tool values (what glmdesk serve uses)."""

from __future__ import annotations

import json

import pytest

from glmdesk.core.messages import ChatMessage
from glmdesk.core.tools import ToolCall
from glmdesk.engine.tools.openai_tools import (
    messages_from_openai,
    parse_glm_reply,
    tool_call_deltas,
    tool_call_to_openai,
    toolset_from_openai,
)

WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}  # fmt: skip
TRACK = {"type": "function", "function": {"name": "track", "description": "价格"}}


def test_tools_and_tool_choice():
    assert [f.name for f in toolset_from_openai([WEATHER, TRACK]).functions] == ["get_weather", "track"]
    assert not toolset_from_openai([WEATHER], "none")
    # A named function is forced; every function stays offered (the same system turn).
    named = toolset_from_openai([WEATHER, TRACK], {"type": "function", "function": {"name": "track"}})
    assert [f.name for f in named.functions] == ["get_weather", "track"] and named.forced == "track"
    assert toolset_from_openai([WEATHER, TRACK], "auto").forced is None
    assert toolset_from_openai([WEATHER]).forced is None
    # "required" forces the only function; with several it is refused with a sentence.
    assert toolset_from_openai([WEATHER], "required").forced == "get_weather"
    with pytest.raises(ValueError, match='"required" needs exactly one function here, not 2'):
        toolset_from_openai([WEATHER, TRACK], "required")
    with pytest.raises(ValueError, match="not among the tools"):
        toolset_from_openai([WEATHER], {"type": "function", "function": {"name": "nope"}})
    with pytest.raises(ValueError, match="not among the tools"):
        toolset_from_openai([WEATHER], {"type": "function", "function": "get_weather"})
    with pytest.raises(ValueError, match="must be 'none', 'auto'"):
        toolset_from_openai([WEATHER], "always")
    with pytest.raises(ValueError, match="Tool 2 is not a function tool"):
        toolset_from_openai([WEATHER, {"type": "retrieval"}])
    with pytest.raises(ValueError, match="name"):
        toolset_from_openai([{"type": "function", "function": {"name": "bad name"}}])


def test_messages_with_tool_calls_and_tool_results():
    tools = toolset_from_openai([WEATHER])
    msgs = messages_from_openai(
        [
            {"role": "user", "content": [{"type": "text", "text": "北京天气？"}]},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "北京"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": '{"temperature": 22}'},
        ],
        tools,
    )
    assert msgs[0] == ChatMessage("system", "", tools=tools)
    assert msgs[2] == ChatMessage(
        "assistant", "", tool_call=ToolCall("get_weather", {"city": "北京"}, "", "function", "call_1")
    )
    assert msgs[3] == ChatMessage("observation", '{"temperature": 22}', name="get_weather")
    with pytest.raises(ValueError, match="not valid JSON"):
        messages_from_openai(
            [{"role": "assistant", "tool_calls": [{"id": "x", "function": {"name": "a", "arguments": "{"}}]}],
            tools,
        )
    with pytest.raises(ValueError, match="unknown role"):
        messages_from_openai([{"role": "robot", "content": "x"}], tools)


def test_calls_to_openai_and_stream_deltas():
    call = ToolCall("get_weather", {"city": "北京"}, '{"city": "北京"}', call_id="call_9")
    entry = tool_call_to_openai(call)
    assert entry == {
        "id": "call_9",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "北京"}'},
    }
    deltas = tool_call_deltas(call)
    assert "".join(d["function"]["arguments"] for d in deltas) == entry["function"]["arguments"]
    assert deltas[0]["id"] == "call_9" and json.loads(deltas[1]["function"]["arguments"]) == {"city": "北京"}
    assert tool_call_to_openai(ToolCall("x", {})).get("id").startswith("call_")


def test_glm_text_from_a_server_is_parsed_on_the_client():
    tools = toolset_from_openai([WEATHER])
    call = parse_glm_reply("glm4", 'get_weather\n{"city": "北京"}', tools)
    assert call is not None and call.arguments == {"city": "北京"}
    assert parse_glm_reply("glm4", "Just text.", tools) is None
    assert parse_glm_reply("glm4", "delete\n{}", tools) is None
    assert (
        parse_glm_reply("chatglm3", "get_weather\n```python\ntool_call(city=__import__('os'))\n```", tools)
        is None
    )
