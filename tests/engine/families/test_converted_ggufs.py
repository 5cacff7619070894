"""GGUFs made by llama.cpp's own converter from the tiny GLM-4.5, GLM-4.7-Flash, GLM-5 (with
GLM-5.2's template) and GLM-5.3-Flash checkpoints, run on the app's llama.cpp engine.

The converter is llama-cpp-python's (``vendor/llama.cpp/convert_hf_to_gguf.py`` of the
installed version, see :mod:`tests.helpers.llamacpp_convert`); without its source here the
tests skip and say how to fetch it. Each file is recognised as its family from the file
alone, prompted with exactly the ids transformers' ``apply_chat_template`` gives on the
folder, and answers greedily with the very tokens transformers' own greedy decode (its
``DynamicCache``) gives on the same weights.

Shapes llama.cpp 0.3.36 needs: the sparse-attention indexer's keys a multiple of 64 wide
(GLM-5, GLM-5.3-Flash; a narrower one aborts the process, so glmdesk refuses the file first,
tested below) and GLM-5.3-Flash's four hyper-connection streams. GLM-5.3-Flash's indexer
picks the top 32 pools of 2 keys here, so every key is attended within these answers: once
its pooled top-k drops keys, llama.cpp's logits and transformers' part by up to 0.12 at some
steps (measured on this checkpoint at 18-26 tokens with top 8 pools), where GLM-5's indexer
agrees to 1e-4.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from glmdesk.core.errors import GlmdeskError
from glmdesk.core.messages import ChatMessage
from glmdesk.core.settings import CacheSettings, LoadSettings, ParamsBox, SamplingParams
from glmdesk.engine.backends.llamacpp.backend import LlamaCppBackend
from glmdesk.engine.files.gguf_header import read_gguf_header
from tests.helpers.llamacpp_convert import convert, converter_or_skip

pytestmark = pytest.mark.slow  # each file: a tiny folder, a conversion (4-18 s) and two engines

#: name -> (GGUF architecture, glmdesk family, folder writer's keyword arguments)
CASES = {
    "GLM-4.5-Air": ("glm4moe", "glm4-moe"),
    "GLM-4.7-Flash": ("deepseek2", "glm4-moe-lite"),
    "GLM-5.2": ("glm-dsa", "glm5"),
    "GLM-5.3-Flash": ("glm5-next", "glm5-flash"),
}
MESSAGES = [
    ChatMessage("system", "You are a helpful assistant."),
    ChatMessage("user", "Hello world"),
    ChatMessage("assistant", "The answer is 42."),
    ChatMessage("user", "what is the weather today? 21 degrees, it's 1234"),
]
ANSWER_TOKENS = 12


def write_folder(name: str, folder: Path) -> Path:
    """The tiny Hugging Face folder of ``name`` (shapes llama.cpp runs, see the docstring)."""
    if name == "GLM-4.5-Air":
        from tests.helpers.glm45_models import write_glm45

        return write_glm45(folder)
    if name == "GLM-4.7-Flash":
        from tests.helpers.glm47_flash_models import write_glm47_flash

        return write_glm47_flash(folder)
    from tests.helpers.glm5_models import GLM52_TEMPLATE, write_glm5, write_glm5_flash

    if name == "GLM-5.2":  # GLM-5 with GLM-5.2's reasoning-effort stanza in its template
        return write_glm5(folder, name="zai-org/GLM-5.2", template=GLM52_TEMPLATE, index_head_dim=64)
    return write_glm5_flash(folder, index_head_dim=64, hc_mult=4, index_topk=32)


@pytest.fixture(scope="session")
def converted(tmp_path_factory):
    """Name -> ``(folder, GGUF path)``, each written and converted once per session."""
    made: dict[str, tuple[Path, Path]] = {}

    def get(name: str) -> tuple[Path, Path]:
        converter = converter_or_skip()
        if name not in made:
            base = tmp_path_factory.mktemp(name.lower().replace(".", ""))
            folder = write_folder(name, base / name)
            made[name] = (folder, convert(folder, base / f"{name}-F32.gguf", converter))
        return made[name]

    return get


@pytest.fixture
def loaded(converted, request):
    folder, path = converted(request.param)
    backend = LlamaCppBackend()
    backend.load(LoadSettings(model=str(path), engine="llamacpp"))
    yield request.param, folder, path, backend
    backend.close()


def transformers_greedy(folder: Path, prompt: list[int], stops: set[int], n: int) -> list[int]:
    """Transformers' greedy continuation of ``prompt`` on ``folder``'s weights (its own
    ``DynamicCache``, fp32), up to ``n`` tokens, ending at the first stop id (kept)."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForImageTextToText, DynamicCache

    vision = AutoConfig.from_pretrained(folder).model_type == "glm5_next"
    auto = AutoModelForImageTextToText if vision else AutoModelForCausalLM
    model = auto.from_pretrained(folder, dtype=torch.float32).eval()
    cache, out, step = DynamicCache(config=model.config), [], prompt
    with torch.inference_mode():
        while len(out) < n:
            logits = model(input_ids=torch.tensor([step]), cache=cache, use_cache=True).logits[0, -1]
            out.append(int(logits.argmax()))
            if out[-1] in stops:
                break
            step = [out[-1]]
    return out


@pytest.mark.parametrize("loaded", list(CASES), indirect=True)
def test_recognised_from_the_file_and_prompted_by_the_templates_ids(loaded):
    from transformers import AutoTokenizer

    name, folder, path, backend = loaded
    architecture, family = CASES[name]
    assert read_gguf_header(path).architecture == architecture
    assert (backend.info.engine, backend.info.family) == ("llamacpp", family)
    tok = AutoTokenizer.from_pretrained(folder)
    reference = [{"role": m.role, "content": m.content} for m in MESSAGES]
    fmt = backend.model.prompt_format
    for thinking in (True, False):
        fmt.thinking = thinking
        try:
            ids = fmt.encode(MESSAGES)
        finally:
            fmt.thinking = True
        expected = tok.apply_chat_template(
            reference, add_generation_prompt=True, tokenize=True, enable_thinking=thinking
        )["input_ids"]
        assert ids == expected, thinking
    ends = {tok.convert_tokens_to_ids(t) for t in ("<|endoftext|>", "<|user|>", "<|observation|>")}
    assert backend.capabilities().stop_ids == ends


@pytest.mark.parametrize("loaded", list(CASES), indirect=True)
def test_greedy_answer_is_transformers_own(loaded):
    name, folder, _, backend = loaded
    box = ParamsBox(SamplingParams(temperature=0.0, max_new_tokens=ANSWER_TOKENS))
    chunks = list(backend.stream(MESSAGES, box, CacheSettings()))
    assert chunks[-1].finish_reason in ("stop", "length"), chunks[-1].error
    got = [i for c in chunks for i in c.token_ids]
    stops = set(backend.capabilities().stop_ids)
    expected = transformers_greedy(folder, backend.model.prompt_format.encode(MESSAGES), stops, ANSWER_TOKENS)
    assert len(expected) >= 4, f"{name}: too short an answer to compare ({expected})"
    assert got == expected, name


@pytest.mark.parametrize("loaded", ["GLM-5.2"], indirect=True)
def test_each_reasoning_effort_is_the_templates_ids(loaded):
    from transformers import AutoTokenizer

    from glmdesk.engine.formats.prompt import thinking_for

    _, folder, _, backend = loaded
    tok = AutoTokenizer.from_pretrained(folder)
    assert backend.info.effort_levels == ("high", "max")
    fmt = backend.model.prompt_format
    reference = [{"role": m.role, "content": m.content} for m in MESSAGES]
    for level in ("high", "max"):
        with thinking_for(fmt, None, (("reasoning_effort", level),)):
            ids = fmt.encode(MESSAGES)
        expected = tok.apply_chat_template(
            reference, add_generation_prompt=True, tokenize=True, reasoning_effort=level
        )["input_ids"]
        assert ids == expected, level
        assert f"effort={level}" in tok.decode(ids)


def test_a_glm5_whose_indexer_llamacpp_cannot_run_is_refused_with_a_sentence(tmp_path):
    from tests.helpers.glm5_models import write_glm5

    converter = converter_or_skip()
    folder = write_glm5(tmp_path / "GLM-5")  # indexer keys 16 wide: llama.cpp would abort
    path = convert(folder, tmp_path / "GLM-5-narrow.gguf", converter)
    backend = LlamaCppBackend()
    with pytest.raises(GlmdeskError) as raised:
        backend.load(LoadSettings(model=str(path), engine="llamacpp"))
    assert raised.value.kind == "unsupported_checkpoint"
    assert str(raised.value) == (
        "GLM-5-narrow cannot be used: its sparse-attention indexer keys are 16 wide, "
        "and llama.cpp needs a multiple of 64 there."
    )


@pytest.mark.parametrize("loaded", list(CASES), indirect=True)
def test_tools_reasoning_and_results_are_the_templates_ids(loaded):
    from transformers import AutoTokenizer

    from glmdesk.core.tools import FunctionSpec, ToolCall, ToolSet

    name, folder, _, backend = loaded
    tok = AutoTokenizer.from_pretrained(folder)
    weather = FunctionSpec("get_weather", "The weather in a city", {"type": "object", "properties": {}})
    messages = [
        ChatMessage("system", "", tools=ToolSet((weather,))),
        ChatMessage("user", "weather in Paris?"),
        ChatMessage(
            "assistant", "", tool_call=ToolCall("get_weather", {"city": "Paris"}), reasoning="Let me check"
        ),
        ChatMessage("observation", "sunny", name="get_weather"),
    ]
    call = {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}
    reference = [
        {"role": "user", "content": "weather in Paris?"},
        {"role": "assistant", "content": "", "reasoning_content": "Let me check", "tool_calls": [call]},
        {"role": "tool", "content": "sunny"},
    ]
    tools = [{"type": "function", "function": weather.definition()}]
    fmt = backend.model.prompt_format
    assert backend.capabilities().tool_calls
    for thinking in (True, False):
        fmt.thinking = thinking
        try:
            ids = fmt.encode(messages)
        finally:
            fmt.thinking = True
        expected = tok.apply_chat_template(
            reference, tools=tools, add_generation_prompt=True, tokenize=True, enable_thinking=thinking
        )["input_ids"]
        assert ids == expected, (name, thinking)
        assert "<tool_response>\nsunny\n</tool_response>" in tok.decode(ids)
