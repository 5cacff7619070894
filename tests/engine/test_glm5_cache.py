"""GLM-5's sparse attention and GLM-5.3-Flash's hybrid layers on every KV strategy.

GLM-5's indexer keeps one key per token beside the attention keys; glmdesk's cache
layers must hold them in the same slots, or the first answer fails ("Cannot call
`update_indexer`"). The reference is transformers' own ``DynamicCache`` (its
``DynamicIndexedLayer``) fed the same chunks: a sparse-attention step's top-k differs
from a whole-sequence forward's by design, so a cache-less forward is no reference
here. For the sink + window ring, the reference is fed one token at a time with a
mask that hides exactly the evicted positions. GLM-5.3-Flash's linear-attention layers keep a
fixed-size state that transformers' ``LinearAttentionLayer`` holds; the strategies
size only the layers that grow.
"""

from __future__ import annotations

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoModelForImageTextToText, DynamicCache

from glmdesk.core.settings import CacheSettings
from glmdesk.engine.cache import make_cache_strategy
from glmdesk.engine.cache.layers import LINEAR_LAYER_TYPES, attention_layers, layer_types
from tests.helpers.glm5_models import write_glm5, write_glm5_flash

PROMPT = 40
STEPS = 8
TOL = 1e-4


@pytest.fixture(scope="module")
def glm5(tmp_path_factory):
    folder = write_glm5(tmp_path_factory.mktemp("glm5"))
    return AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()


@pytest.fixture(scope="module")
def glm5_flash(tmp_path_factory):
    folder = write_glm5_flash(tmp_path_factory.mktemp("glm5_flash"))
    return AutoModelForImageTextToText.from_pretrained(folder, dtype=torch.float32).eval()


@pytest.fixture(scope="module")
def ids():
    generator = torch.Generator().manual_seed(3)
    return torch.randint(10, 300, (1, PROMPT + STEPS), generator=generator)


def reference(model, ids: torch.Tensor, sinks: int | None = None, window: int | None = None) -> torch.Tensor:
    """Logits after the prompt and after each following token from transformers'
    ``DynamicCache``: the prompt in one chunk (no window), or every token alone with
    the positions a sink + window ring has evicted masked out."""
    cache = DynamicCache(config=model.config)
    out = []
    with torch.inference_mode():
        if window is None:
            out.append(model(input_ids=ids[:, :PROMPT], cache=cache, use_cache=True).logits[0, -1])
            start = PROMPT
        else:
            start = 0
        for p in range(start, ids.shape[1] - 1):
            mask = None
            if window is not None:
                k = torch.arange(p + 1)
                mask = ((k < sinks) | (k > p - window)).long()[None]
            logits = model(
                input_ids=ids[:, p : p + 1], attention_mask=mask, cache=cache, use_cache=True
            ).logits
            if p >= PROMPT - 1:
                out.append(logits[0, -1])
    return torch.stack(out)


def run(strategy, ids: torch.Tensor) -> torch.Tensor:
    out = [strategy.prefill(ids[:, :PROMPT])]
    out += [strategy.step(int(t)) for t in ids[0, PROMPT:-1]]
    return torch.stack(out)


def test_glm5_full_cache_matches_the_cacheless_forward(glm5, ids):
    strategy = make_cache_strategy(glm5, CacheSettings(strategy="full"))
    got = run(strategy, ids)
    assert (got - reference(glm5, ids)).abs().max().item() < TOL
    layer = attention_layers(strategy.cache)[0]
    assert layer.indexer_length == layer.length == PROMPT + STEPS - 1
    index_dim = glm5.config.index_head_dim
    assert strategy.stats().kv_bytes >= layer.indexer_keys.shape[1] * index_dim * 4  # counted


def test_glm5_sink_window_matches_the_windowed_reference(glm5, ids):
    settings = CacheSettings(strategy="sliding_window", window=16, sinks=4, prefill_chunk=1)
    strategy = make_cache_strategy(glm5, settings)
    got = run(strategy, ids)
    assert (got - reference(glm5, ids, 4, 16)).abs().max().item() < TOL
    n = PROMPT + STEPS - 1
    assert strategy.held_positions() == [0, 1, 2, 3, *range(n - 16, n)]
    layer = attention_layers(strategy.cache)[0]
    assert layer.indexer_keys.shape[1] == 4 + 16  # the ring's slots, no more


def test_glm5_sink_window_takes_prompt_chunks_that_evict(glm5, ids):
    settings = CacheSettings(strategy="sliding_window", window=16, sinks=4, prefill_chunk=7)
    strategy = make_cache_strategy(glm5, settings)
    got = run(strategy, ids)
    assert torch.isfinite(got).all()
    n = PROMPT + STEPS - 1
    assert strategy.held_positions() == [0, 1, 2, 3, *range(n - 16, n)]


def test_glm5_answers_on_the_quantized_cache(glm5, ids):
    strategy = make_cache_strategy(glm5, CacheSettings(strategy="quantized"))
    got = run(strategy, ids)
    assert got.shape == (STEPS, glm5.config.vocab_size)
    # Lossy: the prompt's logits are exact (its keys are quantized after use); the
    # steps after read rounded keys, close to the exact cache's but not equal.
    diff = (got - reference(glm5, ids)).abs()
    assert diff[0].max().item() < TOL
    assert 0 < diff[1:].mean().item() < 0.01
    assert (
        attention_layers(strategy.cache) == []
        and strategy.cache.layers[0].indexer_keys.shape[1] == PROMPT + STEPS - 1
    )


def test_glm5_dynamic_switch_keeps_the_indexer_keys(glm5, ids):
    strategy = make_cache_strategy(glm5, CacheSettings(strategy="dynamic", window=16, sinks=4))
    per_token = strategy.per_token
    strategy.switch_tokens = PROMPT + 2  # the budget is reached two tokens into the answer
    strategy._cap = strategy.switch_tokens
    strategy.cache = strategy._fresh_cache()
    got = run(strategy, ids)
    assert strategy.state == "windowed" and per_token > 0
    # Before the switch the answer is the full cache's; after it the ring holds the
    # sinks and the window, indexer keys included.
    full = reference(glm5, ids)
    assert (got[:3] - full[:3]).abs().max().item() < TOL
    assert torch.isfinite(got).all()
    layer = attention_layers(strategy.cache)[0]
    assert layer.indexer_length == layer.length == 4 + 16


def test_glm5_flash_full_cache_matches_the_cacheless_forward(glm5_flash, ids):
    kinds = layer_types(glm5_flash.config)
    assert any(kind in LINEAR_LAYER_TYPES for kind in kinds) and "indexed_attention" in kinds
    strategy = make_cache_strategy(glm5_flash, CacheSettings(strategy="full"))
    got = run(strategy, ids)
    assert (got - reference(glm5_flash, ids)).abs().max().item() < TOL
    # Only the indexed layers hold per-token keys.
    assert len(attention_layers(strategy.cache)) == kinds.count("indexed_attention")


def test_glm5_flash_window_holds_a_bounded_cache(glm5_flash, ids):
    settings = CacheSettings(strategy="sliding_window", window=16, sinks=4)
    strategy = make_cache_strategy(glm5_flash, settings)
    logits = run(strategy, ids)
    assert torch.isfinite(logits).all()
    sizes = []
    for token in ids[0, :STEPS]:
        strategy.step(int(token))
        sizes.append(strategy.stats().kv_bytes)
    assert len(set(sizes)) == 1  # neither the ring nor the recurrent state grows


def test_glm5_flash_answers_on_the_quantized_cache(glm5_flash, ids):
    strategy = make_cache_strategy(glm5_flash, CacheSettings(strategy="quantized"))
    got = run(strategy, ids)
    diff = (got - reference(glm5_flash, ids)).abs()
    assert diff[0].max().item() < TOL and diff[1:].mean().item() < 0.01


def test_a_hybrid_cache_is_reused_only_whole(glm5_flash, ids):
    """A linear-attention state holds every position folded in: the next prompt reuses
    it only where it extends the held sequence exactly; anything else starts afresh
    (a shorter prefix cannot be cut out of the state)."""
    strategy = make_cache_strategy(glm5_flash, CacheSettings(strategy="full"))
    strategy.prefill(ids[:, :PROMPT])
    strategy.ids = ids[0, :PROMPT].tolist()
    assert strategy.reuse(ids[0, : PROMPT + 4].tolist()) == PROMPT
    changed = ids[0, : PROMPT + 4].clone()
    changed[PROMPT - 5] += 1
    assert strategy.reuse(changed.tolist()) == 0 and strategy.tokens_seen == 0


def test_long_prompts_of_sparse_attention_run_in_chunks_their_scores_fit(glm5, ids, monkeypatch):
    """transformers' DSA indexer scores every key for every query in fp32, and the top-k
    masks dense attention: a prefill chunk over a long context takes ``chunk x context x
    pair bytes`` (44 GiB for a 1024-token chunk at 128K with GLM-5's shapes, measured on an
    H200). The chunk shrinks so that stays under the bound; the logits do not change."""
    from transformers import Glm5NextConfig, GlmMoeDsaConfig, LlamaConfig

    from glmdesk.engine.cache import base

    assert base.prefill_pair_bytes(GlmMoeDsaConfig(), torch.bfloat16) == 32 * 4 * 2 + 64 * 2
    assert base.prefill_pair_bytes(Glm5NextConfig(), torch.bfloat16) == 32 * 4 * 2 // 16 + 64 * 2
    assert base.prefill_pair_bytes(LlamaConfig(), torch.bfloat16) == 0  # its kernels bound memory
    reference_logits = make_cache_strategy(glm5, CacheSettings(strategy="full")).prefill(ids[:, :PROMPT])
    pair = base.prefill_pair_bytes(glm5.config, torch.float32)
    monkeypatch.setattr(base, "PREFILL_SCORE_BYTES", pair * 16 * 40)  # 16 queries over 40 keys
    strategy = make_cache_strategy(glm5, CacheSettings(strategy="full"))
    sizes = []
    advance = strategy._advance
    monkeypatch.setattr(
        strategy, "_advance", lambda piece, ids_: sizes.append(piece.shape[1]) or advance(piece, ids_)
    )
    got = strategy.prefill(ids[:, :PROMPT])
    assert (
        sum(sizes) == PROMPT and max(sizes) < PROMPT and all(s >= base.MIN_PREFILL_CHUNK for s in sizes[:-1])
    )
    assert (got - reference_logits).abs().max().item() < TOL
    # The real model at 128K tokens in bf16: chunks of 84 tokens, not 2048.
    real = base.prefill_pair_bytes(GlmMoeDsaConfig(), torch.bfloat16)
    assert (4 * 2**30) // (real * (131072 + 2048)) == 84
