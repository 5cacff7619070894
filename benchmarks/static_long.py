"""``static_decode.py --long``: long answers on the static path, two in a row per KV strategy.

See :mod:`benchmarks.static_decode` for what is printed. The model is a tiny random
Llama (2 layers, 4 heads, 2 KV heads, 16 dimensions a head): the figures are the
static path's own cost per token on this CPU (graph, bucket moves, the ring), not a
real model's speed.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import torch
from transformers import LlamaConfig, LlamaForCausalLM

from glmdesk.core.settings import CacheSettings
from glmdesk.engine.cache import kv_bytes_per_token, make_cache_strategy
from glmdesk.engine.decode import static_decode
from glmdesk.engine.decode.static_decode import build_static_step


def tiny_model(positions: int):
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=512,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=positions,
    )
    return LlamaForCausalLM(config).eval()


def settings_for(model, context: int) -> dict[str, CacheSettings]:
    """Full; 4 sinks + an 8K window; dynamic switching at ``context`` tokens to 4 + 4K."""
    per_token = kv_bytes_per_token(model.config, torch.float32)
    return {
        "full": CacheSettings(prefill_chunk=2048),
        "sinks 4 + window 8K": CacheSettings("sliding_window", sinks=4, window=8192, prefill_chunk=2048),
        "dynamic (switch at context)": CacheSettings(
            "dynamic", sinks=4, window=4096, budget_mib=context * per_token / 2**20, prefill_chunk=2048
        ),
    }


def decode(model, step, settings: CacheSettings, prompt: torch.Tensor, new: int) -> dict:
    """One answer: ``prompt`` then ``new`` greedy tokens. Returns tokens, tokens/s, the
    buckets used (``[slots, tokens, s]`` each, in order), the slab's addresses and the strategy's final state."""
    strategy = make_cache_strategy(model, settings, step)
    logits = strategy.prefill(prompt)
    tokens, buckets = [], []  # buckets: [slots, tokens decoded in it, seconds]
    for _ in range(new):
        tokens.append(int(torch.argmax(logits)))
        started = time.perf_counter()
        logits = strategy.step(tokens[-1])
        spent = time.perf_counter() - started
        size = strategy.cache.layers[0].capacity
        if not buckets or buckets[-1][0] != size:
            buckets.append([size, 0, 0.0])
        buckets[-1][1] += 1
        buckets[-1][2] += spent
    rate = new / sum(seconds for _, _, seconds in buckets)
    pool = getattr(step, "pool", None)
    slab = pool.slab_of(strategy.cache.layers[0]) if pool is not None else None
    out = {
        "tokens": tokens,
        "rate": rate,
        "buckets": buckets,
        "pointers": slab.data_ptrs() if slab is not None else None,
        "state": strategy.stats().state,
    }
    strategy.release()
    return out


def long_main(args) -> None:
    new, context = args.long, args.context
    prompt_tokens = context - new // 2
    model = tiny_model(2 * context + new)
    cache_dir = args.cache_dir or Path(tempfile.mkdtemp(prefix="glmdesk-inductor-"))
    step = build_static_step(model, cache_dir)
    print(
        f"threads {torch.get_num_threads()}; static compile {step.compile_seconds:.1f} s; "
        f"prompt {prompt_tokens} tokens, then {new} greedy tokens per answer"
    )
    print("| strategy | answer | tokens/s | buckets (slots; tokens/s in each) | same slab as before | state | "
          "recompiles | CUDA graph recordings | first tokens = eager |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    prompt = torch.randint(0, model.config.vocab_size, (1, prompt_tokens))
    for name, settings in settings_for(model, context).items():
        eager = decode(model, step.eager, settings, prompt, args.check)["tokens"]
        before = None
        for answer in (1, 2):
            got = decode(model, step, settings, prompt, new)
            same = "-" if before is None else str(got["pointers"] == before)
            before = got["pointers"]
            print(
                f"| {name} | {answer} | {got['rate']:.1f} | {' -> '.join(f'{b} ({n / t:.0f}/s)' for b, n, t in got['buckets'])} | {same} "
                f"| {got['state']} | {static_decode.recompiles(step)} | {static_decode.recordings(step)} "
                f"| {got['tokens'][: args.check] == eager} |",
                flush=True,
            )
    print(f"\nslabs alive {len(step.pool.slabs)}, allocated or grown {step.pool.allocations} times")
