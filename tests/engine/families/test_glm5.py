"""GLM-5 (``GlmMoeDsaForCausalLM``) and GLM-5.3-Flash (``Glm5NextForConditionalGeneration``):
recognised from their folders, GGUF architectures and served ids, prompted by GLM-4.7's
template id for id, and a scripted reply (thinking, answer, an XML call) streams through
the app's transformers backend on every KV strategy.

Tiny random folders (:mod:`tests.helpers.glm5_models`) are loaded through the real
loader; :class:`~tests.helpers.tool_models.ForceTokens` drives the real decode loop.
"""

from __future__ import annotations

import pytest

from glmdesk.core.messages import ChatMessage
from glmdesk.core.parts import ReasoningPart, TextPart, merged
from glmdesk.core.settings import CacheSettings, LoadSettings, ParamsBox, SamplingParams
from glmdesk.core.tools import FunctionSpec, ToolSet
from glmdesk.engine.backends.transformers.loader import load_model
from glmdesk.engine.chatglm.detect import detect_family
from glmdesk.engine.families import family_for_model_id, get_family, recognise_gguf, sampling_defaults
from tests.helpers import tool_models as tm
from tests.helpers.glm5_models import write_glm5, write_glm5_flash

WEATHER = FunctionSpec(
    "get_weather",
    "The weather in a city",
    {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}},
)
TOOLS = ToolSet((WEATHER,))
STRATEGIES = [
    CacheSettings(),
    CacheSettings(strategy="sliding_window", window=24, sinks=2),
    CacheSettings(strategy="dynamic", window=24, sinks=2),
    CacheSettings(strategy="quantized"),
]
STRATEGY_IDS = ["full", "window", "dynamic", "quantized"]


@pytest.fixture(scope="module", params=["glm5", "glm5-flash"])
def model(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp(request.param)
    (write_glm5 if request.param == "glm5" else write_glm5_flash)(folder)
    loaded = load_model(LoadSettings(model=str(folder), device="cpu"))
    return request.param, folder, loaded


def test_recognised_with_stops_defaults_and_model_ids(model):
    name, folder, loaded = model
    assert detect_family(folder) == name and loaded.info.family == name
    family = get_family(name)
    assert family.title == {"glm5": "GLM-5", "glm5-flash": "GLM-5.3-Flash"}[name]
    assert family.reasoning is not None and family.tool_dialect == "glm45" and family.thinking_switch
    defaults = sampling_defaults(name)
    assert (defaults.temperature, defaults.top_p) == (1.0, 0.95)
    tok = loaded.tokenizer
    stops = {tok.convert_tokens_to_ids(t) for t in ("<|endoftext|>", "<|user|>", "<|observation|>")}
    assert loaded.prompt_format.stop_ids == stops


def test_served_ids_and_gguf_architectures_name_them():
    assert family_for_model_id("zai-org/GLM-5.2").name == "glm5"
    assert family_for_model_id("zai-org/GLM-5.3-Flash").name == "glm5-flash"
    assert family_for_model_id("zai-org/GLM-4.7-Flash").name == "glm4-moe-lite"
    assert recognise_gguf("glm-dsa", lambda _t: None).name == "glm5"
    assert recognise_gguf("glm5-next", lambda _t: None).name == "glm5-flash"


@pytest.mark.parametrize("thinking", [True, False])
def test_prompt_is_the_templates_with_tools(model, thinking):
    _name, _folder, loaded = model
    conversation = [
        ChatMessage("system", "You are a helpful assistant.", tools=TOOLS),
        ChatMessage("user", "Hello world"),
        ChatMessage("assistant", "The answer is 42.", reasoning="old steps"),
        ChatMessage("user", "And the weather?"),
    ]
    reference = [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "Hello world"},
        {"role": "assistant", "content": "The answer is 42.", "reasoning_content": "old steps"},
        {"role": "user", "content": "And the weather?"},
    ]
    loaded.prompt_format.thinking = thinking
    try:
        ids = loaded.prompt_format.encode(conversation)
    finally:
        loaded.prompt_format.thinking = True
    want = loaded.tokenizer.apply_chat_template(
        reference,
        tools=[{"type": "function", "function": WEATHER.definition()}],
        add_generation_prompt=True,
        tokenize=True,
        enable_thinking=thinking,
    )["input_ids"]
    assert ids == want


def _stream(loaded, text: str, cache: CacheSettings, stop_token: str = "<|user|>"):
    from glmdesk.engine.backends.transformers.backend import TransformersBackend

    tok = loaded.tokenizer
    script = tok.encode(text, add_special_tokens=False) + [tok.convert_tokens_to_ids(stop_token)]
    forcer = tm.ForceTokens([script])
    loaded.logits_processors = lambda: (forcer,)
    try:
        params = ParamsBox(SamplingParams(temperature=0.0, max_new_tokens=60))
        messages = [ChatMessage("system", "", tools=TOOLS), ChatMessage("user", "Hello world")]
        return list(TransformersBackend(loaded).stream(messages, params, cache))
    finally:
        loaded.logits_processors = lambda: ()


@pytest.mark.parametrize("cache", STRATEGIES, ids=STRATEGY_IDS)
def test_it_thinks_apart_then_answers_on_every_kv_strategy(model, cache):
    _name, _folder, loaded = model
    chunks = _stream(loaded, "Let me think step by step.</think>The answer is 42.", cache)
    assert chunks[-1].finish_reason == "stop", chunks[-1].error
    assert merged(p for c in chunks for p in c.parts) == (
        ReasoningPart("Let me think step by step."),
        TextPart("The answer is 42."),
    )
    assert chunks[-1].cache.kv_bytes > 0


def test_an_xml_call_after_its_thinking_is_a_tool_call(model):
    _name, _folder, loaded = model
    written = "I need the weather.</think><tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value></tool_call>"
    chunks = _stream(loaded, written, CacheSettings(), stop_token="<|observation|>")
    assert chunks[-1].finish_reason == "tool_calls"
    call = chunks[-1].tool_call
    assert (call.name, dict(call.arguments)) == ("get_weather", {"city": "Paris"})
