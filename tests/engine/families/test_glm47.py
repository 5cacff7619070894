"""GLM-4.7 keeps earlier thinking across tool turns: a call's reasoning goes with the call
message, the template is given it, and the next prompt (after the result) holds it, id for
id as ``apply_chat_template`` renders the same conversation; the reasoning of a turn
before the last user message is left out, as the template says."""

from __future__ import annotations

import pytest

from glmdesk.core.messages import ChatMessage
from glmdesk.core.settings import LoadSettings, ParamsBox, SamplingParams
from glmdesk.core.tools import FunctionSpec, ToolCall, ToolSet
from glmdesk.engine.backends.transformers.loader import load_model
from glmdesk.engine.decode.generate import stream_answer
from tests.helpers import tool_models as tm

WEATHER = FunctionSpec(
    "get_weather", "The weather in a city", {"type": "object", "properties": {"city": {"type": "string"}}}
)
TOOLS = ToolSet((WEATHER,))
TOOL_DICTS = [{"type": "function", "function": WEATHER.definition()}]


@pytest.fixture(scope="module")
def glm47(glm47_folder):
    return load_model(LoadSettings(model=str(glm47_folder), device="cpu"))


@pytest.fixture(scope="module")
def hf_tok(glm47_folder):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(glm47_folder)


def _call(city: str) -> dict:
    return {"type": "function", "function": {"name": "get_weather", "arguments": {"city": city}}}


def _reference(tok, messages, **kwargs):
    return tok.apply_chat_template(
        messages, tools=TOOL_DICTS, add_generation_prompt=True, tokenize=True, **kwargs
    )["input_ids"]


def test_reasoning_of_the_tool_turns_is_kept_and_earlier_reasoning_left_out(glm47, hf_tok):
    messages = [
        ChatMessage("system", "", tools=TOOLS),
        ChatMessage("user", "Hello world"),
        ChatMessage("assistant", "The answer is 42.", reasoning="old steps"),
        ChatMessage("user", "weather in Paris?"),
        ChatMessage(
            "assistant", "", tool_call=ToolCall("get_weather", {"city": "Paris"}), reasoning="need it"
        ),
        ChatMessage("observation", "sunny", name="get_weather"),
        ChatMessage(
            "assistant", "", tool_call=ToolCall("get_weather", {"city": "Rome"}), reasoning="and Rome"
        ),
        ChatMessage("observation", "rain", name="get_weather"),
    ]
    reference = [
        {"role": "user", "content": "Hello world"},
        {"role": "assistant", "content": "The answer is 42.", "reasoning_content": "old steps"},
        {"role": "user", "content": "weather in Paris?"},
        {"role": "assistant", "content": "", "reasoning_content": "need it", "tool_calls": [_call("Paris")]},
        {"role": "tool", "content": "sunny"},
        {"role": "assistant", "content": "", "reasoning_content": "and Rome", "tool_calls": [_call("Rome")]},
        {"role": "tool", "content": "rain"},
    ]
    ids = glm47.prompt_format.encode(messages)
    assert ids == _reference(hf_tok, reference)
    text = hf_tok.decode(ids)
    assert "<think>need it</think>\n<tool_call>get_weather" in text and "<think>and Rome</think>" in text
    assert "old steps" not in text and text.endswith("<|assistant|><think>")
    assert glm47.prompt_format.opens_reasoning  # the reply starts inside the block


def test_the_tool_loop_gives_the_next_prompt_the_calls_reasoning(glm47, hf_tok):
    from glmdesk.chat.answer import Tools, run_answer
    from glmdesk.chat.events import TextDelta, ToolResult, ToolsAnswered
    from glmdesk.chat.tools import allow_all

    tok, stop = glm47.tokenizer, glm47.tokenizer.convert_tokens_to_ids("<|observation|>")
    call = "I need the weather.</think><tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value></tool_call>"
    answer = "It is sunny.</think>Sunny in Paris."
    forcer = tm.ForceTokens([tok.encode(t, add_special_tokens=False) + [stop] for t in (call, answer)])
    glm47.logits_processors = lambda: (forcer,)
    prompts = []

    def stream(history, params, cache, stop_event):
        prompts.append(glm47.prompt_format.encode(history))
        return stream_answer(glm47, history, params, cache, stop_event)

    messages = [ChatMessage("system", "", tools=TOOLS), ChatMessage("user", "weather in Paris?")]
    params = ParamsBox(SamplingParams(temperature=0.0, max_new_tokens=80))
    out = list(run_answer(stream, messages, params, tools=Tools(allow_all, lambda c: ToolResult("sunny"))))
    (round_,) = [x for x in out if isinstance(x, ToolsAnswered)]
    assert round_.messages[0].reasoning == "I need the weather."
    reference = [
        {"role": "user", "content": "weather in Paris?"},
        {
            "role": "assistant",
            "content": "",
            "reasoning_content": "I need the weather.",
            "tool_calls": [_call("Paris")],
        },
        {"role": "tool", "content": "sunny"},
    ]
    assert prompts[1] == _reference(hf_tok, reference)
    assert "<think>I need the weather.</think>\n<tool_call>" in hf_tok.decode(prompts[1])
    after = out[out.index(round_) + 1 :]
    assert "".join(e.text for e in after if isinstance(e, TextDelta)) == "Sunny in Paris."
