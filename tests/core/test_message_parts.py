"""A message as typed parts: a stored message's parts, and a streamed reply's parts so far."""

from __future__ import annotations

import pytest

from glmdesk.core.messages import ChatMessage, call_of, message_parts
from glmdesk.core.parts import PartsSoFar, ReasoningPart, TextPart, ToolCallPart, ToolResponsePart
from glmdesk.core.tools import INTERPRETER, ToolCall


def test_a_stored_answer_is_its_reasoning_text_and_call_in_order():
    call = ToolCall("get_weather", {"city": "北京"}, raw='{"city": "北京"}')
    message = ChatMessage("assistant", "Let me check.", tool_call=call, reasoning="The user asks.")
    assert message_parts(message) == (
        ReasoningPart("The user asks."),
        TextPart("Let me check."),
        ToolCallPart("get_weather", '{"city": "北京"}', done=True),
    )
    assert call_of(message_parts(message)[-1]) == ToolCall("get_weather", {"city": "北京"})


def test_empty_fields_give_no_parts_and_an_observation_is_a_tool_response():
    assert message_parts(ChatMessage("assistant", "")) == ()
    assert message_parts(ChatMessage("user", "hi")) == (TextPart("hi"),)
    observation = ChatMessage("observation", "sunny", name="get_weather", images=(b"png",))
    assert message_parts(observation) == (ToolResponsePart("get_weather", "sunny", (b"png",)),)


def test_the_interpreter_s_call_comes_back_as_code():
    code = ToolCall(INTERPRETER, {"code": "print(1)"}, kind="interpreter")
    (part,) = message_parts(ChatMessage("assistant", "", tool_call=code))
    assert call_of(part).kind == "interpreter" and call_of(part).code == "print(1)"
    with pytest.raises(ValueError, match="not JSON"):
        call_of(ToolCallPart("f", '{"ci', done=False))


def test_streamed_parts_join_and_a_call_keeps_its_newest_text():
    so_far = PartsSoFar()
    for parts in (
        [ReasoningPart("step "), ReasoningPart("one")],
        [TextPart("")],
        [TextPart("Let me "), TextPart("check.")],
        [ToolCallPart("get_weather", '{"ci')],
        [ToolCallPart("get_weather", '{"city": "北京"}')],
    ):
        so_far.add(parts)
    assert so_far.parts() == (
        ReasoningPart("step one"),
        TextPart("Let me check."),
        ToolCallPart("get_weather", '{"city": "北京"}'),
    )
    so_far.add([ToolCallPart("get_weather", '{"city": "北京"}', done=True), ToolCallPart("get_time", "{")])
    assert [type(p).__name__ for p in so_far.parts()][-2:] == ["ToolCallPart", "ToolCallPart"]
    assert so_far.parts()[-2].done and so_far.parts()[-1].name == "get_time"


def test_a_call_released_as_text_leaves_the_parts():
    so_far = PartsSoFar([TextPart("Sure. ")])
    so_far.add([ToolCallPart("get_weather", '{"city": 北')])
    so_far.add([TextPart('get_weather\n{"city": 北京}')])
    assert so_far.parts() == (TextPart('Sure. get_weather\n{"city": 北京}'),)
    so_far.add([TextPart(" more")])  # joined pieces keep joining
    assert so_far.parts() == (TextPart('Sure. get_weather\n{"city": 北京} more'),)
