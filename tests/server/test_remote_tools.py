"""Tool calls through the remote backend against a real ``glmdesk serve`` (tiny GLM-4,
forced tokens; see conftest): calls come back as the same chunks the local backends
give, whether the server parsed them (``tool_calls``) or returned GLM text."""

from __future__ import annotations

from glmdesk.core.messages import ChatMessage
from glmdesk.core.settings import LoadSettings, ParamsBox, SamplingParams
from glmdesk.core.tools import INTERPRETER, FunctionSpec, ToolSet
from glmdesk.engine.backends.remote.backend import RemoteBackend
from glmdesk.engine.backends.remote.tools import RemoteCalls
from tests.helpers import tool_models as tm

WEATHER = FunctionSpec(
    "get_weather", "查询天气", {"type": "object", "properties": {"city": {"type": "string"}}}
)
GREEDY = ParamsBox(SamplingParams(temperature=0, max_new_tokens=60))


def connect(glm_server) -> RemoteBackend:
    remote = RemoteBackend()
    remote.load(LoadSettings(remote_url=glm_server.url))
    return remote


def test_call_parsed_by_the_server_then_the_observation_continues(glm_server, tiny, force):
    remote = connect(glm_server)
    try:
        assert remote.capabilities().tool_calls
        messages = [ChatMessage("system", "", tools=ToolSet((WEATHER,))), ChatMessage("user", "北京天气？")]
        force('get_weather\n{"city": "北京"}', "\n北京 22 度。")
        chunks = list(remote.stream(messages, GREEDY))
        last = chunks[-1]
        assert last.finish_reason == "tool_calls" and last.error is None
        assert "".join(c.text for c in chunks) == ""
        assert "get_weather" in {c.tool_pending for c in chunks[:-1]}
        call = last.tool_call
        assert (call.name, dict(call.arguments), call.kind) == ("get_weather", {"city": "北京"}, "function")
        assert call.call_id.startswith("call_")
        messages += [
            ChatMessage("assistant", "", tool_call=call),
            ChatMessage("observation", '{"temperature": 22}', name="get_weather"),
        ]
        chunks = list(remote.stream(messages, GREEDY))
        assert "".join(c.text for c in chunks) == "北京 22 度。"
        assert chunks[-1].finish_reason == "stop" and chunks[-1].tool_call is None
        # The server built the same prompt a local backend builds from these messages.
        assert chunks[-1].prompt_tokens == len(tiny.prompt_format.encode(messages))
    finally:
        remote.close()


def test_glm_text_without_tool_calls_is_parsed_on_the_client(glm_server, force):
    """The interpreter has no OpenAI form, so the server gets no tools and returns the
    model's call as text (as vLLM does for glm-4-9b-chat); the client parses it."""
    remote = connect(glm_server)
    try:
        messages = [ChatMessage("system", "", tools=ToolSet(interpreter=True)), ChatMessage("user", "6*7?")]
        force("python\n```python\nprint(6 * 7)\n```")
        chunks = list(remote.stream(messages, GREEDY))
        assert "".join(c.text for c in chunks) == ""
        assert chunks[-1].finish_reason == "tool_calls"
        call = chunks[-1].tool_call
        assert (call.name, call.kind, call.code) == (INTERPRETER, "interpreter", "print(6 * 7)")
        # Without tools offered, the same text is only text.
        force("python\n```python\nprint(6 * 7)\n```")
        chunks = list(remote.stream([ChatMessage("user", "6*7?")], GREEDY))
        assert "".join(c.text for c in chunks) == "python\n```python\nprint(6 * 7)\n```"
        assert chunks[-1].finish_reason == "stop" and chunks[-1].notice is None
    finally:
        remote.close()


def test_client_parser_holds_call_text_and_releases_what_is_not_a_call():
    tools = ToolSet((WEATHER,))
    calls = RemoteCalls(tools, ("glm4", "chatglm3"))
    shown = [calls.text(p) for p in ("get_wea", "ther\n", '{"city": ', '"x"}')]
    assert shown == ["", "", "", ""] and calls.pending == "get_weather"
    call, rest = calls.finish()
    assert call.name == "get_weather" and dict(call.arguments) == {"city": "x"} and rest == ""
    # ChatGLM3's form, with a hostile argument: text, never evaluated.
    calls = RemoteCalls(tools, ("chatglm3", "glm4"))
    text = "get_weather\n```python\ntool_call(city=__import__('os'))\n```"
    assert calls.text(text) == ""
    assert calls.finish() == (None, text)
    # Text that is not a tool name is shown at once.
    calls = RemoteCalls(tools, ("glm4",))
    assert calls.text("get") == "" and calls.text("ting there") == "getting there"


def test_a_streamed_python_call_is_pending_as_the_interpreter():
    """Named ``python`` in ``delta.tool_calls`` but parsed as the interpreter at the end: one
    name throughout, or the window keeps a stale "Tool call: python writing..." card above
    the interpreter's card."""
    from types import SimpleNamespace

    calls = RemoteCalls(ToolSet((), interpreter=True), ("glm4",))
    delta = SimpleNamespace(index=0, id="c1", function=SimpleNamespace(name="python", arguments='{"co'))
    calls.add_delta(delta)
    assert calls.pending == INTERPRETER and calls.call_text == '{"co'
    calls.add_delta(
        SimpleNamespace(index=0, id=None, function=SimpleNamespace(name=None, arguments='de": "1"}'))
    )
    call, _text = calls.finish()
    assert (call.name, call.kind, call.arguments) == (INTERPRETER, "interpreter", {"code": "1"})
    functions = RemoteCalls(ToolSet((FunctionSpec("python"),)), ("glm4",))  # a function of that name
    functions.add_delta(delta)
    assert functions.pending == "python"


def test_a_server_whose_model_has_no_tool_format_says_so(server):
    """glmdesk serve with the embedded SmolLM2 refuses tools; the sentence reaches the user."""
    remote = connect(server)
    try:
        messages = [ChatMessage("system", "", tools=ToolSet((WEATHER,))), ChatMessage("user", "hi")]
        last = list(remote.stream(messages, GREEDY))[-1]
        assert last.finish_reason == "error" and "HTTP 400" in last.error.message
        assert "no tool-call format" in last.error.message
    finally:
        remote.close()


def test_a_forced_function_is_passed_through_as_tool_choice(glm_server, tiny):
    """The remote backend sends ``ToolSet.forced`` as ``tool_choice`` naming the function;
    glmdesk serve then writes its metadata line, so the model writes only the arguments."""
    other = FunctionSpec("get_time", "", {"type": "object", "properties": {}})
    observation = tiny.tokenizer.special_ids["<|observation|>"]
    forcer = tm.ForceTokens([tiny.tokenizer.encode('{"zone": "UTC"}') + [observation]])
    tiny.logits_processors = lambda: (forcer,)
    remote = connect(glm_server)
    try:
        tools = ToolSet((WEATHER, other), forced="get_time")
        messages = [ChatMessage("system", "", tools=tools), ChatMessage("user", "几点了？")]
        chunks = list(remote.stream(messages, GREEDY))
        last = chunks[-1]
        assert last.finish_reason == "tool_calls" and last.error is None
        assert (last.tool_call.name, dict(last.tool_call.arguments)) == ("get_time", {"zone": "UTC"})
        assert last.prompt_tokens == len(tiny.prompt_format.encode(messages))
    finally:
        remote.close()


def test_client_reads_glm45_xml_calls_but_not_one_written_while_thinking():
    from glmdesk.core.parts import ThinkMarkers

    tools = ToolSet((WEATHER,))
    call = "<tool_call>get_weather<arg_key>city</arg_key><arg_value>12345</arg_value></tool_call>"
    calls = RemoteCalls(tools, ("glm45", "glm4"), ThinkMarkers(), inside=True)
    shown = [calls.text(p) for p in (f"maybe {call[:20]}", f"{call[20:]}</think>", call)]
    assert "".join(shown) == f"maybe {call}</think>"  # the reasoning's text, for the think splitter
    found, rest = calls.finish()
    assert dict(found.arguments) == {"city": "12345"} and len(calls.calls) == 1 and rest == ""
    # A server that sends the reasoning apart: the text is answer from the start.
    calls = RemoteCalls(tools, ("glm45", "glm4"), ThinkMarkers(), inside=True)
    calls.reasoning_apart()
    assert calls.text(call) == "" and calls.finish()[0].name == "get_weather"
