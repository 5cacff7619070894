"""KV storage gives the logits of an exact computation (real embedded model, no mocks).

The sink + window semantics: the token at position ``p`` attends to ``k <= p`` with
``k < S`` or ``k > p - W``, keys at their original rotary positions. The
reference runs the whole sequence at once, without a cache, with exactly that
mask, in float64; the strategy runs in float32 (its fp32 rounding is the only
difference, ~5e-5 on logits of magnitude ~30).
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import torch
from transformers import AutoTokenizer

from glmdesk.core.settings import CacheSettings
from glmdesk.engine.cache import FullCacheStrategy, make_cache_strategy

TEXT = Path(__file__).parents[2] / "benchmarks" / "data" / "public_domain.txt"
PROMPT = 80
STEPS = 8
TOL = 1e-4


@pytest.fixture(scope="module")
def ids(embedded_folder):
    tokenizer = AutoTokenizer.from_pretrained(embedded_folder)
    return tokenizer(TEXT.read_text(), return_tensors="pt").input_ids[:, 200 : 200 + PROMPT + STEPS]


@pytest.fixture(scope="module")
def reference(embedded_model, ids):
    """``reference(sinks, window)``: float64 logits at the compared positions, computed once."""
    model64 = copy.deepcopy(embedded_model).double().eval()
    done = {}

    def get(sinks: int, window: int) -> torch.Tensor:
        if (sinks, window) not in done:
            done[sinks, window] = reference_logits(model64, ids, sinks, window)[PROMPT - 1 : -1]
        return done[sinks, window]

    return get


def reference_logits(model, ids: torch.Tensor, sinks: int | None, window: int | None) -> torch.Tensor:
    """Logits ``[n, vocab]`` of one cache-less forward with the window mask (None: causal)."""
    n = ids.shape[1]
    q = torch.arange(n)[:, None]
    k = torch.arange(n)[None, :]
    allowed = k <= q
    if window is not None:
        allowed &= (k < sinks) | (k > q - window)
    with torch.inference_mode():
        return model(input_ids=ids, attention_mask=allowed[None, None]).logits[0].double()


def run(strategy, ids: torch.Tensor) -> torch.Tensor:
    """Logits after the prompt and after each following token, ``[STEPS + 1, vocab]``."""
    out = [strategy.prefill(ids[:, :PROMPT])]
    out += [strategy.step(int(t)) for t in ids[0, PROMPT:-1]]
    return torch.stack(out).double()


@pytest.mark.parametrize("chunk", [80, 7], ids=["one-chunk-longer-than-window", "chunks-7"])
def test_sink_window_matches_exact_reference(embedded_model, reference, ids, chunk):
    settings = CacheSettings(strategy="sliding_window", window=32, sinks=4, prefill_chunk=chunk)
    strategy = make_cache_strategy(embedded_model, settings)
    got = run(strategy, ids)
    assert (got - reference(4, 32)).abs().max().item() < TOL
    n = PROMPT + STEPS - 1
    assert strategy.held_positions() == [0, 1, 2, 3, *range(n - 32, n)]


def test_eager_attention_path_matches(embedded_model, reference, ids):
    eager = copy.deepcopy(embedded_model)
    eager.set_attn_implementation("eager")
    strategy = make_cache_strategy(
        eager, CacheSettings(strategy="sliding_window", window=32, sinks=4, prefill_chunk=48)
    )
    assert (run(strategy, ids) - reference(4, 32)).abs().max().item() < TOL


def test_plain_window_matches_exact_reference(embedded_model, reference, ids):
    # Without sinks the model is ill-conditioned: fp32 itself is ~1e-3 off float64 here.
    strategy = make_cache_strategy(
        embedded_model, CacheSettings(strategy="sliding_window", window=32, sinks=0, prefill_chunk=48)
    )
    assert (run(strategy, ids) - reference(0, 32)).abs().max().item() < 1e-2


@pytest.mark.parametrize("static", [False, True], ids=["doubling", "static"])
def test_full_cache_matches_dynamic_cache(embedded_model, ids, static):
    from transformers import DynamicCache  # the reference path only

    settings = CacheSettings(strategy="full", prefill_chunk=30)
    strategy = FullCacheStrategy(embedded_model, settings, static=static, max_tokens=160, initial_tokens=16)
    got = run(strategy, ids)
    cache = DynamicCache(config=embedded_model.config)
    with torch.inference_mode():
        ref = [embedded_model(input_ids=ids[:, :PROMPT], cache=cache).logits[0, -1]]
        for t in ids[0, PROMPT:-1]:
            ref.append(embedded_model(input_ids=t.view(1, 1), cache=cache).logits[0, -1])
    assert (got - torch.stack(ref).double()).abs().max().item() < TOL
    layer = strategy.cache.layers[0]
    # static: one allocation; doubling: 30 -> 60 -> 120 (logarithmic, never per token)
    assert layer.reallocations == (1 if static else 3)


def test_full_cache_greedy_output_equals_generate(embedded_model, ids):
    prompt = ids[:, :32]
    with torch.inference_mode():
        expected = embedded_model.generate(prompt, max_new_tokens=16, do_sample=False)[0, 32:].tolist()
    strategy = make_cache_strategy(embedded_model, CacheSettings(strategy="full", prefill_chunk=16))
    logits = strategy.prefill(prompt)
    tokens = []
    for _ in range(len(expected)):
        tokens.append(int(logits.argmax()))
        logits = strategy.step(tokens[-1])
    assert tokens == expected
