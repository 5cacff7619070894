"""Cost of the UTF-8 guard: decode tokens/s with and without it, side by side.

The guard (:mod:`glmdesk.engine.decode.utf8_guard`) masks, before sampling, every token
that cannot continue the pending UTF-8 sequence. Same model, prompt, greedy, the
same number of new tokens; runs alternate (at least 3 pairs) in one process. Also
prints the guard's own time per token (one processor call on a vocabulary-wide
logits row) and the one-off time to build its masks.

    python benchmarks/utf8_guard.py [--pairs 3] [--tokens 128]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from glmdesk.core.messages import ChatMessage
from glmdesk.core.settings import LoadSettings, ParamsBox, SamplingParams
from glmdesk.engine.backends.transformers.loader import load_model
from glmdesk.engine.decode import utf8_guard
from glmdesk.engine.decode.generate import stream_chat

PROMPT = [ChatMessage("user", "用中文写一个关于灯塔看守人和暴风雨的长故事。")]


class _Unguarded:
    """The loaded model without any logits processor."""

    def __init__(self, loaded) -> None:
        self._loaded = loaded

    def __getattr__(self, name):
        return getattr(self._loaded, name)

    def logits_processors(self):
        return ()


class _NoStop:
    """A prompt format under which no token ends the reply; everything else is the
    wrapped format's (its prompt, reply parser and reasoning markers)."""

    def __init__(self, inner) -> None:
        self._inner, self.stop_ids = inner, frozenset()

    def __getattr__(self, name: str):
        return getattr(self._inner, name)


def rate(model, n: int) -> float:
    """Decode tokens/s of exactly ``n`` greedy tokens."""
    params = ParamsBox(SamplingParams(temperature=0.0, max_new_tokens=n))
    last = list(stream_chat(model, PROMPT, params))[-1]
    assert last.n_generated == n, last
    return last.tokens_per_s


def per_call_us(guard, vocab: int, calls: int = 2000) -> float:
    """Microseconds per processor call (the state advanced by one token each call)."""
    proc = guard.processor()
    ids = torch.zeros((1, 8 + calls), dtype=torch.long)
    scores = torch.randn(1, vocab)
    proc(ids[:, :8], scores)
    start = time.perf_counter()
    for k in range(calls):
        proc(ids[:, : 9 + k], scores)
    return (time.perf_counter() - start) / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--tokens", type=int, default=128)
    args = parser.parse_args()
    loaded = load_model(LoadSettings())
    loaded.prompt_format = _NoStop(loaded.prompt_format)
    start = time.perf_counter()
    guard = utf8_guard.Utf8Guard(utf8_guard.token_pieces(loaded.tokenizer))
    build_s = time.perf_counter() - start
    guarded, bare = loaded, _Unguarded(loaded)
    rate(guarded, 8), rate(bare, 8)  # warm-up (builds the cached guard too)
    rows = []
    for i in range(args.pairs):
        order = (guarded, bare) if i % 2 == 0 else (bare, guarded)
        got = {id(m): rate(m, args.tokens) for m in order}
        rows.append((got[id(guarded)], got[id(bare)]))
        print(f"pair {i + 1}: guarded {rows[-1][0]:6.2f} tok/s  unguarded {rows[-1][1]:6.2f} tok/s")
    g = statistics.median(r[0] for r in rows)
    b = statistics.median(r[1] for r in rows)
    vocab = loaded.model.get_output_embeddings().weight.shape[0]
    us = per_call_us(guard, vocab)
    print(
        f"\nmodel: {loaded.info.describe()}; {args.tokens} new tokens; torch threads {torch.get_num_threads()}"
    )
    print(f"median decode: guarded {g:.2f} tokens/s, unguarded {b:.2f} tokens/s, ratio {g / b:.3f}")
    print(
        f"guard per token: {us:.1f} us ({us / 1e6 * b * 100:.2f}% of an unguarded token); "
        f"masks built once in {build_s * 1000:.0f} ms for {vocab} tokens"
    )


if __name__ == "__main__":
    main()
