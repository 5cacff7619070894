"""The real decode loop on tiny ChatGLM3 and GLM-4 models emits a tool call, takes an
observation and continues.

The models are real (converted tiny ChatGLM3 checkpoint; a tiny GLM-4-shaped
``GlmForCausalLM`` on a trained tiny tiktoken vocabulary) with random weights; a
test-only logits processor, hooked in through ``LoadedModel.logits_processors``,
forces the token sequence a trained model would write.
"""

from __future__ import annotations

import pytest
import torch
from transformers import GlmForCausalLM

from glmdesk.core.messages import ChatMessage
from glmdesk.core.parts import ToolCallPart
from glmdesk.core.settings import ParamsBox, SamplingParams
from glmdesk.core.tools import INTERPRETER, FunctionSpec, ToolSet
from glmdesk.engine.backends.transformers.backend import TransformersBackend
from glmdesk.engine.backends.transformers.loaded_model import LoadedModel
from glmdesk.engine.chatglm import prepare_checkpoint
from glmdesk.engine.decode.generate import stream_answer
from glmdesk.engine.info import ModelInfo
from tests.helpers import tool_models as tm

TOOLS = ToolSet((FunctionSpec("get_weather", "Weather of a city"),), interpreter=True)


def info(family: str, fmt) -> ModelInfo:
    return ModelInfo("tiny", family, "folder", "tiny", "cpu", "fp32", "none", 0.0, 2048, 0, fmt.name)


def _chatglm3_loaded(make_checkpoint, tmp_path):
    src, *_ = make_checkpoint("chatglm3", n_shards=1)
    p = prepare_checkpoint(src, tmp_path / "cache")
    model = GlmForCausalLM.from_pretrained(p.hf_folder, dtype=torch.float32).eval()
    return LoadedModel(model, p.tokenizer, p.prompt_format, info("chatglm3", p.prompt_format))


@pytest.fixture
def g3_loaded(make_checkpoint, tmp_path):
    return _chatglm3_loaded(make_checkpoint, tmp_path)


@pytest.fixture(scope="module")
def g4_loaded(glm4_tokenizer_folder):
    return tm.tiny_glm4(glm4_tokenizer_folder)


def stream(loaded, messages, script, max_new=200):
    forcer = tm.ForceTokens([script])
    loaded.logits_processors = lambda: (forcer,)
    box = ParamsBox(SamplingParams(temperature=0.0, max_new_tokens=max_new))
    chunks = list(stream_answer(loaded, messages, box))
    assert chunks[-1].error is None, chunks[-1].error
    return chunks


def enc(loaded, text):
    return loaded.tokenizer.encode(text)


def special(loaded, name):
    tok = loaded.tokenizer
    return tok.special_id(name) if hasattr(tok, "special_id") else tok.special_ids[name]


def _call_round(loaded, call_text, args, answer):
    obs = special(loaded, "<|observation|>")
    msgs = [ChatMessage("system", "", tools=TOOLS), ChatMessage("user", "北京天气怎么样？")]
    chunks = stream(loaded, msgs, enc(loaded, call_text) + [obs])
    last = chunks[-1]
    # The call's text never reaches the chat; the UI is told a call is streaming.
    assert "".join(c.text for c in chunks) == ""
    assert "get_weather" in {c.tool_pending for c in chunks[:-1]}
    assert last.finish_reason == "tool_calls" and last.notice is None
    call = last.tool_call
    assert (call.name, dict(call.arguments), call.kind) == ("get_weather", args, "function")
    # The same call as typed parts: its text growing while written, then the parsed call.
    parts = [p for c in chunks for p in c.parts]
    assert all(isinstance(p, ToolCallPart) for p in parts)
    growing = [p.arguments_so_far for p in parts if not p.done]
    assert growing[-1] == call_text.partition("\n")[2]
    assert all(b.startswith(a) for a, b in zip(growing, growing[1:], strict=False))
    assert parts[-1] == ToolCallPart("get_weather", call.arguments_json(), done=True)
    # The observation goes back; the answer continues from it.
    msgs += [ChatMessage("assistant", "", tool_call=call), ChatMessage("observation", '{"temperature": 22}')]
    eos = special(loaded, "<|user|>")
    chunks = stream(loaded, msgs, enc(loaded, "\n") + enc(loaded, answer) + [eos])
    assert "".join(c.text for c in chunks) == answer
    assert chunks[-1].finish_reason == "stop" and chunks[-1].tool_call is None
    assert chunks[-1].prompt_tokens == len(loaded.prompt_format.encode(msgs))


def test_chatglm3_call_observation_and_continuation(g3_loaded):
    _call_round(
        g3_loaded, "get_weather\n```python\ntool_call(city='北京')\n```", {"city": "北京"}, "北京 22 度。"
    )


def test_glm4_call_observation_and_continuation(g4_loaded):
    _call_round(g4_loaded, 'get_weather\n{"city": "北京"}', {"city": "北京"}, "北京 22 度。")


def test_hostile_and_truncated_calls_stream_as_text_with_a_note(g3_loaded):
    obs = special(g3_loaded, "<|observation|>")
    msgs = [ChatMessage("system", "", tools=TOOLS), ChatMessage("user", "hi")]
    hostile = "get_weather\n```python\ntool_call(city=__import__('os'))\n```"
    last = stream(g3_loaded, msgs, enc(g3_loaded, hostile) + [obs])[-1]
    assert last.finish_reason == "stop" and last.tool_call is None
    assert last.notice.kind == "tool_call_invalid" and "literal" in last.notice.params["reason"]
    cut = len(enc(g3_loaded, "get_weather\n```python\n")) + 2
    chunks = stream(
        g3_loaded, msgs, enc(g3_loaded, "get_weather\n```python\ntool_call(city='北京')"), max_new=cut
    )
    text = "".join(c.text for c in chunks)
    assert chunks[-1].finish_reason == "length" and chunks[-1].tool_call is None
    assert text.startswith("get_weather\n") and chunks[-1].notice is not None


def test_glm4_interpreter_call_and_text_before_it(g4_loaded):
    obs = special(g4_loaded, "<|observation|>")
    seg = special(g4_loaded, "<|assistant|>")
    script = (
        enc(g4_loaded, "\n")
        + enc(g4_loaded, "我来算。")
        + [seg]
        + enc(g4_loaded, "python\n```python\nprint(6*7)\n```")
        + [obs]
    )
    chunks = stream(g4_loaded, [ChatMessage("system", "", tools=TOOLS), ChatMessage("user", "6*7?")], script)
    assert "".join(c.text for c in chunks) == "我来算。"
    call = chunks[-1].tool_call
    assert (call.name, call.kind, call.code) == (INTERPRETER, "interpreter", "print(6*7)")


def test_capabilities_say_which_formats_have_tools(g4_loaded, embedded):
    assert TransformersBackend(g4_loaded).capabilities().tool_calls is True
    assert TransformersBackend(embedded).capabilities().tool_calls is False


def test_interpreter_round_runs_code_and_the_answer_continues(g4_loaded, tmp_path):
    from glmdesk.chat.answer import Tools, run_answer
    from glmdesk.chat.events import TextDelta, ToolResultReady, ToolsAnswered
    from glmdesk.chat.tools import InterpreterTool, allow_all
    from glmdesk.core.tools import ToolSettings
    from glmdesk.engine.tools.interpreter import new_workdir

    obs, eos = special(g4_loaded, "<|observation|>"), special(g4_loaded, "<|user|>")
    call = enc(g4_loaded, "python\n```python\nx = 6 * 7\nprint(x)\n```") + [obs]
    answer = enc(g4_loaded, "\n") + enc(g4_loaded, "The answer is 42.") + [eos]
    forcer = tm.ForceTokens([call, answer])
    g4_loaded.logits_processors = lambda: (forcer,)
    interp = InterpreterTool(lambda: new_workdir(tmp_path, "c"), ToolSettings(timeout_s=30), "glm4")
    try:
        items = list(
            run_answer(
                lambda m, p, c, s: stream_answer(g4_loaded, m, p, c, s),
                [ChatMessage("system", "", tools=TOOLS), ChatMessage("user", "6*7?")],
                ParamsBox(SamplingParams(temperature=0.0, max_new_tokens=100)),
                tools=Tools(allow_all, interp),
            )
        )
    finally:
        interp.close()
    results = [i.result for i in items if isinstance(i, ToolResultReady)]
    (round_,) = [i for i in items if isinstance(i, ToolsAnswered)]
    assert len(results) == 1 and results[0].content == "42"
    assert round_.messages[1] == ChatMessage("observation", "42", name="interpreter")
    text = "".join(i.text for i in items if isinstance(i, TextDelta))
    assert text == "The answer is 42." and items[-1].finish_reason == "stop"


def test_tool_rounds_end_with_a_note_after_the_limit(g3_loaded):
    from glmdesk.chat.answer import Tools, run_answer
    from glmdesk.chat.events import ToolResult
    from glmdesk.chat.tools import allow_all

    obs = special(g3_loaded, "<|observation|>")
    call = enc(g3_loaded, "get_weather\n```python\ntool_call(city='x')\n```") + [obs]
    forcer = tm.ForceTokens([call] * 4)
    g3_loaded.logits_processors = lambda: (forcer,)
    handled = []
    items = list(
        run_answer(
            lambda m, p, c, s: stream_answer(g3_loaded, m, p, c, s),
            [ChatMessage("system", "", tools=TOOLS), ChatMessage("user", "weather?")],
            ParamsBox(SamplingParams(temperature=0.0, max_new_tokens=100)),
            tools=Tools(allow_all, lambda c: handled.append(c) or ToolResult('{"t": 1}'), max_rounds=2),
        )
    )
    assert len(handled) == 2
    last = items[-1]
    assert last.finish_reason == "stop" and last.calls == ()
    assert last.notice.kind == "tool_rounds_exceeded" and last.notice.params == {"rounds": 2}
