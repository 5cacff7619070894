"""The static decode path (compiled one-token graph on bucketed KV buffers) on the CPU.

A tiny random Llama with the embedded model's tokenizer and prompt format answers
through the app's decode loop twice: with the static step and with the eager fused
step, on one model. Answers must be the same tokens for every KV strategy, across
turns (KV reuse), with Stop and with sampling changed mid-answer; the step is
compiled once for the module (Inductor's C++ backend, about a minute on two busy
cores) and must not recompile afterwards, a bucket crossing included.
"""

from __future__ import annotations

import dataclasses
import threading

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from glmdesk.core.messages import ChatMessage
from glmdesk.core.settings import CacheSettings, ParamsBox, SamplingParams
from glmdesk.engine.backends.transformers.loader import LoadedModel
from glmdesk.engine.decode import compile_support, decode_step, static_decode
from glmdesk.engine.decode.generate import reuse_compat, stream_answer
from glmdesk.engine.decode.static_decode import MIN_BUCKET, bucket_tokens, build_static_step

needs_compiler = pytest.mark.skipif(
    compile_support.compiler_missing_reason() is not None, reason="no C++ compiler for TorchInductor"
)
GREEDY = SamplingParams(temperature=0.0, max_new_tokens=40)
QUESTION = [ChatMessage("user", "Tell me a long story about the sea.")]


@pytest.fixture(scope="module")
def pair(embedded, tmp_path_factory):
    """``(static, eager, calls)``: one tiny model loaded twice, decoding with the static
    step and with the eager fused step, and a list that grows by one per token the
    eager fused step runs (either model's)."""
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(embedded.tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=embedded.context_length,
    )
    model = LlamaForCausalLM(config).eval()
    calls = []
    original = decode_step.FusedDecodeStep.__call__

    def counted(self, *args):
        calls.append(1)
        return original(self, *args)

    def loaded(decode):
        return LoadedModel(model, embedded.tokenizer, embedded.prompt_format, embedded.info, step=decode)

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path_factory.mktemp("inductor")))
        step = build_static_step(model)
        patch.setattr(decode_step.FusedDecodeStep, "__call__", counted)
        yield loaded(step), loaded(step.eager), calls


def answer(loaded, params=GREEDY, cache=None, messages=QUESTION, stop=None, key=None, on_chunk=None):
    box = ParamsBox(params)
    chunks = []
    for chunk in stream_answer(loaded, messages, box, cache, stop=stop, conversation=key):
        chunks.append(chunk)
        if on_chunk is not None:
            on_chunk(chunk, box)
    final = chunks[-1]
    assert final.error is None, final.error
    return [t for c in chunks for t in c.token_ids], final


def test_buckets_are_powers_of_two_capped_at_the_limit():
    assert bucket_tokens(1, 8192) == MIN_BUCKET
    assert bucket_tokens(MIN_BUCKET + 1, 8192) == 2 * MIN_BUCKET
    assert bucket_tokens(3000, 8192) == 4096
    assert bucket_tokens(7000, 6000) == 8192  # past the limit: the next power of two
    assert bucket_tokens(5000, 6000) == 6000


@pytest.mark.slow
@needs_compiler
@pytest.mark.parametrize(
    "cache",
    [
        CacheSettings(),
        CacheSettings("sliding_window", window=16, sinks=2),
        # 2 layers x 2 KV heads x 16 dims x 4 bytes x 2 = 512 bytes a token: the switch at 48 tokens.
        CacheSettings("dynamic", budget_mib=48 * 512 / 2**20, window=16, sinks=2),
    ],
    ids=["full", "window", "dynamic"],
)
def test_static_tokens_equal_eager_for_every_strategy(pair, cache):
    static, eager, calls = pair
    calls.clear()
    got, final = answer(static, cache=cache)
    assert not calls  # every token after the prompt went through the compiled graph
    want, _ = answer(eager, cache=cache)
    assert got == want and len(got) == GREEDY.max_new_tokens
    if cache.strategy != "full":  # past the window (the dynamic cache past its switch)
        assert final.cache.state == "windowed" and final.cache.evicted > 0
    assert static.step.recompiles() == 0


@pytest.mark.slow
@needs_compiler
def test_kv_reuse_keeps_the_prefix_in_the_static_buffers(pair):
    static, eager, _ = pair
    results, kept = [], []

    def kept_pointers(loaded):
        """Key/value addresses of the conversation's kept cache (taken out and put back)."""
        compat = reuse_compat(CacheSettings())
        source = loaded.kv_pool.take("chat", compat)
        pointers = [t.data_ptr() for layer in source.cache.layers for t in (layer.keys, layer.values)]
        if loaded is static:  # in the step's slab, leased to this conversation
            assert set(pointers) == set(static.step.pool.slab_of(source.cache.layers[0]).data_ptrs())
        loaded.kv_pool.put("chat", source, compat)
        return pointers

    for loaded in (static, eager):
        first, final = answer(loaded, key="chat")
        kept.append(kept_pointers(loaded))
        text = loaded.decode(first)
        follow = [*QUESTION, ChatMessage("assistant", text), ChatMessage("user", "And then?")]
        second, again = answer(loaded, messages=follow, key="chat")
        assert again.reused_tokens >= final.prompt_tokens  # the first turn's prompt was kept
        kept[-1] = (kept[-1], kept_pointers(loaded))
        results.append((first, second))
        loaded.kv_pool.clear()
    assert results[0] == results[1]
    before, after = kept[0]  # the static step's kept conversation: the same slab both turns
    assert before == after


@pytest.mark.slow
@needs_compiler
def test_stop_ends_the_answer_within_one_token(pair):
    static, _, _ = pair
    stop = threading.Event()

    def press(chunk, _box):
        if chunk.n_generated == 5:
            stop.set()

    tokens, final = answer(static, stop=stop, on_chunk=press)
    assert final.finish_reason == "cancelled" and final.n_generated == 5 and len(tokens) == 5


@pytest.mark.slow
@needs_compiler
def test_a_sampling_change_between_tokens_takes_effect(pair):
    static, eager, _ = pair
    start = dataclasses.replace(GREEDY, seed=7)

    def slide(chunk, box):
        if chunk.n_generated == 6:  # the user moves the temperature slider mid-answer
            box.set(dataclasses.replace(start, temperature=1.5, top_p=1.0))

    greedy, _ = answer(static, params=start)
    changed, _ = answer(static, params=start, on_chunk=slide)
    assert changed[:6] == greedy[:6] and changed[6:] != greedy[6:]
    assert changed == answer(eager, params=start, on_chunk=slide)[0]


@pytest.mark.slow
@needs_compiler
def test_no_recompile_over_a_long_answer_crossing_a_bucket(pair):
    static, eager, calls = pair
    step = static.step
    model = static.model
    ids = torch.randint(0, model.config.vocab_size, (1, MIN_BUCKET - 20))
    tokens = {}
    for name, decode in (("static", step), ("eager", eager.step)):
        strategy = static_decode_strategy(model, decode)
        logits = strategy.prefill(ids)
        chosen = []
        for _ in range(60):  # 1004 + 60 tokens: past the first bucket
            chosen.append(int(torch.argmax(logits)))
            logits = strategy.step(chosen[-1])
        if name == "static":
            assert strategy.cache.layers[0].capacity == 2 * MIN_BUCKET
        strategy.release()
        tokens[name] = chosen
    assert tokens["static"] == tokens["eager"]
    assert step.recompiles() == 0 and static_decode.recompiles(step) == 0
    # The next answer crosses the same bucket in the same (now grown) slab, still no recompile.
    strategy = static_decode_strategy(model, step)
    logits = strategy.prefill(ids)
    again = []
    for _ in range(60):
        again.append(int(torch.argmax(logits)))
        logits = strategy.step(again[-1])
    slab = step.pool.slab_of(strategy.cache.layers[0])
    assert slab.capacity >= 2 * MIN_BUCKET
    assert strategy.cache.layers[0].keys.data_ptr() == slab.data_ptrs()[0]
    strategy.release()
    assert again == tokens["eager"] and step.recompiles() == 0 and static_decode.recordings(step) == 0


def decode_pointers(model, step, cache, prompt, new=4):
    """``(strategy, key/value data_ptr per layer)`` after ``new`` greedy static tokens."""
    from glmdesk.engine.cache import make_cache_strategy

    strategy = make_cache_strategy(model, cache, step)
    logits = strategy.prefill(prompt)
    for _ in range(new):
        logits = strategy.step(int(torch.argmax(logits)))
    return strategy, [t.data_ptr() for layer in strategy.cache.layers for t in (layer.keys, layer.values)]


@pytest.mark.slow
@needs_compiler
@pytest.mark.parametrize(
    "cache",
    [
        CacheSettings(),
        CacheSettings("sliding_window", window=16, sinks=2),
        CacheSettings("dynamic", budget_mib=24 * 512 / 2**20, window=16, sinks=2),
    ],
    ids=["full", "window", "dynamic"],
)
def test_two_answers_in_a_row_decode_in_the_same_buffers(pair, cache):
    static, _, calls = pair
    step, model = static.step, static.model
    prompt = torch.randint(0, model.config.vocab_size, (1, 30))
    calls.clear()
    first, pointers = decode_pointers(model, step, cache, prompt)
    if cache.strategy != "full":  # the ring (the dynamic cache past its switch)
        assert first.stats().state == "windowed"
    first.release()
    second, again = decode_pointers(model, step, cache, prompt)
    assert again == pointers and not calls
    slab = step.pool.slab_of(second.cache.layers[0])
    assert set(pointers) == set(slab.data_ptrs())  # the step's slab, not a buffer of the cache's own
    assert second.stats().kv_bytes == slab.nbytes()  # the whole slab counts, whatever the bucket
    second.release()
    assert step.recompiles() == 0


@pytest.mark.slow
@needs_compiler
def test_a_cache_alive_beside_another_keeps_its_own_buffers(pair):
    static, eager, _ = pair
    step, model = static.step, static.model
    prompt = torch.randint(0, model.config.vocab_size, (1, 30))
    kept, kept_pointers = decode_pointers(model, step, CacheSettings(), prompt)
    held = [layer.keys[:, :, : layer.length].clone() for layer in kept.cache.layers]
    other, other_pointers = decode_pointers(model, step, CacheSettings(), prompt.flip(1))
    assert not set(kept_pointers) & set(other_pointers)
    for layer, before in zip(kept.cache.layers, held, strict=True):
        assert torch.equal(layer.keys[:, :, : before.shape[2]], before)  # untouched by the other
    kept_tokens = [int(torch.argmax(kept.step(t))) for t in (5, 6, 7)]
    fresh, _ = decode_pointers(model, eager.step, CacheSettings(), prompt)
    assert kept_tokens == [int(torch.argmax(fresh.step(t))) for t in (5, 6, 7)]
    for strategy in (kept, other, fresh):
        strategy.release()
    idle = [slab for slab in step.pool.slabs if slab.holder is None]
    assert len(idle) <= 1 and step.recompiles() == 0


@pytest.mark.slow
@needs_compiler
def test_the_slab_kept_after_an_answer_counts_as_kept_kv_memory(pair):
    """After an answer the step's slab is idle, not freed: the KV bytes the engine keeps
    between answers (the gauge's KV share) grow by the slab's bytes, with no double count
    while an answer leases it."""
    from glmdesk.engine.memory import MIB, MemoryProbe

    static, _, _ = pair
    static.step.pool.free_idle()  # earlier tests' slab: this answer allocates its own
    before = static.kv_pool.total_bytes()  # kept conversations only
    _, final = answer(static, dataclasses.replace(GREEDY, max_new_tokens=8))
    idle = [slab for slab in static.step.pool.slabs if slab.holder is None]
    assert len(idle) == 1
    slab_bytes = sum(t.numel() * t.element_size() for pair_ in idle[0].storages for t in pair_)
    assert static.kv_pool.total_bytes() - before == slab_bytes == static.idle_kv_bytes()
    assert final.cache.kv_bytes + final.kept_kv_bytes == before + slab_bytes  # leased, then kept
    reading = MemoryProbe(nvml=None).read(0, static.kv_pool.total_bytes())
    assert reading.kv_mib == (before + slab_bytes) / MIB


def static_decode_strategy(model, step):
    from glmdesk.engine.cache import make_cache_strategy

    return make_cache_strategy(model, CacheSettings(prefill_chunk=512), step)


def test_a_model_the_fused_step_cannot_run_is_refused():
    config = LlamaConfig(
        vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=4
    )
    model = LlamaForCausalLM(config).eval()
    assert decode_step.unsupported_reason(model, any_device=True) is None
    model.model.layers[0].self_attn.o_proj = torch.nn.Identity()
    assert "o_proj" in decode_step.unsupported_reason(model, any_device=True)
    with pytest.raises(ValueError, match="o_proj"):
        build_static_step(model)
