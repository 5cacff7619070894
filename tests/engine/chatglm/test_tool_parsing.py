"""Tool call parsing: good, malformed, truncated and hostile calls; the streaming filter."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from glmdesk.core.tools import INTERPRETER, FunctionSpec, ToolSet, parse_functions
from glmdesk.engine.formats.chatglm_tools import CallError, parse_call, parse_chatglm3_arguments
from glmdesk.engine.formats.tool_filter import ToolReplyFilter

TOOLS = ToolSet((FunctionSpec("get_weather"), FunctionSpec("track")), interpreter=True)
SEGMENT = 999


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("```python\ntool_call(city='北京', days=3)\n```", {"city": "北京", "days": 3}),
        ('tool_call(city="x", opts={"a": [1, 2.5, None, True]}, t=(1, 2))', {"city": "x", "opts": {"a": [1, 2.5, None, True]}, "t": [1, 2]}),
        ("```python\ntool_call()\n```", {}),
        ("```\ntool_call(n=-3)\n```", {"n": -3}),
    ],
)  # fmt: skip
def test_chatglm3_good_calls(content, expected):
    call = parse_call("chatglm3", "get_weather", content, TOOLS)
    assert (call.name, dict(call.arguments), call.raw, call.kind) == (
        "get_weather",
        expected,
        content,
        "function",
    )


@pytest.mark.parametrize(
    "content",
    [
        "```python\ntool_call(city='x'\n```",  # truncated
        "```python\ntool_call('x')\n```",  # positional
        "```python\nother(city='x')\n```",  # not tool_call
        "```python\ntool_call(**{'a': 1})\n```",
        "```python\ntool_call(city=x)\n```",  # a name, not a literal
        "```python\ntool_call(city=__import__('os').system('touch /tmp/glmdesk_pwned'))\n```",
        "```python\n__import__('os').system('touch /tmp/glmdesk_pwned')\n```",
        "```python\ntool_call(a=[i for i in range(3)])\n```",
        "```python\ntool_call(a=b'bytes')\n```",
        "",
    ],
)
def test_chatglm3_malformed_truncated_and_hostile_calls_are_refused(content, tmp_path):
    with pytest.raises(CallError):
        parse_call("chatglm3", "get_weather", content, TOOLS)
    import os

    assert not os.path.exists("/tmp/glmdesk_pwned")


def test_hostile_call_is_never_evaluated(monkeypatch):
    calls = []
    monkeypatch.setattr(
        "builtins.__import__", lambda *a, **k: calls.append(a) or (_ for _ in ()).throw(AssertionError)
    )
    with pytest.raises(CallError):
        parse_chatglm3_arguments("tool_call(city=__import__('os'))")
    assert calls == []


@pytest.mark.parametrize(
    ("content", "ok"),
    [
        ('{"city": "北京"}', True),
        ('```json\n{"city": "北京"}\n```', True),
        ('{"city": "北京"', False),  # truncated
        ('["北京"]', False),  # not an object
        ("city=北京", False),
        ('{"a": NaN}', True),  # Python's json reads NaN; it stays a value
    ],
)
def test_glm4_json_arguments(content, ok):
    if ok:
        assert parse_call("glm4", "get_weather", content, TOOLS).arguments
    else:
        with pytest.raises(CallError):
            parse_call("glm4", "get_weather", content, TOOLS)


def test_only_offered_tools_are_recognised():
    with pytest.raises(CallError, match="does not offer"):
        parse_call("glm4", "delete_all", "{}", TOOLS)
    with pytest.raises(CallError):
        parse_call("glm4", "python", "```python\nprint(1)\n```", ToolSet((FunctionSpec("get_weather"),)))
    run = parse_call("glm4", "python", "```python\nprint(1)\n```", TOOLS)
    assert (run.name, run.kind, run.code) == (INTERPRETER, "interpreter", "print(1)")
    run3 = parse_call("chatglm3", "interpreter", "```python\nimport math\nmath.pi\n```", TOOLS)
    assert run3.code == "import math\nmath.pi"


def test_function_definitions_are_validated_with_a_sentence_each():
    specs, problems = parse_functions(
        '[{"name": "get_weather", "parameters": {"type": "object", "properties": {}}},'
        ' {"type": "function", "function": {"name": "track"}}]'
    )
    assert [s.name for s in specs] == ["get_weather", "track"] and problems == []
    _, problems = parse_functions(
        '[{"name": "bad name"}, {"name": "python"}, {"name": "a"}, {"name": "a"}, 3]'
    )
    assert len(problems) == 4 and problems[0].startswith("Function 1 needs a name")
    assert "code interpreter" in problems[1] and "repeats" in problems[2] and "Function 5" in problems[3]
    _, problems = parse_functions('{"name": "x"}')
    assert problems == ["Custom functions must be a JSON list of function definitions, [ {...}, ... ]."]
    _, problems = parse_functions("[{")
    assert problems[0].startswith("This is not valid JSON")
    _, problems = parse_functions('[{"name": "x", "parameters": {"type": "string"}}]')
    assert 'type "object"' in problems[0]
    # Definitions go into every prompt: text over the limit is one sentence, not parsed.
    from glmdesk.core.tools import MAX_FUNCTIONS_CHARS

    many = "[" + ",".join(f'{{"name": "f{i}", "description": "{"x" * 60}"}}' for i in range(2000)) + "]"
    assert len(many) > MAX_FUNCTIONS_CHARS
    specs, problems = parse_functions(many)
    assert specs == () and len(problems) == 1 and f"{MAX_FUNCTIONS_CHARS:,}" in problems[0]
    assert parse_functions(many[:MAX_FUNCTIONS_CHARS].rsplit("},", 1)[0] + "}]")[1] == []


def run_filter(family, parts, cut_off=False, tokens=()):
    f = ToolReplyFilter(family, TOOLS, SEGMENT)
    out, pending = "", set()
    for part in parts:
        if part is SEGMENT:
            out += f.see_token(SEGMENT)
            continue
        out += f(part)
        pending.add(f.pending)
    out += f.finish(cut_off)
    return out, f, pending


def splits(text):
    return st.lists(st.integers(0, len(text)), max_size=6).map(
        lambda cuts: [text[a:b] for a, b in zip([0, *sorted(cuts)], [*sorted(cuts), len(text)], strict=True)]
    )


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_filter_hides_a_call_at_any_split_and_parses_it_at_the_end(data):
    parts = data.draw(splits("get_weather\n```python\ntool_call(city='北京')\n```"))
    shown, f, pending = run_filter("chatglm3", parts)
    assert shown == ""
    assert f.tool_call.arguments == {"city": "北京"} and f.notice is None
    assert "get_weather" in pending


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_filter_shows_plain_text_and_unknown_tools_as_text(data):
    shown, f, _ = run_filter("glm4", data.draw(splits("\n 你好，world\nline two")))
    assert (shown, f.tool_call, f.notice) == ("你好，world\nline two", None, None)
    shown, f, _ = run_filter("glm4", data.draw(splits('delete_all\n{"really": true}')))
    assert shown == 'delete_all\n{"really": true}' and f.tool_call is None and "does not offer" in f.notice


def test_filter_releases_bad_or_cut_off_calls_as_text_with_a_note():
    hostile = "get_weather\n```python\ntool_call(city=__import__('os'))\n```"
    shown, f, _ = run_filter("chatglm3", [hostile])
    assert shown == hostile and f.tool_call is None and "not a literal" in f.notice
    shown, f, _ = run_filter("glm4", ['get_weather\n{"city": "北'], cut_off=True)
    assert shown == 'get_weather\n{"city": "北' and f.tool_call is None and "ended before" in f.notice


def test_filter_text_segment_then_call_segment():
    parts = ["\n好的，我来查一下。", SEGMENT, "get_weather\n", '{"city": "北京"}']
    shown, f, _ = run_filter("glm4", parts)
    assert shown == "好的，我来查一下。" and f.tool_call.name == "get_weather"
    # A segment after a recognised call ends the reply.
    f2 = ToolReplyFilter("glm4", TOOLS, SEGMENT)
    for p in ["get_weather\n", "{}"]:
        f2(p)
    f2.see_token(SEGMENT)
    assert f2.stopped and f2.tool_call is not None and f2("\nmore") == ""
