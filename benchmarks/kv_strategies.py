"""Perplexity, KV bytes and speed of the KV-cache strategies on a long natural text.

Issue 5's benchmark. The embedded model (SmolLM2-135M-Instruct, fp32, CPU) reads
``benchmarks/data/public_domain.txt`` (the Declaration of Independence, Lincoln's
Second Inaugural and the Gettysburg Address: 2,927 tokens) one token at a time
through each strategy's ``step()``; the strategies advance in lockstep, token by
token, so they share the same machine load (other processes run on these cores).

Rows: full cache; plain window of 256; 4 attention sinks + 252 window
(StreamingLLM, arXiv:2309.17453); dynamic with a budget that forces the switch
halfway through; optionally the quantized cache (``--quantized``).
Goal (issue 5): sinks + window within 10 % of full perplexity, under 15 % of its
KV bytes, and no slower per token.

Usage::

    GLMDESK_MODEL_CACHE=/tmp/glmdesk-models python benchmarks/kv_strategies.py --tokens 2200
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from glmdesk.core.settings import CacheSettings
from glmdesk.engine.cache import kv_bytes_per_token, make_cache_strategy
from glmdesk.engine.files.sources import embedded_model_folder

TEXT = Path(__file__).parent / "data" / "public_domain.txt"


def rows(n_tokens: int, per_token: int, quantized: bool) -> list[tuple[str, CacheSettings]]:
    half_mib = (n_tokens // 2) * per_token / 2**20
    out = [
        ("full", CacheSettings(strategy="full")),
        ("window 256, no sinks", CacheSettings(strategy="sliding_window", window=256, sinks=0)),
        ("4 sinks + 252 window", CacheSettings(strategy="sliding_window", window=252, sinks=4)),
        (
            f"dynamic (switch at {n_tokens // 2})",
            CacheSettings(strategy="dynamic", window=252, sinks=4, budget_mib=half_mib),
        ),
    ]
    if quantized:
        out.append(("quantized", CacheSettings(strategy="quantized")))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tokens", type=int, default=2200, help="tokens of the text to read")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: leave as is)")
    parser.add_argument("--quantized", action="store_true", help="add the quantized-cache row")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    folder = embedded_model_folder()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    ids = tokenizer(TEXT.read_text(), return_tensors="pt").input_ids[0, : args.tokens]
    n = ids.numel()
    per_token = kv_bytes_per_token(model.config, torch.float32)
    print(
        f"text: {TEXT.name}, {n} tokens; model: SmolLM2-135M-Instruct fp32; threads {torch.get_num_threads()}"
    )

    table = rows(n, per_token, args.quantized)
    strategies = [make_cache_strategy(model, settings) for _, settings in table]
    nll = [0.0] * len(table)
    seconds = [0.0] * len(table)
    peak = [0] * len(table)
    held = [0] * len(table)
    logits = [s.prefill(ids[:1].unsqueeze(0)) for s in strategies]
    started = time.perf_counter()
    for i in range(1, n):
        target = int(ids[i])
        order = range(len(table)) if i % 2 else reversed(range(len(table)))  # alternate who goes first
        for k in order:
            nll[k] -= float(torch.log_softmax(logits[k], dim=-1)[target])
            t0 = time.perf_counter()
            logits[k] = strategies[k].step(target)
            seconds[k] += time.perf_counter() - t0
            stats = strategies[k].stats()
            peak[k] = max(peak[k], stats.kv_bytes)
            held[k] = max(held[k], stats.tokens_held)
        if i % 250 == 0:
            print(f"  {i}/{n} tokens, {time.perf_counter() - started:.0f} s", flush=True)

    ppl = [math.exp(x / (n - 1)) for x in nll]
    print()
    print("peak KV MB: bytes of the buffers allocated (the full cache doubles: up to 2x what it holds);")
    print("held MB: peak tokens held x bytes per token; 'vs full' compares held bytes.")
    print(
        f"| {'strategy':<26} | perplexity | ratio to full | peak KV MB | held MB | held vs full "
        "| tokens/s | speed vs full |"
    )
    print(
        f"|{'-' * 28}|-----------:|--------------:|-----------:|--------:|-------------:|---------:|--------------:|"
    )
    for k, (name, _) in enumerate(table):
        speed = (n - 1) / seconds[k]
        print(
            f"| {name:<26} | {ppl[k]:10.2f} | {ppl[k] / ppl[0]:13.3f} | {peak[k] / 1e6:10.1f} "
            f"| {held[k] * per_token / 1e6:7.1f} | {held[k] / held[0]:12.1%} | {speed:8.1f} "
            f"| {seconds[0] / seconds[k]:13.2f} |"
        )
    dynamic = strategies[3]
    print(f"\ndynamic switched at token {dynamic.switched_at} (predicted {dynamic.switch_tokens})")
    sink = 2
    ok_ppl = ppl[sink] <= 1.10 * ppl[0]
    ok_bytes = peak[sink] < 0.15 * held[0] * per_token
    ok_speed = seconds[sink] <= seconds[0] * 1.02
    print(
        f"goal sinks+window: perplexity within 10% of full: {'yes' if ok_ppl else 'NO'}; "
        f"KV bytes under 15% of full's held bytes: {'yes' if ok_bytes else 'NO'}; no slower per token: {'yes' if ok_speed else 'NO'}"
    )


if __name__ == "__main__":
    main()
