"""Time to first token over a 20-turn chat, with the conversation's KV cache kept and without.

A fixed chat (passages of ``data/public_domain.txt``, about 250 tokens per
question, greedy answers of up to 40 tokens) grows to about 6,000 tokens. Each
turn is answered twice, alternating which goes first: with a conversation key
(the kept cache prefills only the new tokens) and without one (the whole prompt
is prefilled, as before issue 21). Both answers must be the same ids (on llama.cpp a
turn can differ without a cache fault: its results depend on how a prompt is split
into batches, and two fresh prefills with different ``n_batch`` differ the same way;
measured once at turn 12 of 20). Prints per
turn the tokens prefilled (``new``), TTFT of each and the share of the new tokens'
prefill FLOPs spent in attention over the kept context, then the turn-20 / turn-1
TTFT ratio of each (goal with reuse: <= 1.5) and why it is what it is: with reuse
a turn prefills about as many tokens as turn 1, but each of them attends to every
kept position, and for a small model (SmolLM2-135M: 30 layers x 576 wide attention
against 0.1 G weights) that attention outweighs the weights well before 6,000
tokens; a 6B model's weights dominate far longer (the projection line).

    python benchmarks/multi_turn.py [--engine transformers|llamacpp] [--turns 20]
        [--kv-cache full] [--quantization none] [--threads 0]
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from glmdesk.core.messages import ChatMessage
from glmdesk.core.settings import CacheSettings, LoadSettings, ParamsBox, SamplingParams
from glmdesk.engine.backends import create_backend

TEXT = (Path(__file__).parent / "data" / "public_domain.txt").read_text()
PASSAGE_CHARS = 1100  # about 250 tokens of this text


def question(turn: int, chars: int = PASSAGE_CHARS) -> str:
    """The fixed question of ``turn`` (0-based): a passage of ``chars`` characters and a request."""
    start = (turn * 2 * chars) % (len(TEXT) - chars)
    passage = TEXT[start : start + chars]
    return f"Passage {turn + 1}:\n{passage}\n\nIn one sentence, what does passage {turn + 1} say?"


def answer(backend, messages, box, cache, key):
    """``(ids, text, ttft_s, prompt_tokens, reused_tokens, cpu_s)`` of one streamed answer.

    ``cpu_s``: CPU seconds this process used until the first token (all its threads),
    a figure other processes on a shared machine disturb less than the wall-clock TTFT.
    """
    ids, text, final = [], [], None
    cpu_start, cpu_s = time.process_time(), None
    for chunk in backend.stream(messages, box, cache, conversation=key):
        if cpu_s is None and (chunk.token_ids or chunk.finish_reason):
            cpu_s = time.process_time() - cpu_start
        ids.extend(chunk.token_ids)
        text.append(chunk.text)
        final = chunk
    if final.error is not None:
        raise RuntimeError(final.error.message)
    return ids, "".join(text), final.ttft_s, final.prompt_tokens, final.reused_tokens, cpu_s


@dataclass(frozen=True)
class Shape:
    """What a prefill costs per token, for the FLOPs model.

    Attributes:
        layers: Decoder layers.
        width: Query heads x head dim (the attention's width per key), in elements.
        weights: Decoder weights used per token (embeddings excluded), in parameters.
        head: The lm_head's parameters (run for the last prompt token only).
    """

    layers: int
    width: int
    weights: float
    head: float

    def prefill_flops(self, start: int, end: int) -> tuple[float, float]:
        """``(total, attention)`` FLOPs to prefill positions ``start..end-1`` after
        ``start`` cached ones: 2 per weight per token, plus QK^T and AV
        (4 x layers x width per key; each new token attends to every earlier position)."""
        n = end - start
        keys = n * (start + end + 1) / 2
        attention = 4 * self.layers * self.width * keys
        return 2 * self.weights * n + attention + 2 * self.head, attention


#: ChatGLM3-6B (THUDM/chatglm3-6b config.json: num_layers 28, hidden_size 4096,
#: 32 heads x kv_channels 128, ffn_hidden_size 13696, 2 KV groups, padded_vocab_size
#: 65024): per layer QKV 4096 x 4608, dense 4096 x 4096, SwiGLU MLP 3 x 4096 x 13696.
CHATGLM3_6B = Shape(28, 4096, 28 * (4096 * 4608 + 4096 * 4096 + 3 * 4096 * 13696), 65024 * 4096)


def shape_of(backend) -> Shape:
    """The loaded model's :class:`Shape` (transformers config or GGUF metadata)."""
    model = backend.text_model()
    if backend.name == "llamacpp":
        header, lib = model.header, model.lib
        heads = int(header.get("{arch}.attention.head_count", 1))
        embd = int(header.get("{arch}.embedding_length", 0))
        width = heads * int(header.get("{arch}.attention.key_length", embd // heads) or embd // heads)
        embeddings = model.vocab.n_vocab * embd
        weights = int(lib.llama_model_n_params(model.model)) - embeddings
        return Shape(int(header.get("{arch}.block_count", 0)), width, weights, embeddings)
    config, hf = model.model.config, model.model
    heads = config.num_attention_heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
    weights = sum(p.numel() for p in hf.model.layers.parameters())
    return Shape(config.num_hidden_layers, heads * head_dim, weights, hf.lm_head.weight.numel())


def table_header() -> str:
    return (
        f"{'turn':>4} {'prompt':>6} {'new':>5} {'TTFT reuse s':>12} {'TTFT fresh s':>12} {'ratio':>6} "
        f"{'ms/new tok':>10} {'attn %':>6} {'CPU reuse s':>11} {'CPU fresh s':>11} same"
    )


def summary(rows: list[dict], turns: int, shape: Shape) -> list[str]:
    """The closing lines: the ratios, and why the reuse ratio is what it is."""
    first, last = rows[0], rows[-1]
    per_token = [r["ttft_reuse"] / r["new"] for r in (first, last)]
    flops = [shape.prefill_flops(r["reused"], r["prompt"]) for r in (first, last)]
    big = [CHATGLM3_6B.prefill_flops(r["reused"], r["prompt"]) for r in (first, last)]
    return [
        f"turn {turns} / turn 1 TTFT: with reuse {last['ttft_reuse'] / first['ttft_reuse']:.2f} (goal <= 1.5), "
        f"without {last['ttft_fresh'] / first['ttft_fresh']:.2f}; turn {turns} without / with reuse "
        f"{last['ttft_fresh'] / last['ttft_reuse']:.1f}x",
        f"turn {turns} / turn 1 CPU seconds to first token: with reuse {last['cpu_reuse'] / first['cpu_reuse']:.2f}, "
        f"without {last['cpu_fresh'] / first['cpu_fresh']:.2f}",
        f"why: with reuse turn {turns} prefills {last['new']} new tokens against {first['new']} at turn 1 "
        f"({last['new'] / first['new']:.2f}x), but each attends to {last['reused']} kept positions: "
        f"{per_token[0] * 1e3:.2f} -> {per_token[1] * 1e3:.2f} ms per new token "
        f"({per_token[1] / per_token[0]:.2f}x). Attention is {100 * flops[0][1] / flops[0][0]:.0f}% of turn 1's "
        f"prefill FLOPs and {100 * flops[1][1] / flops[1][0]:.0f}% of turn {turns}'s for this model "
        f"({shape.layers} layers x {shape.width} attention width per key against {shape.weights / 1e9:.2f} G "
        f"weights per token): its FLOPs grow {flops[1][0] / flops[0][0]:.2f}x",
        f"projection (FLOPs only, not measured): ChatGLM3-6B's shape (28 layers x 4096 against "
        f"{CHATGLM3_6B.weights / 1e9:.2f} G weights) on the same turns: attention "
        f"{100 * big[1][1] / big[1][0]:.0f}% of turn {turns}'s prefill, FLOPs grow "
        f"{big[1][0] / big[0][0]:.2f}x",
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", default="transformers", choices=("transformers", "llamacpp"))
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--tokens", type=int, default=40, help="max new tokens per answer")
    parser.add_argument("--kv-cache", default="full", help="full, sliding_window, dynamic or quantized")
    parser.add_argument("--quantization", default="none", help="transformers engine only")
    parser.add_argument("--threads", type=int, default=0, help="CPU threads (0: automatic)")
    parser.add_argument("--passage-chars", type=int, default=PASSAGE_CHARS, help="question size (smoke runs)")
    args = parser.parse_args()

    settings = LoadSettings(engine=args.engine, quantization=args.quantization, threads=args.threads)
    backend = create_backend(settings)
    info = backend.load(settings)
    # llama.cpp keeps one conversation's cache (its one context): a fresh answer on the
    # same backend would drop it, so the answers without reuse run on a second load of
    # the same file (mmapped weights, its own context).
    fresh_backend = backend
    if info.engine == "llamacpp":
        fresh_backend = create_backend(settings)
        fresh_backend.load(settings)
    shape = shape_of(backend)
    cache = CacheSettings(strategy=args.kv_cache)
    box = ParamsBox(SamplingParams(temperature=0.0, max_new_tokens=args.tokens))
    print(
        f"engine {info.engine}, model {info.name}, {info.dtype}, weights {info.quantization}, "
        f"KV cache {args.kv_cache}, threads {info.threads}"
    )
    print(
        "new: prompt tokens prefilled with reuse; ms/new tok: TTFT with reuse per new token; attn %: "
        "attention's share of those tokens' prefill FLOPs (over every kept position)"
    )
    print(table_header())

    def question_of(turn: int) -> str:
        return question(turn, args.passage_chars)

    for each in {
        id(backend): backend,
        id(fresh_backend): fresh_backend,
    }.values():  # warm-up: first-call costs
        answer(each, [ChatMessage("user", question_of(99))], box, cache, None)
    messages: list[ChatMessage] = []
    rows = []
    all_same = True
    started = time.perf_counter()
    try:
        for turn in range(args.turns):
            messages.append(ChatMessage("user", question_of(turn)))
            runs = {}
            order = ("reuse", "fresh") if turn % 2 == 0 else ("fresh", "reuse")
            for kind in order:
                if kind == "reuse":
                    runs[kind] = answer(backend, messages, box, cache, "bench")
                else:
                    runs[kind] = answer(fresh_backend, messages, box, cache, None)
            kept, fresh = runs["reuse"], runs["fresh"]
            same = kept[0] == fresh[0]
            all_same &= same
            row = {"prompt": kept[3], "reused": kept[4], "new": kept[3] - kept[4]}
            row |= {
                "ttft_reuse": kept[2],
                "ttft_fresh": fresh[2],
                "cpu_reuse": kept[5],
                "cpu_fresh": fresh[5],
            }
            rows.append(row)
            total, attention = shape.prefill_flops(row["reused"], row["prompt"])
            print(
                f"{turn + 1:>4} {row['prompt']:>6} {row['new']:>5} {kept[2]:>12.3f} {fresh[2]:>12.3f} "
                f"{fresh[2] / kept[2]:>6.2f} {kept[2] / row['new'] * 1e3:>10.2f} {100 * attention / total:>6.0f} "
                f"{kept[5]:>11.3f} {fresh[5]:>11.3f} {'yes' if same else 'NO'}",
                flush=True,
            )
            messages.append(ChatMessage("assistant", kept[1]))
    finally:
        backend.close()
        fresh_backend.close()
    for line in summary(rows, args.turns, shape):
        print(line)
    print(
        f"greedy answers equal on every turn: {'yes' if all_same else 'NO'}; "
        f"{time.perf_counter() - started:.0f} s"
    )
    return 0 if all_same else 1


if __name__ == "__main__":
    sys.exit(main())
