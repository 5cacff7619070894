"""GLM-4.7-Flash (``Glm4MoeLiteForCausalLM``, MLA attention): recognised from its folder and
its ``deepseek2`` GGUF metadata, prompted by GLM-4.7's own template id for id, and a scripted
reply streams its thinking apart from the answer through the app's transformers backend.

A tiny random ``Glm4MoeLiteForCausalLM`` folder is loaded through the real loader; prompt
ids are compared with transformers' ``apply_chat_template`` on the same conversation, and
:class:`~tests.helpers.tool_models.ForceTokens` drives the real decode loop.
"""

from __future__ import annotations

import pytest

from glmdesk.core.messages import ChatMessage
from glmdesk.core.parts import ReasoningPart, TextPart, merged
from glmdesk.core.settings import CacheSettings, LoadSettings, ParamsBox, SamplingParams
from glmdesk.core.tools import FunctionSpec, ToolCall, ToolSet
from glmdesk.engine.backends.transformers.loader import load_model
from glmdesk.engine.chatglm.detect import detect_family
from glmdesk.engine.families import (
    family_for_model_id,
    get_family,
    recognise_gguf,
    sampling_defaults,
    tool_dialect,
)
from tests.helpers import tool_models as tm

WEATHER = FunctionSpec(
    "get_weather",
    "The weather in a city",
    {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}},
)
TOOLS = ToolSet((WEATHER,))
TOOL_DICTS = [{"type": "function", "function": WEATHER.definition()}]


@pytest.fixture(scope="module")
def flash(glm47_flash_folder):
    return load_model(LoadSettings(model=str(glm47_flash_folder), device="cpu"))


@pytest.fixture(scope="module")
def hf_tok(glm47_flash_folder):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(glm47_flash_folder)


def _vocab(tokens):
    return lambda text: tokens.get(text)


GLM_VOCAB = {
    t: i
    for i, t in enumerate(("[gMASK]", "<sop>", "<|system|>", "<|user|>", "<|assistant|>", "<|observation|>"))
}
DEEPSEEK_VOCAB = {
    "<｜begin▁of▁sentence｜>": 0,
    "<｜end▁of▁sentence｜>": 1,
    "<｜User｜>": 2,
    "<｜Assistant｜>": 3,
}


def test_recognised_with_its_stops_defaults_and_model_ids(flash, glm47_flash_folder, hf_tok):
    assert detect_family(glm47_flash_folder) == "glm4-moe-lite"
    assert flash.info.family == "glm4-moe-lite" and flash.info.engine == "transformers"
    assert type(flash.model).__name__ == "Glm4MoeLiteForCausalLM"
    defaults = sampling_defaults("glm4-moe-lite")
    assert (defaults.temperature, defaults.top_p) == (1.0, 0.95)
    family = get_family("glm4-moe-lite")
    assert family.title == "GLM-4.7-Flash" and family.reasoning is not None
    assert tool_dialect("glm4-moe-lite") == "glm45"
    stops = {hf_tok.convert_tokens_to_ids(t) for t in ("<|endoftext|>", "<|user|>", "<|observation|>")}
    assert flash.prompt_format.stop_ids == stops
    assert family_for_model_id("zai-org/GLM-4.7-Flash").name == "glm4-moe-lite"
    assert family_for_model_id("zai-org/GLM-4.7").name == "glm4-moe"  # the big one stays GLM-4.5's family


def test_a_deepseek2_gguf_is_glm_only_with_glms_vocabulary():
    meta = {"tokenizer.ggml.pre": "glm4"}.get
    assert recognise_gguf("deepseek2", _vocab(GLM_VOCAB)).name == "glm4-moe-lite"
    roles_only = {k: v for k, v in GLM_VOCAB.items() if k not in ("[gMASK]", "<sop>")}
    assert recognise_gguf("deepseek2", _vocab(roles_only), meta).name == "glm4-moe-lite"
    assert recognise_gguf("deepseek2", _vocab(roles_only)).name == "generic"
    assert recognise_gguf(
        "deepseek2", _vocab(DEEPSEEK_VOCAB), {"tokenizer.ggml.pre": "deepseek-v3"}.get
    ).name == ("generic")
    assert recognise_gguf("llama", _vocab(GLM_VOCAB)).name == "generic"


def _reference(tok, messages, tools=None, thinking=True):
    return tok.apply_chat_template(
        messages, tools=tools, add_generation_prompt=True, tokenize=True, enable_thinking=thinking
    )["input_ids"]


CALL = ToolCall("get_weather", {"city": "Paris", "days": 3}, call_id="call_1")
CONVERSATION = [
    ChatMessage("system", "You are a helpful assistant.", tools=TOOLS),
    ChatMessage("user", "Hello world"),
    ChatMessage("assistant", "The answer is 42.", reasoning="old steps"),
    ChatMessage("user", "what is the weather today in Paris?"),
    ChatMessage("assistant", "", tool_call=CALL, reasoning="Let me think"),
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


@pytest.mark.parametrize("thinking", [True, False])
def test_prompt_is_glm47s_template_with_tools_reasoning_and_results(flash, hf_tok, thinking):
    flash.prompt_format.thinking = thinking
    try:
        ids = flash.prompt_format.encode(CONVERSATION)
        opens = flash.prompt_format.opens_reasoning
    finally:
        flash.prompt_format.thinking = True
    assert ids == _reference(hf_tok, REFERENCE, TOOL_DICTS, thinking)
    text = hf_tok.decode(ids)
    assert "<think>Let me think</think>" in text and "<think>old steps" not in text  # the template's choice
    assert text.endswith("<|assistant|><think>" if thinking else "<|assistant|></think>")
    assert opens is thinking


def _stream(model, text: str, cache: CacheSettings | None = None, stop_token: str = "<|user|>"):
    from glmdesk.engine.backends.transformers.backend import TransformersBackend

    tok = model.tokenizer
    script = tok.encode(text, add_special_tokens=False) + [tok.convert_tokens_to_ids(stop_token)]
    forcer = tm.ForceTokens([script])
    model.logits_processors = lambda: (forcer,)
    params = ParamsBox(SamplingParams(temperature=0.0, max_new_tokens=60))
    backend = TransformersBackend(model)
    messages = [ChatMessage("system", "", tools=TOOLS), ChatMessage("user", "Hello world")]
    return list(backend.stream(messages, params, cache or CacheSettings()))


@pytest.mark.parametrize(
    "cache",
    [CacheSettings(), CacheSettings(strategy="sliding_window", window=24, sinks=2)],
    ids=["full", "window"],
)
def test_it_streams_its_thinking_apart_then_the_answer(flash, cache):
    # The generation prompt opened <think>: the model writes its thoughts, closes, answers.
    chunks = _stream(flash, "Let me think step by step.</think>The answer is 42.", cache)
    assert chunks[-1].finish_reason == "stop", chunks[-1].error
    assert merged(p for c in chunks for p in c.parts) == (
        ReasoningPart("Let me think step by step."),
        TextPart("The answer is 42."),
    )
    assert "".join(c.text for c in chunks) == "The answer is 42."
    last = chunks[-1]
    assert 0.0 < last.ttft_s < last.answer_ttft_s and last.reasoning_tokens > 0
    assert last.cache.kv_bytes > 0


def test_an_xml_call_after_its_thinking_is_a_tool_call(flash):
    written = (
        "I need the weather.</think>\n<tool_call>get_weather\n"
        "<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>"
    )
    chunks = _stream(flash, written, stop_token="<|observation|>")
    assert chunks[-1].finish_reason == "tool_calls"
    call = chunks[-1].tool_call
    assert (call.name, dict(call.arguments)) == ("get_weather", {"city": "Paris"})
    reasoning = "".join(p.text for c in chunks for p in c.parts if isinstance(p, ReasoningPart))
    assert reasoning == "I need the weather."


@pytest.mark.parametrize("engine", ["transformers", "llamacpp"])
def test_glmdesk_chat_runs_it_from_the_folder_and_from_its_gguf(glm47_flash_folder, tmp_path, engine):
    from tests.helpers.cli import run_cli
    from tests.helpers.gguf_models import write_gguf

    model = glm47_flash_folder
    if engine == "llamacpp":
        model = write_gguf(glm47_flash_folder, tmp_path / "GLM-4.7-Flash-F32.gguf")
    args = ("--prompt", "Hello", "--max-new-tokens", "6", "--temperature", "0")
    out = run_cli("chat", "--model", str(model), "--engine", engine, *args)
    assert out.returncode == 0, out.stderr
    assert " [glm4-moe-lite] on cpu" in out.stderr and f"; {engine})" in out.stderr
    # GLM-4.7's prompt opened <think>: what the random weights write is thinking, on stderr.
    assert "Thinking:\n│ " in out.stderr and "Traceback" not in out.stderr


def test_its_kv_bytes_per_token_are_the_latent_its_cache_holds(flash):
    """MLA: the cache holds one latent key (kv_lora_rank) and the rotary key a token and
    layer, not keys and values per head; the model's figure (context bar, dynamic
    budget) says what the buffers of a prefilled full cache really hold."""
    import torch

    from glmdesk.engine.cache import make_cache_strategy

    strategy = make_cache_strategy(flash.model, CacheSettings())
    strategy.prefill(torch.tensor([list(range(5, 45))]))
    held = sum(
        (layer.keys.shape[1] * layer.keys.shape[-1] + layer.values.shape[1] * layer.values.shape[-1])
        * layer.keys.element_size()
        for layer in strategy.cache.layers
    )
    assert flash.info.kv_bytes_per_token == held
    strategy.release()
