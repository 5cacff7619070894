"""Time to first token over a 20-turn chat, with the conversation's KV cache kept and without.

A fixed chat (passages of ``data/public_domain.txt``, about 250 tokens per
question, greedy answers of up to 40 tokens) grows to about 6,000 tokens. Each
turn is answered twice, alternating which goes first: with a conversation key
(the kept cache prefills only the new tokens) and without one (the whole prompt
is prefilled, as before issue 21). Both answers must be the same ids. Prints TTFT
per turn and the turn-20 / turn-1 ratio of each (goal with reuse: <= 1.5).

    python benchmarks/multi_turn.py [--turns 20] [--kv-cache full] [--quantization none]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from glmdesk.core.messages import ChatMessage
from glmdesk.core.settings import CacheSettings, LoadSettings, ParamsBox, SamplingParams
from glmdesk.engine.generate import stream_chat
from glmdesk.engine.loader import load_model

TEXT = (Path(__file__).parent / "data" / "public_domain.txt").read_text()
PASSAGE_CHARS = 1100  # about 250 tokens of this text


def question(turn: int) -> str:
    """The fixed question of ``turn`` (0-based): a passage and a request."""
    start = (turn * 2 * PASSAGE_CHARS) % (len(TEXT) - PASSAGE_CHARS)
    passage = TEXT[start : start + PASSAGE_CHARS]
    return f"Passage {turn + 1}:\n{passage}\n\nIn one sentence, what does passage {turn + 1} say?"


def answer(loaded, messages, box, cache, key):
    """``(ids, text, ttft_s, prompt_tokens, reused_tokens, cpu_s)`` of one streamed answer.

    ``cpu_s``: CPU seconds this process used until the first token (all its threads),
    a figure other processes on a shared machine disturb less than the wall-clock TTFT.
    """
    ids, text, final = [], [], None
    cpu_start, cpu_s = time.process_time(), None
    for chunk in stream_chat(loaded, messages, box, cache, conversation=key):
        if cpu_s is None and (chunk.token_ids or chunk.finish_reason):
            cpu_s = time.process_time() - cpu_start
        ids.extend(chunk.token_ids)
        text.append(chunk.text)
        final = chunk
    if final.error is not None:
        raise RuntimeError(final.error.message)
    return ids, "".join(text), final.ttft_s, final.prompt_tokens, final.reused_tokens, cpu_s


def prefill_flops(model, start: int, end: int) -> float:
    """FLOPs to prefill positions ``start..end-1`` after ``start`` cached ones: the decoder
    layers' weights (2 per parameter per token) plus attention's QK^T and AV
    (4 x layers x heads x head dim per key), the lm_head for the last token only."""
    config = model.config
    heads, layers = config.num_attention_heads, config.num_hidden_layers
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
    weights = sum(p.numel() for p in model.model.layers.parameters())
    n = end - start
    keys = n * (start + end + 1) / 2  # each new token attends to every earlier position
    return 2 * weights * n + 4 * layers * heads * head_dim * keys + 2 * model.lm_head.weight.numel()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--tokens", type=int, default=40, help="max new tokens per answer")
    parser.add_argument("--kv-cache", default="full", help="full, sliding_window, dynamic or quantized")
    parser.add_argument("--quantization", default="none")
    parser.add_argument("--threads", type=int, default=0, help="CPU threads (0: automatic)")
    args = parser.parse_args()

    loaded = load_model(LoadSettings(quantization=args.quantization, threads=args.threads))
    cache = CacheSettings(strategy=args.kv_cache)
    box = ParamsBox(SamplingParams(temperature=0.0, max_new_tokens=args.tokens))
    print(
        f"model {loaded.info.name}, {loaded.info.dtype}, quantization {args.quantization}, "
        f"KV cache {args.kv_cache}, threads {loaded.info.threads}"
    )
    print(
        f"{'turn':>4} {'prompt':>6} {'reused':>6} {'TTFT reuse s':>12} {'TTFT fresh s':>12} {'ratio':>6} "
        f"{'CPU reuse s':>11} {'CPU fresh s':>11} same"
    )
    answer(loaded, [ChatMessage("user", question(99))], box, cache, None)  # warm-up: first-call costs
    messages: list[ChatMessage] = []
    rows = []
    all_same = True
    started = time.perf_counter()
    for turn in range(args.turns):
        messages.append(ChatMessage("user", question(turn)))
        runs = {}
        order = ("reuse", "fresh") if turn % 2 == 0 else ("fresh", "reuse")
        for kind in order:
            runs[kind] = answer(loaded, messages, box, cache, "bench" if kind == "reuse" else None)
        kept, fresh = runs["reuse"], runs["fresh"]
        same = kept[0] == fresh[0]
        all_same &= same
        rows.append((kept[2], fresh[2], kept[5], fresh[5], prefill_flops(loaded.model, kept[4], kept[3])))
        print(
            f"{turn + 1:>4} {kept[3]:>6} {kept[4]:>6} {kept[2]:>12.3f} {fresh[2]:>12.3f} "
            f"{fresh[2] / kept[2]:>6.2f} {kept[5]:>11.3f} {fresh[5]:>11.3f} {'yes' if same else 'NO'}",
            flush=True,
        )
        messages.append(ChatMessage("assistant", kept[1]))
    first, last = rows[0], rows[-1]
    print(
        f"turn {args.turns} / turn 1 TTFT: with reuse {last[0] / first[0]:.2f} (goal <= 1.5), "
        f"without {last[1] / first[1]:.2f}; turn {args.turns} without / with reuse {last[1] / last[0]:.1f}x"
    )
    print(
        f"turn {args.turns} / turn 1 CPU seconds to first token: with reuse {last[2] / first[2]:.2f}, "
        f"without {last[3] / first[3]:.2f}; the prefill FLOPs of the new tokens (attention over "
        f"the kept context included) grow {last[4] / first[4]:.2f}x"
    )
    print(
        f"greedy answers equal on every turn: {'yes' if all_same else 'NO'}; "
        f"{time.perf_counter() - started:.0f} s"
    )
    return 0 if all_same else 1


if __name__ == "__main__":
    sys.exit(main())
