"""Tiny GGUFs of the newer GLM families on the app's llama.cpp backend.

Each tiny checkpoint (GLM-4-0414, GLM-Z1, GLM-4.5, GLM-4.7-Flash) is written as the GGUF
llama.cpp's converter makes of it (:func:`tests.helpers.gguf_models.write_gguf`:
architectures ``glm4``, ``glm4moe``, ``deepseek2``), loaded by llama-cpp-python, recognised
as its family from the file alone, prompted from the file's ``tokenizer.chat_template``
with exactly the ids transformers' ``apply_chat_template`` gives on the folder, and driven
(:class:`~tests.helpers.tool_models.ForceTokens` on llama.cpp's logits) to think and answer
through glmdesk's loop. The weights are random: what is tested is the format and the parts.
"""

from __future__ import annotations

import pytest

from glmdesk.core.messages import ChatMessage
from glmdesk.core.parts import ReasoningPart, TextPart, merged
from glmdesk.core.settings import CacheSettings, LoadSettings, ParamsBox, SamplingParams
from glmdesk.core.tools import FunctionSpec, ToolCall, ToolSet
from glmdesk.engine.backends.llamacpp.backend import LlamaCppBackend
from glmdesk.engine.files.gguf_header import read_gguf_header
from tests.helpers import tool_models as tm
from tests.helpers.gguf_models import write_gguf

#: fixture of the tiny folder -> (GGUF architecture, family llama.cpp's file is recognised as)
CASES = {
    "glm4_0414_folder": ("glm4", "glm4-0414"),
    "glm_z1_folder": ("glm4", "glm-z1"),
    "glm45_folder": ("glm4moe", "glm4-moe"),
    "glm47_flash_folder": ("deepseek2", "glm4-moe-lite"),
}
THINKERS = ("glm_z1_folder", "glm45_folder", "glm47_flash_folder")


@pytest.fixture(scope="module")
def ggufs(request, tmp_path_factory):
    """Fixture name -> ``(loaded LlamaCppBackend, the folder's HF tokenizer, GGUF path)``,
    each written and loaded once."""
    from transformers import AutoTokenizer

    loaded: dict[str, tuple] = {}

    def get(name: str):
        if name not in loaded:
            folder = request.getfixturevalue(name)
            path = write_gguf(folder, tmp_path_factory.mktemp("gguf") / f"{folder.name}.gguf")
            backend = LlamaCppBackend()
            backend.load(LoadSettings(model=str(path), engine="llamacpp"))
            loaded[name] = (backend, AutoTokenizer.from_pretrained(folder), path)
        return loaded[name]

    yield get
    for backend, _, _ in loaded.values():
        backend.close()


def _reference(tok, messages, tools=None, **kwargs) -> list[int]:
    return tok.apply_chat_template(
        messages, tools=tools, add_generation_prompt=True, tokenize=True, **kwargs
    )["input_ids"]


@pytest.mark.parametrize("name", list(CASES))
def test_recognised_from_the_file_and_prompted_by_its_template(ggufs, name):
    backend, tok, path = ggufs(name)
    architecture, family = CASES[name]
    assert read_gguf_header(path).architecture == architecture
    assert (backend.info.engine, backend.info.family) == ("llamacpp", family)
    messages = [
        ChatMessage("system", "You are a helpful assistant."),
        ChatMessage("user", "Hello world"),
        ChatMessage("assistant", "The answer is 42."),
        ChatMessage("user", "what is the weather today? 21 degrees, it's 1234"),
    ]
    reference = [{"role": m.role, "content": m.content} for m in messages]
    assert backend.model.prompt_format.encode(messages) == _reference(tok, reference)
    ends = {tok.convert_tokens_to_ids(t) for t in ("<|endoftext|>", "<|user|>", "<|observation|>")}
    assert backend.capabilities().stop_ids == ends  # the GGUF's ids are the folder's
    assert backend.capabilities().tool_calls is (family in ("glm4-moe", "glm4-moe-lite"))  # XML calls
    typed = backend.model.prompt_format.encode([ChatMessage("user", "<|user|> <think>")])
    assert typed.count(tok.convert_tokens_to_ids("<|user|>")) == 1  # typed tags stay text


WEATHER = FunctionSpec("get_weather", "The weather in a city", {"type": "object", "properties": {}})
CALL = ToolCall("get_weather", {"city": "Paris"}, call_id="call_1")


@pytest.mark.parametrize("name", ["glm45_folder", "glm47_flash_folder"])
@pytest.mark.parametrize("thinking", [True, False])
def test_tools_reasoning_and_results_are_the_templates_ids(ggufs, name, thinking):
    backend, tok, _ = ggufs(name)
    fmt = backend.model.prompt_format
    messages = [
        ChatMessage("system", "", tools=ToolSet((WEATHER,))),
        ChatMessage("user", "weather in Paris?"),
        ChatMessage("assistant", "", tool_call=CALL, reasoning="Let me check"),
        ChatMessage("observation", "sunny", name="get_weather"),
    ]
    call = {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}
    reference = [
        {"role": "user", "content": "weather in Paris?"},
        {"role": "assistant", "content": "", "reasoning_content": "Let me check", "tool_calls": [call]},
        {"role": "tool", "content": "sunny"},
    ]
    tools = [{"type": "function", "function": WEATHER.definition()}]
    fmt.thinking = thinking
    try:
        ids = fmt.encode(messages)
    finally:
        fmt.thinking = True
    assert ids == _reference(tok, reference, tools, enable_thinking=thinking)
    assert "<tool_response>\nsunny\n</tool_response>" in tok.decode(ids)


@pytest.mark.parametrize("name", THINKERS)
def test_it_streams_its_thinking_as_reasoning_parts_then_the_answer(ggufs, name, monkeypatch):
    backend, _, _ = ggufs(name)
    vocab, fmt = backend.model.vocab, backend.model.prompt_format
    opened = "" if fmt.opens_reasoning else "<think>"  # Z1 and 4.7 open the block themselves
    script = vocab.encode(f"{opened}Let me think.</think>The answer is 42.", special=True)
    forcer = tm.ForceTokens([script + [vocab.special_id("<|user|>")]])
    monkeypatch.setattr(backend.model, "logits_processors", lambda: (forcer,))
    box = ParamsBox(SamplingParams(temperature=0.0, max_new_tokens=40))
    chunks = list(backend.stream([ChatMessage("user", "Hello world")], box, CacheSettings()))
    assert chunks[-1].finish_reason == "stop", (chunks[-1].error, chunks[-1].notice)
    assert merged(p for c in chunks for p in c.parts) == (
        ReasoningPart("Let me think."),
        TextPart("The answer is 42."),
    )
    assert "".join(c.text for c in chunks) == "The answer is 42."
    assert fmt.opens_reasoning is (name != "glm45_folder")


@pytest.mark.parametrize("name", list(CASES))
def test_random_weights_answer_through_the_loop(ggufs, name):
    backend, _, _ = ggufs(name)
    box = ParamsBox(SamplingParams(temperature=1.0, seed=1, max_new_tokens=12))
    for cache in (CacheSettings(), CacheSettings(strategy="sliding_window", window=16, sinks=2)):
        final = list(backend.stream([ChatMessage("user", "Hello world")], box, cache))[-1]
        assert final.finish_reason in ("stop", "length"), final.error
        assert final.cache.kv_bytes > 0


@pytest.mark.parametrize("name", ["glm4_0414_folder", "glm45_folder", "glm47_flash_folder"])
def test_the_transformers_engine_says_it_cannot_read_these_ggufs(ggufs, name):
    from glmdesk.core.errors import GlmdeskError
    from glmdesk.engine.backends.transformers.loader import load_model

    _, _, path = ggufs(name)
    with pytest.raises(GlmdeskError) as raised:
        load_model(LoadSettings(model=str(path), device="cpu", engine="transformers"))
    architecture = CASES[name][0]
    assert raised.value.kind == "gguf_unsupported"
    assert f"architecture {architecture}, which the transformers engine cannot run" in str(raised.value)
    assert "Open it with the llama.cpp engine" in str(raised.value)


@pytest.mark.parametrize("name", ["glm4_0414_folder", "glm45_folder", "glm47_flash_folder"])
def test_the_gguf_computes_what_the_folder_computes(ggufs, request, name):
    """llama.cpp's logits on the written file equal transformers' on the folder (f32, every
    prompt position): the tensor layout, MLA's split and the rotary settings are the real
    ones. Measured: within 2.1e-4 of logits up to 0.7; the tiny models' logits move by
    0.002-0.016 when only the rotary base changes, so 1e-3 tells a wrong setting."""
    import llama_cpp
    import numpy as np
    import torch
    from transformers import AutoModelForCausalLM

    _, tok, path = ggufs(name)
    model = AutoModelForCausalLM.from_pretrained(request.getfixturevalue(name), dtype=torch.float32).eval()
    ids = tok.encode("Hello world, what is the weather today? 21 degrees.", add_special_tokens=False)
    with torch.no_grad():
        expected = model(torch.tensor([ids])).logits[0].numpy()
    llm = llama_cpp.Llama(str(path), n_ctx=128, logits_all=True, verbose=False)
    try:
        llm.eval(ids)
        got = np.array(llm.scores[: len(ids)])
    finally:
        llm.close()
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, atol=1e-3, rtol=0)
