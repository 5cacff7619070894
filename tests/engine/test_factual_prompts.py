"""The factual questions of ``benchmarks/factual.py`` (tests/data/factual_prompts.json):
the file is well formed, and both engines answer a few of them right, greedily."""

from __future__ import annotations

import pytest

from benchmarks import factual
from glmdesk.core.messages import ChatMessage
from glmdesk.core.settings import LoadSettings, ParamsBox, SamplingParams
from glmdesk.engine.backends.llamacpp.backend import LlamaCppBackend
from glmdesk.engine.backends.transformers.backend import TransformersBackend

# Answered right by llama.cpp, int4-wo and fp32 alike (benchmarks/factual.py).
AGREED = ("What is the capital of Japan?", "Which planet is known as the Red Planet?")


def test_the_questions_are_well_formed() -> None:
    prompts = factual.load_prompts()
    assert len(prompts) == 20 and len({p["prompt"] for p in prompts}) == 20
    for item in prompts:
        assert set(item) == {"prompt", "accept"} and item["prompt"].endswith("?")
        assert item["accept"] and all(isinstance(word, str) and word.strip() for word in item["accept"])
    assert factual.is_right("The capital of France is Paris.", ["Paris"])
    assert not factual.is_right("It boils at 100 degrees.", ["0", "zero"])  # whole words only
    assert factual.is_right("Water freezes at 0°C.", ["0", "zero"])


def _answer(backend, prompt: str, accept: list[str]) -> str:
    """Greedy text until an accepted word shows (or 32 tokens)."""
    box = ParamsBox(SamplingParams(temperature=0.0, max_new_tokens=32))
    text = ""
    for chunk in backend.stream([ChatMessage("user", prompt)], box):
        text += chunk.text
        if factual.is_right(text, accept):
            break
    return text


@pytest.mark.parametrize("engine", ["llamacpp", "transformers"])
def test_both_engines_answer_these_right(engine, embedded) -> None:
    if engine == "llamacpp":
        backend = LlamaCppBackend()
        backend.load(LoadSettings(engine="llamacpp", threads=1))  # one thread: see test_llamacpp_backend
    else:
        backend = TransformersBackend(embedded)  # fp32, the session's model
    accept = {p["prompt"]: p["accept"] for p in factual.load_prompts()}
    try:
        for prompt in AGREED:
            assert factual.is_right(_answer(backend, prompt, accept[prompt]), accept[prompt]), prompt
    finally:
        if engine == "llamacpp":
            backend.close()
