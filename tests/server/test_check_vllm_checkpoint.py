"""The checkpoint ``scripts/check_vllm.py`` serves writes its known GLM-4.6 answer
(thinking, text, an XML call, then the stop token) by greedy decoding, and glmdesk's own
engine reads it as a reasoning part, a text part and a tool call: what the script then
expects vLLM's parsers to return. The script itself needs vLLM and is not run here."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from glmdesk.core.messages import ChatMessage
from glmdesk.core.parts import ReasoningPart, TextPart, merged
from glmdesk.core.settings import CacheSettings, LoadSettings, ParamsBox, SamplingParams
from glmdesk.core.tools import FunctionSpec, ToolSet
from glmdesk.engine.backends.transformers.loader import load_model

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "check_vllm.py"


def _script():
    spec = importlib.util.spec_from_file_location("check_vllm", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """The script module and the folder of its checkpoint, with the answer's ids."""
    script = _script()
    folder = tmp_path_factory.mktemp("glm46-tiny")
    return script, folder, script.write_checkpoint(folder)


def test_the_served_checkpoint_writes_the_known_answer(served):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    script, tmp_path, chain = served
    tokenizer = AutoTokenizer.from_pretrained(tmp_path)
    model = AutoModelForCausalLM.from_pretrained(tmp_path)
    assert model.config.head_dim == script.CPU_HEAD_DIM
    prompt = tokenizer.apply_chat_template(
        [{"role": "user", "content": "What is the weather in Paris?"}],
        add_generation_prompt=True,
        return_tensors="pt",
        return_dict=True,
    )
    out = model.generate(**prompt, max_new_tokens=40, do_sample=False)
    written = out[0][prompt["input_ids"].shape[1] :].tolist()
    assert written == chain
    assert tokenizer.decode(written) == script.ANSWER + "<|observation|>"


def test_glmdesk_reads_it_as_thinking_text_and_a_call(served):
    from glmdesk.engine.backends.transformers.backend import TransformersBackend

    script, tmp_path, _chain = served
    loaded = load_model(LoadSettings(model=str(tmp_path), device="cpu"))
    function = script.WEATHER_TOOL["function"]
    tools = ToolSet((FunctionSpec(function["name"], function["description"], function["parameters"]),))
    messages = [ChatMessage("system", "", tools=tools), ChatMessage("user", "What is the weather in Paris?")]
    params = ParamsBox(SamplingParams(temperature=0.0, max_new_tokens=40))
    chunks = list(TransformersBackend(loaded).stream(messages, params, CacheSettings()))
    assert merged(p for c in chunks for p in c.parts)[:2] == (
        ReasoningPart(script.REASONING),
        TextPart(script.CONTENT),
    )
    call = chunks[-1].tool_call
    assert chunks[-1].finish_reason == "tool_calls" and call is not None
    assert (call.name, dict(call.arguments)) == ("get_weather", {"city": "Paris"})
