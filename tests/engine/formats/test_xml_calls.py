"""GLM-4.5/4.7's XML tool calls: well-formed calls read as vLLM reads them, malformed
ones never run, values decoded by the schema, tags inside values kept, and every reply
streamed in pieces cut anywhere (inside the tags) read as the whole reply."""

from __future__ import annotations

import pytest

from glmdesk.core.parts import ReasoningPart, TextPart, ThinkMarkers, merged
from glmdesk.core.tools import FunctionSpec, ToolSet
from glmdesk.engine.families.parser import ReplyParser, ThinkSplitter
from glmdesk.engine.formats.xml_call_filter import XmlToolFilter, parse_xml_calls
from glmdesk.engine.formats.xml_calls import argument_value

THINK = ThinkMarkers("<think>", "</think>")
WEATHER = FunctionSpec(
    "get_weather",
    "The weather in a city",
    {
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "days": {"type": "integer"},
            "metric": {"type": "boolean"},
        },
    },
)
WRITE = FunctionSpec(
    "write_file",
    "Write a file",
    {"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}}},
)
NOTE = FunctionSpec(  # what Pydantic and MCP servers write for Optional[str] and friends
    "add_note",
    "Add a note",
    {
        "type": "object",
        "properties": {
            "title": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "tag": {"type": ["string", "null"]},
            "level": {"enum": ["1", "2", "3"]},
            "rank": {"enum": [1, 2, 3]},
            "count": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
            "labels": {"type": "array", "items": {"type": "string"}},
            "extra": {"type": "object"},
        },
    },
)
TOOLS = ToolSet((WEATHER, WRITE, NOTE))


def _whole(text: str, reasoning: ThinkMarkers | None = None, inside: bool = False):
    return _read([text], reasoning, inside)


def _read(pieces, reasoning=None, inside=False):
    """``(parts, calls, notice, unreadable)`` of a reply fed in ``pieces``."""
    reader = XmlToolFilter(TOOLS, reasoning, inside)
    parser = ReplyParser(reader, ThinkSplitter(reasoning, inside) if reasoning else None)
    parts = []
    for piece in pieces:
        parts += parser.feed(piece)
    parts += parser.finish(cut_off=False)
    shown = merged(p for p in parts if isinstance(p, TextPart | ReasoningPart))
    calls = [(c.name, dict(c.arguments)) for c in reader.calls]
    return shown, calls, reader.notice, [(u.name, u.reason) for u in reader.unreadable]


def _streamed_equals_whole(text: str, reasoning=None, inside=False):
    whole = _whole(text, reasoning, inside)
    for cut in range(1, len(text)):
        assert _read([text[:cut], text[cut:]], reasoning, inside) == whole, cut
    assert _read(list(text), reasoning, inside) == whole  # one character at a time
    return whole


GLM45_CALL = (
    "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n"
    "<arg_key>days</arg_key>\n<arg_value>3</arg_value>\n</tool_call>"
)
GLM47_CALL = (
    "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value>"
    "<arg_key>days</arg_key><arg_value>3</arg_value></tool_call>"
)


@pytest.mark.parametrize("call", [GLM45_CALL, GLM47_CALL], ids=["glm45-newlines", "glm47-no-newlines"])
def test_well_formed_calls_read_as_vllm_reads_them(call):
    shown, calls, notice, unreadable = _streamed_equals_whole("Let me check.\n" + call)
    assert calls == [("get_weather", {"city": "Paris", "days": 3})]
    assert shown == (TextPart("Let me check.\n"),) and notice is None and not unreadable


def test_a_newline_after_the_call_tag_and_python_booleans():
    text = "<tool_call>\nget_weather\n<arg_key>city</arg_key><arg_value>Oslo</arg_value>"
    text += "<arg_key>metric</arg_key><arg_value>False</arg_value></tool_call>"
    shown, calls, _, _ = _streamed_equals_whole(text)
    assert calls == [("get_weather", {"city": "Oslo", "metric": False})] and shown == ()
    assert _whole(text.replace("False", "True"))[1] == [("get_weather", {"city": "Oslo", "metric": True})]


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (  # a missing <arg_value>
            "<tool_call>get_weather<arg_key>city</arg_key>Paris</arg_value></tool_call>",
            "the argument 'city' has no <arg_value>",
        ),
        (  # a missing </arg_value>: the next pair would be read into the value
            "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris\n"
            "<arg_key>days</arg_key>\n<arg_value>3</arg_value>\n</tool_call>",
            "the value of 'city' is not closed",
        ),
        (  # a stray </arg_key>
            "<tool_call>get_weather<arg_key>city</arg_key></arg_key><arg_value>Paris</arg_value></tool_call>",
            "the argument 'city' has no <arg_value>",
        ),
        (  # a missing </arg_key>
            "<tool_call>get_weather<arg_key>city<arg_value>Paris</arg_value></tool_call>",
            "the argument name 'city' is not closed",
        ),
        (  # text between the pairs
            "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value>and 3 days</tool_call>",
            "it has text outside the argument tags ('and 3 days')",
        ),
        (  # JSON where the pairs belong
            '<tool_call>get_weather\n{"city": "Paris"}\n</tool_call>',
            """it has text outside the argument tags ('{"city": "Paris"}\\n')""",
        ),
        (  # a key given twice
            "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value>"
            "<arg_key>city</arg_key><arg_value>Rome</arg_value></tool_call>",
            "it gives the argument 'city' twice",
        ),
    ],
    ids=[
        "no-arg-value",
        "no-close-value",
        "stray-close-key",
        "no-close-key",
        "text-between",
        "json",
        "twice",
    ],
)
def test_a_malformed_call_never_runs_and_is_shown_as_written(text, reason):
    shown, calls, notice, unreadable = _streamed_equals_whole("Checking.\n" + text)
    assert calls == [] and unreadable == [("get_weather", reason)]
    assert shown == (TextPart("Checking.\n" + text),)
    assert notice == f"the call of 'get_weather' could not be read: {reason}"
    reader = XmlToolFilter(TOOLS)
    parser = ReplyParser(reader)
    parser.feed(text)
    parser.finish(cut_off=False)
    (told,) = parser.unreadable
    assert told.text == text and told.observation().startswith(
        f"The call of get_weather was not run: it could not be read ({reason})."
    )


def test_a_malformed_call_beside_a_good_one_runs_only_the_good_one():
    bad = "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Rome</tool_call>"
    shown, calls, _, unreadable = _streamed_equals_whole(GLM47_CALL + "\n" + bad)
    assert calls == [("get_weather", {"city": "Paris", "days": 3})]
    assert [u[0] for u in unreadable] == ["get_weather"] and shown == (TextPart(bad),)


def test_optional_strings_and_enums_stay_strings_and_other_types_decode():
    pairs = {
        "title": "12345678",
        "tag": "true",
        "level": "1",
        "rank": "2",
        "count": "7",
        "labels": '["a", "b"]',
        "extra": "{'k': 1}",
    }
    body = "".join(f"<arg_key>{k}</arg_key><arg_value>{v}</arg_value>" for k, v in pairs.items())
    _, calls, _, _ = _streamed_equals_whole(f"<tool_call>add_note{body}</tool_call>")
    assert calls == [
        (
            "add_note",
            {
                "title": "12345678",
                "tag": "true",
                "level": "1",
                "rank": 2,
                "count": 7,
                "labels": ["a", "b"],
                "extra": {"k": 1},
            },
        )
    ]


@pytest.mark.parametrize(
    ("text", "schema", "value"),
    [
        ("null", {"anyOf": [{"type": "string"}, {"type": "null"}]}, "null"),
        ("null", {"anyOf": [{"type": "integer"}, {"type": "null"}]}, None),
        ("None", {"type": ["integer", "null"]}, None),
        ("3.0", {"type": "integer"}, 3),
        ("3.5", {"type": "integer"}, "3.5"),  # not an integer: the tool's own check speaks
        ("yes", {"type": "boolean"}, "yes"),
        ("2", {"enum": ["a", 2]}, 2),
        ("a", {"enum": ["a", 2]}, "a"),
        ("42", None, 42),  # no schema: JSON where it is JSON (vLLM's reading)
        ("Paris", None, "Paris"),
        ("", {"type": "integer"}, ""),
    ],
)
def test_argument_values_follow_the_schema(text, schema, value):
    assert argument_value(text, schema) == value
    assert type(argument_value(text, schema)) is type(value)


def test_a_literal_arg_value_close_inside_a_value_is_kept():
    code = 'body = text.split("</arg_value>")[0]\nassert "</arg_value>" not in body'
    text = (
        "<tool_call>write_file<arg_key>path</arg_key><arg_value>p.py</arg_value>"
        f"<arg_key>content</arg_key><arg_value>{code}</arg_value></tool_call>"
    )
    shown, calls, notice, _ = _streamed_equals_whole(text)
    assert calls == [("write_file", {"path": "p.py", "content": code})] and shown == () and notice is None


def test_a_literal_tool_call_close_inside_a_value_is_kept_and_nothing_leaks():
    code = 'END = "</arg_value></tool_call>"\nprint(END)\n'
    text = (
        "I'll write it.\n<tool_call>write_file\n<arg_key>path</arg_key>\n<arg_value>tags.py</arg_value>\n"
        f"<arg_key>content</arg_key>\n<arg_value>{code}</arg_value>\n</tool_call>"
    )
    shown, calls, notice, _ = _streamed_equals_whole(text)
    assert calls == [("write_file", {"path": "tags.py", "content": code})]
    assert shown == (TextPart("I'll write it.\n"),) and notice is None


def test_text_after_calls_and_a_second_call_are_told_apart():
    text = GLM45_CALL + "\n" + GLM47_CALL.replace("Paris", "Rome") + "\nI asked twice."
    shown, calls, _, _ = _streamed_equals_whole(text)
    assert [c[1]["city"] for c in calls] == ["Paris", "Rome"]
    assert shown == (TextPart("I asked twice."),)


def test_a_call_written_while_thinking_is_reasoning_and_not_run():
    text = f"<think>I could call {GLM47_CALL} but first think.</think>The answer is 4."
    shown, calls, notice, _ = _streamed_equals_whole(text, THINK)
    assert calls == [] and notice is None
    assert shown == (
        ReasoningPart(f"I could call {GLM47_CALL} but first think."),
        TextPart("The answer is 4."),
    )
    inside = _streamed_equals_whole(text.removeprefix("<think>"), THINK, inside=True)
    assert inside == (shown, [], None, [])


def test_a_call_after_the_reasoning_runs():
    text = f"\n<think>Weather needed.</think>\n{GLM45_CALL}"
    shown, calls, _, _ = _streamed_equals_whole(text, THINK)
    assert calls == [("get_weather", {"city": "Paris", "days": 3})]
    assert shown == (ReasoningPart("Weather needed."),)


def test_a_cut_off_call_is_text_with_a_notice():
    text = "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Par"
    shown, calls, notice, unreadable = _streamed_equals_whole(text)
    assert calls == [] and unreadable == [] and shown == (TextPart(text),)
    assert notice == "the answer ended before the call was complete"


def test_parse_xml_calls_reads_a_whole_served_reply():
    assert [c.name for c in parse_xml_calls(GLM45_CALL + GLM47_CALL, TOOLS)] == ["get_weather"] * 2
    thought = f"<think>{GLM47_CALL}</think>"
    assert parse_xml_calls(thought, TOOLS, THINK) == ()
