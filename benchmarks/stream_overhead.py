"""Our decode loop against ``model.generate``: same model, prompt, greedy, 256 new tokens.

Alternating runs, at least 3 pairs, in one process. Prints both tokens/s, the
ratio (ours / generate; goal >= 1.0), and our time to first token against a bare
prefill forward of the same prompt.

    python benchmarks/stream_overhead.py [--pairs 3] [--tokens 256]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from glmdesk.core.messages import ChatMessage
from glmdesk.core.settings import LoadSettings, ParamsBox, SamplingParams
from glmdesk.engine.backends.transformers.loader import load_model
from glmdesk.engine.decode.generate import stream_chat

PROMPT = [ChatMessage("user", "Write a long story about a lighthouse keeper and a storm.")]


def ours(loaded, n: int) -> tuple[float, float]:
    """Return (decode tokens/s, TTFT s) of our stream for exactly ``n`` tokens."""
    box = ParamsBox(SamplingParams(temperature=0.0, max_new_tokens=n))
    last = None
    for chunk in stream_chat(loaded, PROMPT, box):
        last = chunk
    assert last is not None and last.n_generated == n, last
    return last.tokens_per_s, last.ttft_s


def library(loaded, ids: torch.Tensor, n: int) -> float:
    """Decode tokens/s of ``model.generate`` for exactly ``n`` tokens (prefill excluded)."""
    from transformers import TextStreamer

    class FirstToken(TextStreamer):
        first: float | None = None
        calls = 0

        def put(self, value):
            self.calls += 1
            if self.calls == 2:  # the first call carries the prompt
                self.first = time.perf_counter()

        def end(self):
            pass

    streamer = FirstToken(loaded.tokenizer)
    with torch.inference_mode():
        loaded.model.generate(ids, max_new_tokens=n, min_new_tokens=n, do_sample=False, streamer=streamer)
    end = time.perf_counter()
    return (n - 1) / (end - streamer.first)


def bare_prefill(loaded, ids: torch.Tensor) -> float:
    """Seconds for one forward of the prompt (logits of the last position only)."""
    with torch.inference_mode():
        start = time.perf_counter()
        loaded.model(ids, logits_to_keep=1)
        return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--tokens", type=int, default=256)
    args = parser.parse_args()
    loaded = load_model(LoadSettings())
    # Never stop early in either loop: exactly --tokens tokens each.
    loaded.prompt_format = _NoStop(loaded.prompt_format)
    ids = torch.tensor([loaded.prompt_format.encode(PROMPT)])
    ours(loaded, 8), library(loaded, ids, 8)  # warm-up
    rows = []
    for i in range(args.pairs):
        if i % 2 == 0:
            o, ttft = ours(loaded, args.tokens)
            g = library(loaded, ids, args.tokens)
        else:
            g = library(loaded, ids, args.tokens)
            o, ttft = ours(loaded, args.tokens)
        pre = bare_prefill(loaded, ids)
        rows.append((o, g, ttft, pre))
        print(
            f"pair {i + 1}: ours {o:6.2f} tok/s  generate {g:6.2f} tok/s  ratio {o / g:5.3f}  "
            f"TTFT {ttft * 1000:6.1f} ms  bare prefill {pre * 1000:6.1f} ms"
        )
    o = statistics.median(r[0] for r in rows)
    g = statistics.median(r[1] for r in rows)
    ttft = statistics.median(r[2] for r in rows)
    pre = statistics.median(r[3] for r in rows)
    print(
        f"\nmodel: {loaded.info.describe()}; prompt {ids.shape[1]} tokens; {args.tokens} new tokens; "
        f"torch threads {torch.get_num_threads()}"
    )
    print(
        f"median decode: ours {o:.2f} tokens/s, generate {g:.2f} tokens/s, ratio ours/generate {o / g:.3f} "
        "(goal >= 1.0)"
    )
    print(
        f"median TTFT {ttft * 1000:.1f} ms vs bare prefill forward {pre * 1000:.1f} ms "
        f"(ratio {ttft / pre:.2f})"
    )


class _NoStop:
    """A prompt format under which no token ends the reply; everything else is the
    wrapped format's (its prompt, reply parser and reasoning markers)."""

    def __init__(self, inner) -> None:
        self._inner, self.stop_ids = inner, frozenset()

    def __getattr__(self, name: str):
        return getattr(self._inner, name)


if __name__ == "__main__":
    main()
