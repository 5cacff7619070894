"""The static decode path against the eager fused step (CPU).

Issue 29's CPU figures. The embedded model (SmolLM2-135M, Llama layout) decodes
``--new`` greedy tokens at each context with two decode steps on copies of the
same prefilled full cache, the two alternating token by token:

- eager: :class:`~glmdesk.engine.decode.decode_step.FusedDecodeStep`, the default;
- static: :class:`~glmdesk.engine.decode.static_decode.StaticDecodeStep` (bucketed static
  buffers, one graph, ``index_copy_`` at a position tensor, masked attention).

(The dynamic-shape compiled step these rows once compared is retired: the static path
replaced it; README's table keeps its last figures.)

Then the sliding-window cache (4 sinks + a 256-token window, past its window) with
the eager and the static step. Printed: tokens/s, ratios, whether the greedy tokens
agree, the compile's time (s) and the static step's recompiles after warm-up
(goal 0; the 1010-token row crosses the 1024-token bucket).

``--long N`` instead runs long answers on a tiny random Llama (2 layers, 2 KV heads):
for each KV strategy, two answers in a row, each a prompt of ``--context - N/2`` tokens
then ``N`` greedy tokens on the static step, so the full cache crosses the
``--context`` bucket (32K by default) mid-answer, the dynamic cache switches there
and the ring wraps. Printed per answer: tokens/s, the buckets it went through,
whether it decoded in the same slab as the answer before (``data_ptr``), Dynamo
recompiles and CUDA graph recordings after the warm-up (goal 0 both; always 0 on the
CPU), and whether its first ``--check`` tokens equal the eager fused step's.

Usage::

    GLMDESK_MODEL_CACHE=/tmp/glmdesk-models python benchmarks/static_decode.py --new 32
    python benchmarks/static_decode.py --long 4096 [--context 32768] [--check 32]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from glmdesk.core.settings import CacheSettings
from glmdesk.engine.cache import FullCacheStrategy, make_cache_strategy
from glmdesk.engine.decode.decode_step import FusedDecodeStep, fuse_projections
from glmdesk.engine.decode.static_decode import build_static_step
from glmdesk.engine.files.sources import embedded_model_folder

TEXT = Path(__file__).parent / "data" / "public_domain.txt"
CONTEXTS = (256, 1010, 4096)


def long_ids(tokenizer, n: int) -> torch.Tensor:
    """``[1, n]`` ids: the benchmark text repeated."""
    ids = tokenizer(TEXT.read_text(), return_tensors="pt").input_ids[0]
    return ids.repeat(n // ids.numel() + 1)[:n].unsqueeze(0)


@torch.inference_mode()  # as every cache tensor of a real answer (a compiled graph guards on it)
def copy_of(prefilled: FullCacheStrategy, length: int, step) -> FullCacheStrategy:
    """A fresh full strategy decoding with ``step``, holding ``prefilled``'s first ``length`` tokens."""
    strategy = make_cache_strategy(prefilled.model, prefilled.settings, step)
    for new, old in zip(strategy.cache.layers, prefilled.cache.layers, strict=True):
        new.lazy_initialization(old.keys, old.values)
        new.reserve(length + 1)
        new.keys[:, :, :length].copy_(old.keys[:, :, :length])
        new.values[:, :, :length].copy_(old.values[:, :, :length])
        new.length = length
    strategy.tokens_seen = length
    strategy.ids = prefilled.ids[:length]
    return strategy


def race(strategies: dict, logits: torch.Tensor, new: int) -> tuple[dict, bool]:
    """Greedy-decode ``new`` tokens with each strategy, alternating; tokens/s per name
    and whether all chose the same tokens."""
    spent = dict.fromkeys(strategies, 0.0)
    last = dict.fromkeys(strategies, logits)
    chosen = {name: [] for name in strategies}
    for i in range(new):
        names = list(strategies) if i % 2 else list(reversed(strategies))
        for name in names:
            token = int(torch.argmax(last[name]))
            chosen[name].append(token)
            started = time.perf_counter()
            last[name] = strategies[name].step(token)
            spent[name] += time.perf_counter() - started
    same = len({tuple(tokens) for tokens in chosen.values()}) == 1
    return {name: new / spent[name] for name in strategies}, same


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--new", type=int, default=32, help="tokens decoded per row")
    parser.add_argument("--contexts", type=int, nargs="+", default=list(CONTEXTS))
    parser.add_argument(
        "--cache-dir", type=Path, help="Inductor's cache (default: a new folder, so the compile is cold)"
    )
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    parser.add_argument("--long", type=int, default=0, help="tokens per long answer (tiny model; 0: off)")
    parser.add_argument("--context", type=int, default=32768, help="--long: the bucket crossed mid-answer")
    parser.add_argument("--check", type=int, default=32, help="--long: tokens compared with the eager step")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.long:
        from benchmarks.static_long import long_main

        long_main(args)
        return
    folder = embedded_model_folder()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    fuse_projections(model)
    eager = FusedDecodeStep(model)
    cache_dir = args.cache_dir or Path(tempfile.mkdtemp(prefix="glmdesk-inductor-"))
    static = build_static_step(model, cache_dir)
    print(
        f"threads {torch.get_num_threads()}; {'warm' if args.cache_dir else 'cold'} compile (s): "
        f"static {static.compile_seconds:.1f}"
    )
    steps = {"eager": eager, "static": static}
    ids = long_ids(tokenizer, max(args.contexts) + args.new)
    prefilled = FullCacheStrategy(model, CacheSettings(prefill_chunk=512))
    with torch.inference_mode():
        logits = prefilled.prefill(ids[:, : max(args.contexts)])
    print(f"\n## Full cache, tokens/s ({args.new} greedy tokens, steps alternating)")
    print("| context | eager | static | static/eager | same tokens |")
    print("|---|---|---|---|---|")
    for length in sorted(args.contexts):
        strategies = {name: copy_of(prefilled, length, step) for name, step in steps.items()}
        row_logits = logits if length == max(args.contexts) else step_after(prefilled, length, eager)
        speed, same = race(strategies, row_logits, args.new)
        print(
            f"| {length} | {speed['eager']:.1f} | {speed['static']:.1f} | "
            f"{speed['static'] / speed['eager']:.2f} | {same} |"
        )
        for strategy in strategies.values():
            strategy.release()
    window_rows(model, ids, {"eager": eager, "static": static}, args.new)
    print(
        f"\nstatic step recompiles after warm-up: {static.recompiles()}; graphs held: {static.compiled_graphs()}"
    )


def step_after(prefilled: FullCacheStrategy, length: int, step) -> torch.Tensor:
    """Logits after the first ``length`` prefilled tokens (the last one run again on a copy)."""
    strategy = copy_of(prefilled, length - 1, step)
    logits = strategy.step(prefilled.ids[length - 1])
    strategy.release()
    return logits


def window_rows(model, ids: torch.Tensor, steps: dict, new: int) -> None:
    """The sink + window ring past its window: eager against static."""
    settings = CacheSettings("sliding_window", window=256, sinks=4, prefill_chunk=512)
    strategies = {name: make_cache_strategy(model, settings, step) for name, step in steps.items()}
    with torch.inference_mode():
        logits = [s.prefill(ids[:, :1010]) for s in strategies.values()][0]
    speed, same = race(strategies, logits, new)
    print("\n## Sliding window (4 sinks + 256), 1010 tokens seen, tokens/s")
    print("| eager | static | static/eager | same tokens |\n|---|---|---|---|")
    print(
        f"| {speed['eager']:.1f} | {speed['static']:.1f} | {speed['static'] / speed['eager']:.2f} | {same} |"
    )
    for strategy in strategies.values():
        strategy.release()


if __name__ == "__main__":
    main()
