"""GLM-4.5/4.6/4.7 (``Glm4MoeForCausalLM``): recognised, prompted by its own chat template
with tools, reasoning and thinking on/off, and its XML tool calls read while written.

A tiny random MoE folder is loaded through the real loader; prompt ids are compared
with transformers' ``apply_chat_template`` on the same conversation, and a scripted
reply (:class:`~tests.helpers.tool_models.ForceTokens`) drives the real decode loop.
"""

from __future__ import annotations

import copy

import pytest

from glmdesk.core.messages import ChatMessage
from glmdesk.core.parts import ReasoningPart, TextPart, ToolCallPart, merged
from glmdesk.core.settings import LoadSettings, ParamsBox, SamplingParams
from glmdesk.core.tools import FunctionSpec, ToolCall, ToolSet
from glmdesk.engine.backends.transformers.loader import load_model
from glmdesk.engine.chatglm.detect import detect_family
from glmdesk.engine.decode.generate import stream_answer
from glmdesk.engine.families import get_family, recognise_gguf, sampling_defaults, tool_dialect
from tests.helpers import tool_models as tm

WEATHER = FunctionSpec(
    "get_weather",
    "The weather in a city",
    {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}},
)
TOOLS = ToolSet((WEATHER,))


@pytest.fixture(scope="module")
def glm45(glm45_folder):
    return load_model(LoadSettings(model=str(glm45_folder), device="cpu"))


@pytest.fixture(scope="module")
def hf_tok(glm45_folder):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(glm45_folder)


def test_recognised_with_its_stops_and_defaults(glm45, glm45_folder, hf_tok):
    assert detect_family(glm45_folder) == "glm4-moe"
    assert glm45.info.family == "glm4-moe"
    assert recognise_gguf("glm4moe", lambda _t: None).name == "glm4-moe"
    defaults = sampling_defaults("glm4-moe")
    assert (defaults.temperature, defaults.top_p) == (0.6, 0.95)
    assert get_family("glm4-moe").reasoning is not None and tool_dialect("glm4-moe") == "glm45"
    stops = {hf_tok.convert_tokens_to_ids(t) for t in ("<|endoftext|>", "<|user|>", "<|observation|>")}
    assert glm45.prompt_format.stop_ids == stops


def _reference(tok, messages, tools=None, thinking=True):
    return tok.apply_chat_template(
        messages, tools=tools, add_generation_prompt=True, tokenize=True, enable_thinking=thinking
    )["input_ids"]


CALL = ToolCall("get_weather", {"city": "Paris", "days": 3}, call_id="call_1")
CONVERSATION = [
    ChatMessage("system", "You are a helpful assistant.", tools=TOOLS),
    ChatMessage("user", "Hello world"),
    ChatMessage("assistant", "<think>old steps</think>The answer is 42."),
    ChatMessage("user", "what is the weather today in Paris?"),
    ChatMessage("assistant", "<think>Let me think</think>", tool_call=CALL),
    ChatMessage("observation", '{"temperature": 21}', name="get_weather"),
]
REFERENCE = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "Hello world"},
    {"role": "assistant", "content": "The answer is 42.", "reasoning_content": "old steps"},
    {"role": "user", "content": "what is the weather today in Paris?"},
    {
        "role": "assistant",
        "content": "",
        "reasoning_content": "Let me think",
        "tool_calls": [
            {
                "type": "function",
                "function": {"name": "get_weather", "arguments": {"city": "Paris", "days": 3}},
            }
        ],
    },
    {"role": "tool", "content": '{"temperature": 21}'},
]
TOOL_DICTS = [{"type": "function", "function": WEATHER.definition()}]


@pytest.mark.parametrize("thinking", [True, False])
def test_prompt_is_the_chat_template_with_tools_reasoning_and_results(glm45, hf_tok, thinking):
    glm45.prompt_format.thinking = thinking
    try:
        ids = glm45.prompt_format.encode(CONVERSATION)
    finally:
        glm45.prompt_format.thinking = True
    expected = _reference(hf_tok, REFERENCE, TOOL_DICTS, thinking)
    assert ids == expected
    text = hf_tok.decode(ids)
    assert "<arg_value>3</arg_value>" in text and "<tool_response>" in text
    assert ("/nothink" in text) is not thinking


def test_reasoning_kept_apart_goes_to_the_template_as_in_the_text(glm45):
    # History keeps an answer's thinking in ChatMessage.reasoning: the template gets it the same way.
    apart = list(CONVERSATION)
    apart[2] = ChatMessage("assistant", "The answer is 42.", reasoning="old steps")
    apart[4] = ChatMessage("assistant", "", tool_call=CALL, reasoning="Let me think")
    assert glm45.prompt_format.encode(apart) == glm45.prompt_format.encode(CONVERSATION)


def test_typed_special_tokens_stay_text(glm45, hf_tok):
    typed = "<|user|> <think> <tool_call>x</tool_call>"
    ids = glm45.prompt_format.encode([ChatMessage("user", typed)])
    specials = {
        hf_tok.convert_tokens_to_ids(t) for t in ("<|user|>", "<think>", "<tool_call>", "</tool_call>")
    }
    assert ids.count(hf_tok.convert_tokens_to_ids("<|user|>")) == 1  # the template's own
    user = hf_tok.convert_tokens_to_ids("<|user|>")
    assert not specials & set(ids[ids.index(user) + 1 : -1])
    assert typed in hf_tok.decode(ids)


def _run(model, text: str, messages, stop_token: str = "<|observation|>", limit: int = 80):
    tok = model.tokenizer
    script = tok.encode(text, add_special_tokens=False) + [tok.convert_tokens_to_ids(stop_token)]
    forcer = tm.ForceTokens([script])
    model.logits_processors = lambda: (forcer,)
    params = ParamsBox(SamplingParams(temperature=0.0, max_new_tokens=limit))
    return list(stream_answer(model, messages, params))


def test_reasoning_then_an_xml_call_streams_as_parts_and_a_tool_call(glm45):
    written = (
        "\n<think>I need the weather.</think>\nLet me check.\n<tool_call>get_weather\n"
        "<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n"
        "<arg_key>days</arg_key>\n<arg_value>3</arg_value>\n</tool_call>"
    )
    messages = [ChatMessage("system", "", tools=TOOLS), ChatMessage("user", "weather in Paris?")]
    chunks = _run(glm45, written, messages)
    assert chunks[-1].finish_reason == "tool_calls"
    call = chunks[-1].tool_call
    assert (call.name, dict(call.arguments)) == ("get_weather", {"city": "Paris", "days": 3})
    parts = [p for c in chunks for p in c.parts]
    assert merged(p for p in parts if not isinstance(p, ToolCallPart)) == (
        ReasoningPart("I need the weather."),
        TextPart("Let me check.\n"),
    )
    pending = [c for c in chunks[:-1] if c.tool_pending == "get_weather"]  # the window's live card
    assert pending and "<arg_key>city" in pending[-1].tool_text
    live = [p for p in parts if isinstance(p, ToolCallPart)]
    assert live[0].name == "get_weather" and not live[0].done
    assert "<arg_value>Paris" in live[-2].arguments_so_far
    assert live[-1] == ToolCallPart("get_weather", '{"city": "Paris", "days": 3}', done=True)


def test_a_call_of_a_tool_not_offered_is_text(glm45):
    written = "<tool_call>rm_rf\n<arg_key>path</arg_key>\n<arg_value>/</arg_value>\n</tool_call>"
    messages = [ChatMessage("system", "", tools=TOOLS), ChatMessage("user", "Hello")]
    chunks = _run(glm45, written, messages)
    assert chunks[-1].finish_reason == "stop" and chunks[-1].tool_call is None
    assert "".join(c.text for c in chunks) == written


def test_several_calls_in_one_turn_are_one_assistant_message(glm45, hf_tok):
    second = ToolCall("get_weather", {"city": "Rome"}, call_id="call_2")
    messages = [
        ChatMessage("system", "", tools=TOOLS),
        ChatMessage("user", "Paris and Rome?"),
        ChatMessage("assistant", "", tool_call=CALL),
        ChatMessage("assistant", "", tool_call=second),
        ChatMessage("observation", "sunny", name="get_weather"),
        ChatMessage("observation", "rain", name="get_weather"),
    ]
    calls = [
        {"type": "function", "function": {"name": c.name, "arguments": dict(c.arguments)}}
        for c in (CALL, second)
    ]
    reference = [
        {"role": "user", "content": "Paris and Rome?"},
        {"role": "assistant", "content": "", "tool_calls": calls},
        {"role": "tool", "content": "sunny"},
        {"role": "tool", "content": "rain"},
    ]
    ids = glm45.prompt_format.encode(messages)
    assert ids == _reference(hf_tok, reference, TOOL_DICTS)
    assert hf_tok.decode(ids).count("<|observation|>") == 1


class _VocabOf:
    """A llama.cpp vocabulary's face (``LlamaVocab``) over the fixture's tokenizer: what
    a GGUF converted from the folder holds (same ids, its chat template)."""

    def __init__(self, tok) -> None:
        self.tok = tok
        self.bos, self.eos, self.eot = None, tok.eos_token_id, None

    def text(self, token: int) -> str:
        return self.tok.convert_ids_to_tokens(token)

    def encode(self, text: str, special: bool = False) -> list[int]:
        return self.tok.encode(text, add_special_tokens=False, split_special_tokens=not special)

    def special_id(self, name: str) -> int | None:
        ids = self.encode(name, special=True)
        return ids[0] if len(ids) == 1 and self.text(ids[0]) == name else None


class _Header:
    architecture = "glm4moe"

    def __init__(self, template: str, context: int = 131072) -> None:
        self.template, self.context = template, context

    def get(self, key: str):
        return {"tokenizer.chat_template": self.template, "glm4moe.context_length": self.context}.get(key)


def test_a_gguf_is_prompted_by_its_chat_template_with_tools(glm45, hf_tok):
    from glmdesk.engine.backends.llamacpp.vocab import prompt_format_for

    fmt, family = prompt_format_for(_VocabOf(hf_tok), _Header(hf_tok.chat_template), "GLM-4.5-Air.gguf")
    assert family == "glm4-moe" and fmt.stop_ids == glm45.prompt_format.stop_ids
    assert fmt.encode(CONVERSATION) == _reference(hf_tok, REFERENCE, TOOL_DICTS)
    assert set(fmt.marker_ids.values()) >= {"<think>", "</tool_call>"}


def test_no_thinking_switches_the_template_off(glm45, hf_tok):
    from glmdesk.cli import build_parser
    from glmdesk.cli.options import apply_thinking
    from glmdesk.engine.backends.transformers.backend import TransformersBackend

    assert build_parser().parse_args(["chat", "--no-thinking"]).thinking is False
    assert build_parser().parse_args(["serve", "--no-thinking"]).thinking is False
    ask = [ChatMessage("user", "Hello world")]
    try:
        assert apply_thinking(TransformersBackend(glm45), False) is None
        ids = glm45.prompt_format.encode(ask)
    finally:
        glm45.prompt_format.thinking = True
    assert ids == _reference(hf_tok, [{"role": "user", "content": "Hello world"}], thinking=False)
    assert hf_tok.decode(ids).endswith("Hello world/nothink<|assistant|>\n<think></think>")
    assert "no thinking switch" in apply_thinking(object(), False)


def test_the_tool_loop_runs_the_call_and_the_model_answers_its_result(glm45, hf_tok):
    from glmdesk.chat.answer import Tools, run_answer
    from glmdesk.chat.events import TextDelta, ToolResult, ToolsAnswered
    from glmdesk.chat.tools import allow_all

    tok, stop = glm45.tokenizer, glm45.tokenizer.convert_tokens_to_ids("<|observation|>")
    call = "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>"
    scripts = [tok.encode(t, add_special_tokens=False) + [stop] for t in (call, "It is 21 degrees.")]
    forcer = tm.ForceTokens(scripts)
    glm45.logits_processors = lambda: (forcer,)
    prompts = []

    def stream(history, params, cache, stop_event):
        prompts.append(glm45.prompt_format.encode(history))
        return stream_answer(glm45, history, params, cache, stop_event)

    messages = [ChatMessage("system", "", tools=TOOLS), ChatMessage("user", "weather in Paris?")]
    params = ParamsBox(SamplingParams(temperature=0.0, max_new_tokens=60))
    tools = Tools(allow_all, lambda c: ToolResult('{"temperature": 21}'))
    out = list(run_answer(stream, messages, params, tools=tools))
    (round_,) = [x for x in out if isinstance(x, ToolsAnswered)]
    call = round_.messages[0].tool_call
    assert (call.name, dict(call.arguments)) == ("get_weather", {"city": "Paris"})
    after = out[out.index(round_) + 1 :]
    assert out[-1].finish_reason == "stop"
    assert "".join(e.text for e in after if isinstance(e, TextDelta)) == "It is 21 degrees."
    second = hf_tok.decode(prompts[1])
    assert (
        '</tool_call><|observation|>\n<tool_response>\n{"temperature": 21}\n</tool_response><|assistant|>'
        in second
    )


def test_a_template_that_opens_think_itself_starts_the_reply_inside_it(glm45_folder, hf_tok):
    from glmdesk.engine.families.glm4_moe import GLM4_MOE

    tok = copy.deepcopy(hf_tok)  # GLM-4.7's template: the generation prompt writes <think> (off: </think>)
    tok.chat_template = hf_tok.chat_template.replace(
        "{{ '\\n<think></think>' if (enable_thinking is defined and not enable_thinking) else '' }}",
        "{{ '</think>' if (enable_thinking is defined and not enable_thinking) else '<think>' }}",
    )
    fmt = GLM4_MOE.prompt_format(tok)
    assert tok.chat_template != hf_tok.chat_template and fmt.opens_reasoning
    fmt.thinking = False
    assert not fmt.opens_reasoning


def test_the_code_interpreter_is_offered_as_a_python_function(glm45, hf_tok):
    code_tools = ToolSet((WEATHER,), interpreter=True)
    written = "<tool_call>python\n<arg_key>code</arg_key>\n<arg_value>print(1 + 2)</arg_value>\n</tool_call>"
    messages = [ChatMessage("system", "", tools=code_tools), ChatMessage("user", "Hello")]
    chunks = _run(glm45, written, messages)
    call = chunks[-1].tool_call
    assert chunks[-1].finish_reason == "tool_calls"
    assert (call.kind, call.code) == ("interpreter", "print(1 + 2)")
    assert any(c.tool_pending == "interpreter" for c in chunks[:-1])
    history = [*messages, ChatMessage("assistant", "", tool_call=call), ChatMessage("observation", "3")]
    from glmdesk.engine.formats.glm45_format import PYTHON_TOOL

    python = {"type": "function", "function": {"name": "python", "arguments": {"code": "print(1 + 2)"}}}
    reference = [
        {"role": "user", "content": "Hello"},
        {"role": "assistant", "content": "", "tool_calls": [python]},
        {"role": "tool", "content": "3"},
    ]
    assert glm45.prompt_format.encode(history) == _reference(hf_tok, reference, [*TOOL_DICTS, PYTHON_TOOL])
    empty = "<tool_call>python\n<arg_key>code</arg_key>\n<arg_value> </arg_value>\n</tool_call>done"
    chunks = _run(glm45, empty, messages)
    assert chunks[-1].finish_reason == "stop" and "".join(c.text for c in chunks) == empty


PARIS_AND_ROME = (
    "\n<think>Two cities.</think>\nI will check both.\n<tool_call>get_weather\n"
    "<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>\n"
    "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Rome</arg_value>\n"
    "<arg_key>days</arg_key>\n<arg_value>2</arg_value>\n</tool_call>"
)


def test_several_calls_in_one_reply_are_all_read_and_the_reply_ends_at_the_end_token(glm45):
    messages = [ChatMessage("system", "", tools=TOOLS), ChatMessage("user", "Paris and Rome?")]
    chunks = _run(glm45, PARIS_AND_ROME, messages, limit=160)
    last = chunks[-1]
    assert last.finish_reason == "tool_calls"
    assert [(c.name, dict(c.arguments)) for c in last.tool_calls] == [
        ("get_weather", {"city": "Paris"}),
        ("get_weather", {"city": "Rome", "days": 2}),
    ]
    assert last.tool_call == last.tool_calls[0]
    assert "".join(c.text for c in chunks) == "I will check both.\n"  # the calls are cards, not text
    done = [p for c in chunks for p in c.parts if isinstance(p, ToolCallPart) and p.done]
    assert [p.arguments_so_far for p in done] == ['{"city": "Paris"}', '{"city": "Rome", "days": 2}']
    pending = [c.tool_pending for c in chunks[:-1] if c.tool_pending]
    assert pending and "<arg_value>Rome" in [c.tool_text for c in chunks if c.tool_pending][-1]


def test_the_tool_loop_runs_several_calls_in_order_and_sends_their_results_as_the_template_does(
    glm45, hf_tok
):
    from glmdesk.chat.answer import Tools, run_answer
    from glmdesk.chat.events import TextDelta, ToolResult, ToolResultReady, ToolsAnswered
    from glmdesk.chat.tools import allow_all

    tok, stop = glm45.tokenizer, glm45.tokenizer.convert_tokens_to_ids("<|observation|>")
    scripts = [
        tok.encode(t, add_special_tokens=False) + [stop] for t in (PARIS_AND_ROME, "Sunny, then rain.")
    ]
    forcer = tm.ForceTokens(scripts)
    glm45.logits_processors = lambda: (forcer,)
    prompts, asked = [], []

    def stream(history, params, cache, stop_event):
        prompts.append(glm45.prompt_format.encode(history))
        return stream_answer(glm45, history, params, cache, stop_event)

    def handle(call):
        asked.append(call.arguments["city"])
        return ToolResult({"Paris": "sunny", "Rome": "rain"}[call.arguments["city"]])

    messages = [ChatMessage("system", "", tools=TOOLS), ChatMessage("user", "Paris and Rome?")]
    params = ParamsBox(SamplingParams(temperature=0.0, max_new_tokens=120))
    out = list(run_answer(stream, messages, params, tools=Tools(allow_all, handle)))
    (round_,) = [x for x in out if isinstance(x, ToolsAnswered)]
    results = [x.result.content for x in out if isinstance(x, ToolResultReady)]
    assert asked == ["Paris", "Rome"] and results == ["sunny", "rain"]
    assert [m.role for m in round_.messages] == ["assistant", "assistant", "observation", "observation"]
    assert round_.messages[0].reasoning == "Two cities."  # the call keeps its reasoning
    after = out[out.index(round_) + 1 :]
    assert out[-1].finish_reason == "stop"
    assert "".join(e.text for e in after if isinstance(e, TextDelta)) == "Sunny, then rain."
    calls = [
        {"type": "function", "function": {"name": "get_weather", "arguments": a}}
        for a in ({"city": "Paris"}, {"city": "Rome", "days": 2})
    ]
    reference = [
        {"role": "user", "content": "Paris and Rome?"},
        {
            "role": "assistant",
            "content": "I will check both.",
            "reasoning_content": "Two cities.",
            "tool_calls": calls,
        },
        {"role": "tool", "content": "sunny"},
        {"role": "tool", "content": "rain"},
    ]
    assert prompts[1] == _reference(hf_tok, reference, TOOL_DICTS)
    second = hf_tok.decode(prompts[1])
    assert second.count("<|observation|>") == 1 and second.count("<tool_response>") == 2


def test_calls_past_the_round_limit_run_none(glm45):
    from glmdesk.chat.answer import Tools, run_answer
    from glmdesk.chat.events import ToolResultReady
    from glmdesk.chat.tools import allow_all

    tok, stop = glm45.tokenizer, glm45.tokenizer.convert_tokens_to_ids("<|observation|>")
    forcer = tm.ForceTokens([tok.encode(PARIS_AND_ROME, add_special_tokens=False) + [stop]])
    glm45.logits_processors = lambda: (forcer,)
    messages = [ChatMessage("system", "", tools=TOOLS), ChatMessage("user", "Paris and Rome?")]
    params = ParamsBox(SamplingParams(temperature=0.0, max_new_tokens=120))
    stream = lambda h, p, c, s: stream_answer(glm45, h, p, c, s)  # noqa: E731
    tools = Tools(allow_all, lambda c: pytest.fail("ran"), max_rounds=1)
    out = list(run_answer(stream, messages, params, tools=tools))
    assert not [x for x in out if isinstance(x, ToolResultReady)]
    assert out[-1].finish_reason == "stop" and out[-1].notice.kind == "tool_rounds_exceeded"


@pytest.mark.parametrize("thinking", [True, False])
def test_a_forced_call_opens_the_call_in_the_prompt_and_the_reply_is_its_arguments(glm45, hf_tok, thinking):
    forced = ToolSet((WEATHER,), forced="get_weather")
    messages = [ChatMessage("system", "", tools=forced), ChatMessage("user", "weather in Paris?")]
    glm45.prompt_format.thinking = thinking
    try:
        ids = glm45.prompt_format.encode(messages)
        call = {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}
        turn = [
            {"role": "user", "content": "weather in Paris?"},
            {"role": "assistant", "content": "", "tool_calls": [call]},
        ]
        whole = hf_tok.apply_chat_template(turn, tools=TOOL_DICTS, tokenize=True, enable_thinking=thinking)[
            "input_ids"
        ]
        # the template's own rendering of that call turn starts with the forced prompt, id for id
        assert whole[: len(ids)] == ids and hf_tok.decode(ids).endswith(
            "<think></think>\n<tool_call>get_weather"
        )
        chunks = _run(
            glm45, "\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>", messages
        )
    finally:
        glm45.prompt_format.thinking = True
    assert chunks[-1].finish_reason == "tool_calls"
    assert dict(chunks[-1].tool_call.arguments) == {"city": "Paris"} and not "".join(c.text for c in chunks)
    assert any(c.tool_pending == "get_weather" for c in chunks[:-1])  # the card shows from the first token


def test_a_forced_call_that_does_not_parse_is_text_with_a_notice(glm45):
    forced = ToolSet((WEATHER,), forced="get_weather")
    messages = [ChatMessage("system", "", tools=forced), ChatMessage("user", "weather?")]
    chunks = _run(glm45, "\n<arg_key>city</arg_key>\n<arg_value>Paris", messages)
    assert chunks[-1].finish_reason == "stop" and chunks[-1].tool_call is None
    assert chunks[-1].notice is not None and "<arg_value>Paris" in "".join(c.text for c in chunks)


def test_a_glm47_template_that_opens_think_closes_it_for_a_forced_call(glm45_folder, hf_tok):
    from glmdesk.engine.families.glm4_moe import GLM4_MOE

    tok = copy.deepcopy(hf_tok)
    tok.chat_template = hf_tok.chat_template.replace(
        "{{ '\\n<think></think>' if (enable_thinking is defined and not enable_thinking) else '' }}",
        "{{ '</think>' if (enable_thinking is defined and not enable_thinking) else '<think>' }}",
    )
    fmt = GLM4_MOE.prompt_format(tok)
    forced = ToolSet((WEATHER,), forced="get_weather")
    ids = fmt.encode([ChatMessage("system", "", tools=forced), ChatMessage("user", "weather?")])
    assert tok.decode(ids).endswith("<|assistant|><think></think>\n<tool_call>get_weather")
    from glmdesk.engine.families.parser import reply_parser

    assert reply_parser(fmt, forced).think.inside is False  # the reply is the call, not reasoning


def test_glm46_and_glm47_folders_get_their_own_sampling_defaults(tmp_path):
    from glmdesk.engine.families import recognise_folder

    base = {"architectures": ["Glm4MoeForCausalLM"], "model_type": "glm4_moe"}
    assert (
        recognise_folder(base | {"max_position_embeddings": 131072}, tmp_path) == "glm4-moe"
    )  # 4.5, 4.5-Air
    longer = recognise_folder(base | {"max_position_embeddings": 202752}, tmp_path)  # 4.6, 4.7
    assert longer == "glm4.6-moe" and get_family(longer).name == "glm4-moe"
    assert (sampling_defaults(longer).temperature, sampling_defaults(longer).top_p) == (1.0, 0.95)
    assert tool_dialect(longer) == "glm45" and get_family(longer).thinking_switch


def test_a_glm46_or_glm47_gguf_gets_their_sampling_defaults(hf_tok):
    from glmdesk.engine.backends.llamacpp.vocab import prompt_format_for

    _fmt, name = prompt_format_for(_VocabOf(hf_tok), _Header(hf_tok.chat_template, 202752), "GLM-4.6.gguf")
    assert name == "glm4.6-moe" and sampling_defaults(name).temperature == 1.0
    _fmt, name = prompt_format_for(_VocabOf(hf_tok), _Header(hf_tok.chat_template), "GLM-4.5-Air.gguf")
    assert name == "glm4-moe" and sampling_defaults(name).temperature == 0.6
