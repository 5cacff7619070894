"""GLM-4.5's reasoning and XML tool calls through ``glmdesk serve``, read with the official
``openai`` client: ``reasoning_content`` and ``tool_calls`` (streamed and whole), and a
tool result sent back as a ``tool`` message is answered."""

from __future__ import annotations

import json

import openai
import pytest

from glmdesk.core.settings import LoadSettings
from glmdesk.engine.backends.transformers.backend import TransformersBackend
from glmdesk.server.app import create_app
from glmdesk.server.config import ServeSettings
from glmdesk.server.runner import ServerThread
from tests.helpers import glm45_models
from tests.helpers import tool_models as tm

CALL = (
    "\n<think>I need the weather.</think>\n<tool_call>get_weather\n"
    "<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n"
    "<arg_key>days</arg_key>\n<arg_value>3</arg_value>\n</tool_call>"
)
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        },
    },
}
ASK = [{"role": "user", "content": "what is the weather today in Paris?"}]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    folder = glm45_models.write_glm45(tmp_path_factory.mktemp("glm45") / "GLM-4.5-Air")
    backend = TransformersBackend()
    backend.load(LoadSettings(model=str(folder), device="cpu"))
    settings = ServeSettings(port=0, queue_size=4)
    srv = ServerThread(create_app(backend, settings), settings).start()
    yield srv, backend.loaded
    srv.stop()
    backend.close()


def _script(loaded, *texts: str) -> None:
    """The next answers write ``texts``, each ended by ``<|observation|>``."""
    tok = loaded.tokenizer
    end = tok.convert_tokens_to_ids("<|observation|>")
    forcer = tm.ForceTokens([tok.encode(t, add_special_tokens=False) + [end] for t in texts])
    loaded.logits_processors = lambda: (forcer,)


def test_reasoning_and_tool_calls_reach_the_openai_client(served):
    srv, loaded = served
    _script(loaded, CALL)
    client = openai.OpenAI(base_url=srv.url, api_key="none")
    whole = client.chat.completions.create(model="GLM-4.5-Air", messages=ASK, tools=[WEATHER], temperature=0)
    choice = whole.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.model_extra["reasoning_content"] == "I need the weather."
    (call,) = choice.message.tool_calls
    assert call.function.name == "get_weather"
    assert json.loads(call.function.arguments) == {"city": "Paris", "days": 3}

    events = list(
        client.chat.completions.create(
            model="GLM-4.5-Air", messages=ASK, tools=[WEATHER], temperature=0, stream=True
        )
    )
    deltas = [e.choices[0].delta for e in events if e.choices]
    assert "".join(d.model_extra.get("reasoning_content") or "" for d in deltas) == "I need the weather."
    pieces = [t for d in deltas for t in d.tool_calls or []]
    assert pieces[0].function.name == "get_weather"
    assert json.loads("".join(t.function.arguments or "" for t in pieces)) == {"city": "Paris", "days": 3}
    assert [e.choices[0].finish_reason for e in events if e.choices][-1] == "tool_calls"


def test_a_tool_result_is_answered(served):
    srv, loaded = served
    _script(loaded, "\n<think>It is warm.</think>\nIt is 21 degrees in Paris.")
    client = openai.OpenAI(base_url=srv.url, api_key="none")
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
    }
    messages = [
        *ASK,
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": '{"temperature": 21}'},
    ]
    reply = client.chat.completions.create(
        model="GLM-4.5-Air", messages=messages, tools=[WEATHER], temperature=0
    )
    message = reply.choices[0].message
    assert reply.choices[0].finish_reason == "stop"
    assert (message.content, message.model_extra["reasoning_content"]) == (
        "It is 21 degrees in Paris.",
        "It is warm.",
    )
    prompt = loaded.tokenizer.decode(loaded.prompt_format.encode(loaded_messages(messages)))
    assert '<|observation|>\n<tool_response>\n{"temperature": 21}\n</tool_response><|assistant|>' in prompt


def loaded_messages(wire):
    from glmdesk.engine.tools.openai_tools import messages_from_openai, toolset_from_openai

    return messages_from_openai(wire, toolset_from_openai([WEATHER], "auto"))


def _event(content: str, finish: str | None = None):
    from openai.types.chat import ChatCompletionChunk

    choice = {"index": 0, "delta": {"content": content}, "finish_reason": finish}
    body = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m", "choices": [choice]}
    return ChatCompletionChunk.model_validate(body)


def test_a_served_glm45_without_a_tool_parser_is_read_on_the_client():
    import threading

    from glmdesk.core.parts import ReasoningPart, TextPart, ToolCallPart, merged
    from glmdesk.engine.backends.remote.stream import RemoteAnswer
    from glmdesk.engine.families import family_for_model_id, served_tool_dialects
    from glmdesk.engine.tools.openai_tools import toolset_from_openai

    model = "zai-org/GLM-4.5-Air"
    tools = toolset_from_openai([WEATHER], "auto")
    answer = RemoteAnswer(
        "http://gpu-box:8000/v1",
        model,
        5.0,
        True,
        tools,
        served_tool_dialects(model),
        family_for_model_id(model),
    )
    pieces = ["\n<think>need</think>\nOK.\n<tool_ca", "ll>get_weather\n<arg_key>city</arg_key>\n<arg_v"]
    events = [_event(p) for p in pieces] + [_event("alue>Paris</arg_value>\n</tool_call>", "stop")]
    chunks = list(answer.run(lambda: iter(events), threading.Event()))
    assert chunks[-1].finish_reason == "tool_calls"
    assert (chunks[-1].tool_call.name, dict(chunks[-1].tool_call.arguments)) == (
        "get_weather",
        {"city": "Paris"},
    )
    parts = merged(p for c in chunks for p in c.parts if not isinstance(p, ToolCallPart))
    assert parts == (ReasoningPart("need"), TextPart("OK.\n"))
    assert any(c.tool_pending == "get_weather" for c in chunks[:-1])


TWO_CALLS = (
    "\n<think>Both cities.</think>\n<tool_call>get_weather\n<arg_key>city</arg_key>\n"
    "<arg_value>Paris</arg_value>\n</tool_call>\n<tool_call>get_weather\n<arg_key>city</arg_key>\n"
    "<arg_value>Rome</arg_value>\n<arg_key>days</arg_key>\n<arg_value>2</arg_value>\n</tool_call>"
)
TWO_ARGS = [{"city": "Paris"}, {"city": "Rome", "days": 2}]


def test_several_calls_in_one_answer_are_several_tool_calls_entries(served):
    srv, loaded = served
    client = openai.OpenAI(base_url=srv.url, api_key="none")
    _script(loaded, TWO_CALLS)
    whole = client.chat.completions.create(model="GLM-4.5-Air", messages=ASK, tools=[WEATHER], temperature=0)
    choice = whole.choices[0]
    assert choice.finish_reason == "tool_calls" and not choice.message.content
    assert [json.loads(c.function.arguments) for c in choice.message.tool_calls] == TWO_ARGS
    assert len({c.id for c in choice.message.tool_calls}) == 2

    _script(loaded, TWO_CALLS)
    events = list(
        client.chat.completions.create(
            model="GLM-4.5-Air", messages=ASK, tools=[WEATHER], temperature=0, stream=True
        )
    )
    pieces = [t for e in events if e.choices for t in e.choices[0].delta.tool_calls or []]
    by_index: dict[int, dict] = {}
    for t in pieces:  # as a client accumulates them
        slot = by_index.setdefault(t.index, {"id": None, "name": "", "arguments": ""})
        slot["id"] = t.id or slot["id"]
        slot["name"] += (t.function.name or "") if t.function else ""
        slot["arguments"] += (t.function.arguments or "") if t.function else ""
    assert sorted(by_index) == [0, 1]
    assert [by_index[i]["name"] for i in (0, 1)] == ["get_weather", "get_weather"]
    assert [json.loads(by_index[i]["arguments"]) for i in (0, 1)] == TWO_ARGS
    assert by_index[0]["id"] != by_index[1]["id"]
    assert [e.choices[0].finish_reason for e in events if e.choices][-1] == "tool_calls"

    # both results go back as two tool messages; the prompt holds both under one observation
    prompts = []
    encode = loaded.prompt_format.encode
    loaded.prompt_format.encode = lambda m: prompts.append(encode(m)) or prompts[-1]
    try:
        _script(loaded, "Sunny in Paris, rain in Rome.")
        calls = [c.model_dump() for c in choice.message.tool_calls]
        back = [
            *ASK,
            {"role": "assistant", "content": None, "tool_calls": calls},
            {"role": "tool", "tool_call_id": calls[0]["id"], "content": "sunny"},
            {"role": "tool", "tool_call_id": calls[1]["id"], "content": "rain"},
        ]
        answer = client.chat.completions.create(model="GLM-4.5-Air", messages=back, tools=[WEATHER])
    finally:
        del loaded.prompt_format.encode
    assert answer.choices[0].message.content == "Sunny in Paris, rain in Rome."
    text = loaded.tokenizer.decode(prompts[-1])
    assert text.count("<|observation|>") == 1
    assert "<tool_response>\nsunny\n</tool_response>\n<tool_response>\nrain\n</tool_response>" in text


def _prompts(loaded):
    """Record the prompts the served model is given (``del loaded.prompt_format.encode`` after)."""
    prompts: list[str] = []
    encode = loaded.prompt_format.encode

    def recording(messages):
        ids = encode(messages)
        prompts.append(loaded.tokenizer.decode(ids))
        return ids

    loaded.prompt_format.encode = recording
    return prompts


def test_chat_template_kwargs_switch_thinking_off_for_one_request(served):
    srv, loaded = served
    client = openai.OpenAI(base_url=srv.url, api_key="none")
    prompts = _prompts(loaded)
    try:
        _script(loaded, "Hello.")
        off = client.chat.completions.create(
            model="GLM-4.5-Air",
            messages=ASK,
            temperature=0,
            extra_body={"chat_template_kwargs": {"enable_thinking": False}},
        )
        off_prompt = prompts[-1]
        _script(loaded, "Hello.")
        client.chat.completions.create(model="GLM-4.5-Air", messages=ASK, temperature=0)
        on_prompt = prompts[-1]
        with pytest.raises(openai.BadRequestError) as refused:
            client.chat.completions.create(
                model="GLM-4.5-Air",
                messages=ASK,
                extra_body={"chat_template_kwargs": {"enable_thinking": "no"}},
            )
    finally:
        del loaded.prompt_format.encode
    assert off.choices[0].message.content == "Hello."
    assert off_prompt.endswith("Paris?/nothink<|assistant|>\n<think></think>")
    assert on_prompt.endswith("Paris?<|assistant|>") and loaded.prompt_format.thinking is True
    assert "enable_thinking must be true or false" in str(refused.value)


def test_the_remote_backend_asks_a_server_for_no_thinking(served):
    from glmdesk.cli.options import apply_thinking
    from glmdesk.core.messages import ChatMessage
    from glmdesk.core.settings import ParamsBox, SamplingParams
    from glmdesk.engine.backends.remote.backend import RemoteBackend

    srv, loaded = served
    remote = RemoteBackend()
    remote.load(LoadSettings(remote_url=srv.url))
    prompts, answered = _prompts(loaded), []  # the last prompt of each request is the answer's
    ask = [ChatMessage("user", "Hello world")]
    try:
        for enable in (False, None):
            _script(loaded, "Hi.")
            list(remote.stream(ask, ParamsBox(SamplingParams(temperature=0, enable_thinking=enable))))
            answered.append(prompts[-1])
        assert apply_thinking(remote, False) is None  # --no-thinking with a server
        _script(loaded, "Hi.")
        list(remote.stream(ask, ParamsBox(SamplingParams(temperature=0))))
        answered.append(prompts[-1])
    finally:
        del loaded.prompt_format.encode
        remote.close()
    assert [p.endswith("Hello world/nothink<|assistant|>\n<think></think>") for p in answered] == [
        True,
        False,
        True,
    ]


@pytest.mark.parametrize(
    "choice",
    [{"type": "function", "function": {"name": "get_weather"}}, "required"],
    ids=["named", "required"],
)
def test_a_forced_tool_choice_makes_the_answer_that_call(served, choice):
    srv, loaded = served
    client = openai.OpenAI(base_url=srv.url, api_key="none")
    _script(loaded, "\n<arg_key>city</arg_key>\n<arg_value>Rome</arg_value>\n</tool_call>")
    whole = client.chat.completions.create(
        model="GLM-4.5-Air", messages=ASK, tools=[WEATHER], tool_choice=choice, temperature=0
    )
    assert whole.choices[0].finish_reason == "tool_calls"
    (call,) = whole.choices[0].message.tool_calls
    assert call.function.name == "get_weather" and json.loads(call.function.arguments) == {"city": "Rome"}


def test_the_remote_backend_reads_several_calls_and_sends_their_results_back_in_one_turn(served):
    from glmdesk.core.messages import ChatMessage
    from glmdesk.core.settings import ParamsBox, SamplingParams
    from glmdesk.core.tools import FunctionSpec, ToolSet
    from glmdesk.engine.backends.remote.backend import RemoteBackend
    from glmdesk.engine.tools.openai_tools import messages_to_openai

    srv, loaded = served
    fn = WEATHER["function"]
    tools = ToolSet((FunctionSpec(fn["name"], fn["description"], fn["parameters"]),))
    remote = RemoteBackend()
    remote.load(LoadSettings(remote_url=srv.url))
    ask = [ChatMessage("system", "", tools=tools), ChatMessage("user", ASK[0]["content"])]
    box = ParamsBox(SamplingParams(temperature=0, max_new_tokens=120))
    prompts = _prompts(loaded)
    try:
        _script(loaded, TWO_CALLS)
        last = list(remote.stream(ask, box))[-1]
        assert last.finish_reason == "tool_calls"
        assert [dict(c.arguments) for c in last.tool_calls] == TWO_ARGS
        history = [
            *ask,
            *(ChatMessage("assistant", "", tool_call=c) for c in last.tool_calls),
            ChatMessage("observation", "sunny", name="get_weather"),
            ChatMessage("observation", "rain", name="get_weather"),
        ]
        wire, _ = messages_to_openai(history)
        (turn,) = [w for w in wire if w["role"] == "assistant"]
        assert [w["tool_call_id"] for w in wire if w["role"] == "tool"] == [
            c["id"] for c in turn["tool_calls"]
        ]
        _script(loaded, "Sunny, then rain.")
        answer = list(remote.stream(history, box))
    finally:
        del loaded.prompt_format.encode
        remote.close()
    assert "".join(c.text for c in answer) == "Sunny, then rain."
    assert "<tool_response>\nsunny\n</tool_response>\n<tool_response>\nrain\n</tool_response>" in prompts[-1]
    assert prompts[-1].count("<|observation|>") == 1


def test_the_remote_backend_forces_a_call_of_a_served_glm45(served):
    from glmdesk.core.messages import ChatMessage
    from glmdesk.core.settings import ParamsBox, SamplingParams
    from glmdesk.core.tools import FunctionSpec, ToolSet
    from glmdesk.engine.backends.remote.backend import RemoteBackend

    srv, loaded = served
    fn = WEATHER["function"]
    forced = ToolSet((FunctionSpec(fn["name"], fn["description"], fn["parameters"]),), forced="get_weather")
    remote = RemoteBackend()
    remote.load(LoadSettings(remote_url=srv.url))
    try:
        _script(loaded, "\n<arg_key>city</arg_key>\n<arg_value>Oslo</arg_value>\n</tool_call>")
        ask = [ChatMessage("system", "", tools=forced), ChatMessage("user", ASK[0]["content"])]
        last = list(remote.stream(ask, ParamsBox(SamplingParams(temperature=0, max_new_tokens=60))))[-1]
    finally:
        remote.close()
    assert last.finish_reason == "tool_calls" and dict(last.tool_call.arguments) == {"city": "Oslo"}


def test_glmdesk_chat_asks_for_each_result_of_several_calls_in_order(served, tmp_path):
    from tests.helpers.cli import run_cli

    srv, loaded = served
    functions = tmp_path / "functions.json"
    functions.write_text(json.dumps([WEATHER["function"]]), encoding="utf-8")
    _script(loaded, TWO_CALLS, "Sunny, then rain.")
    prompts = _prompts(loaded)
    try:
        out = run_cli(
            "chat", "--remote", srv.url, "--tools", str(functions), "--prompt", "Paris and Rome?",
            input_text="sunny\nrain\n",
        )  # fmt: skip
    finally:
        del loaded.prompt_format.encode
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("┌─ tool call: get_weather") == 2
    assert (
        out.stdout.index('"Paris"') < out.stdout.index('"Rome"')
        and out.stdout.count("Result of get_weather") == 2
    )
    assert out.stdout.rstrip().endswith("Sunny, then rain.")
    assert "<tool_response>\nsunny\n</tool_response>\n<tool_response>\nrain\n</tool_response>" in prompts[-1]
