"""GPU decode speed of a ChatGLM3-6B-shaped model against the memory-bandwidth bound.

Issue 10's GPU benchmark. A ``GlmForCausalLM`` with ChatGLM3-6B's shape (28 layers,
hidden 4096, 32 heads in 2 KV groups, head dim 128, FFN 13696, vocabulary 65024;
the shape glmdesk's converter gives the original checkpoint) and random weights, in
bf16, bitsandbytes NF4 and bitsandbytes INT8. For each, decode tokens/s with the
full cache (:class:`~glmdesk.engine.cache.FullCacheStrategy`, buffers preallocated
to the longest context) at 1K, 8K and 32K tokens of context, against the bound

    tokens/s <= copy bandwidth / (bytes of weights read per token + KV bytes held)

where the copy bandwidth is measured in the same run (a 1 GiB device-to-device
copy: read + write bytes / time). Goal: bf16 at 70% of the bound or better.

The decode rows run with the attention kernels glmdesk's decode steps use
(:data:`~glmdesk.engine.cache.base.DECODE_ATTENTION_KERNELS`: not cuDNN's);
``--cudnn`` adds a bf16 row with cuDNN's attention allowed, for the side-by-side.
``--cuda-graph`` adds transformers' own ``generate`` with its ``StaticCache``, whose
decode steps it compiles (``torch.compile`` mode ``reduce-overhead``: CUDA graphs),
as the reference for what CUDA graphs give (glmdesk's own loop does not use them).

Run on a CUDA machine (a few minutes on one large GPU)::

    python benchmarks/gpu_decode.py [--contexts 1024 8192 32768] [--new 32] [--cudnn] [--cuda-graph]
    python benchmarks/gpu_decode.py --strategies [--contexts 8192 32768 65536 131072]

``--strategies`` runs issue 5's table instead: a ChatGLM3-6B-128K-shaped model (rope
theta 10000 x 500) in bf16, one growing sequence per KV strategy (full; 4 attention
sinks + a 16K window, StreamingLLM arXiv:2309.17453; dynamic with a 2 GiB KV budget,
which switches near 73K tokens), prefilled in 2,048-token chunks to 8K, 32K, 64K and
128K tokens with ``--new`` greedy tokens decoded at each; printed per point: time to
prefill this far (s), decode tokens/s, KV MiB held and the peak memory torch allocated
since the strategy started (MiB).

``--tiny`` runs the same code on a small random model on the CPU (bitsandbytes'
CPU backend), to check the script itself; its figures mean nothing.

``--table`` runs issue 29's table instead (:mod:`benchmarks.gpu_quant`: ChatGLM3-6B and
GLM-4-9B shapes at 1K-128K, glmdesk's static path against transformers' compiled
``StaticCache``, torchao and bitsandbytes weights with perplexity, KV strategies with
``--kv``, TTFT, compile time, recompiles, peak memory); ``--smoke`` runs it on the CPU
with tiny shapes::

    python benchmarks/gpu_decode.py --table --kv --cuda-graph [--shapes ChatGLM3-6B]
    python benchmarks/gpu_decode.py --smoke --kv
"""

from __future__ import annotations

import argparse
import datetime
import gc
import time

import torch
from torch import nn
from torch.nn.attention import SDPBackend

from benchmarks._gpu_common import (
    CHATGLM3_6B,
    TINY,
    copy_bandwidth,
    make_config,
    new_model,
    quantize,
    static_graph_rate,
    sync,
)
from glmdesk.core.settings import CacheSettings
from glmdesk.engine.cache import FullCacheStrategy, kv_bytes_per_token, make_cache_strategy
from glmdesk.engine.cache import base as cache_base


def bytes_read_per_token(model: nn.Module) -> int:
    """Bytes of weights one decode step reads: everything but the input embedding
    (one row of it is read)."""
    embedding = model.get_input_embeddings().weight
    total = 0
    for tensor in (*model.parameters(), *model.buffers()):
        if tensor is not embedding:
            total += tensor.numel() * tensor.element_size()
    return total


def timed_decode(strategy, token: int, new: int) -> tuple[float, int]:
    """Decode ``new`` greedy tokens after ``token``; ``(tokens/s, last token)``."""
    sync(strategy.device)
    t0 = time.perf_counter()
    for _ in range(new):
        token = int(strategy.step(token).argmax())
    sync(strategy.device)
    return new / (time.perf_counter() - t0), token


@torch.inference_mode()
def decode_rate(model, settings, context: int, new: int, max_tokens: int) -> float:
    """Greedy decode tokens/s after ``context`` random prompt tokens (3 warm-up steps first)."""
    device = model.device
    strategy = FullCacheStrategy(model, settings, max_tokens=max_tokens)
    ids = torch.randint(0, model.config.vocab_size, (1, context), device=device)
    token = int(strategy.prefill(ids).argmax())
    _, token = timed_decode(strategy, token, 3)  # warm-up
    rate, _ = timed_decode(strategy, token, new)
    strategy.release()
    return rate


STRATEGIES = {
    "full": CacheSettings(strategy="full"),
    "sinks 4 + window 16K": CacheSettings(strategy="sliding_window", sinks=4, window=16384),
    "dynamic, 2 GiB budget": CacheSettings(strategy="dynamic", sinks=4, window=16384, budget_mib=2048),
}


def mib(n_bytes: float) -> float:
    return n_bytes / 2**20


@torch.inference_mode()
def strategy_table(model, contexts: list[int], new: int, tiny: bool) -> None:
    """Issue 5's table: one growing sequence per strategy (see the module docstring)."""
    device = model.device
    vocab = model.config.vocab_size
    print("| strategy | context | prefill to here s | decode tokens/s | KV MiB held | peak MiB | state |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for name, settings in STRATEGIES.items():
        if tiny:  # scale the window and budget with the contexts
            settings = CacheSettings(
                strategy=settings.strategy,
                sinks=4,
                window=64,
                budget_mib=None if settings.budget_mib is None else 0.05,
            )
        gc.collect()
        if device.type == "cuda":
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats(device)
        strategy = make_cache_strategy(model, settings)
        strategy.reuse([0])  # a fresh cache
        generator = torch.Generator(device="cpu").manual_seed(0)
        prefill_s, done = 0.0, 0
        for context in contexts:
            ids = torch.randint(0, vocab, (1, context - done), generator=generator)
            sync(device)
            t0 = time.perf_counter()
            logits = strategy.prefill(ids)
            sync(device)
            prefill_s += time.perf_counter() - t0
            rate, _ = timed_decode(strategy, int(logits.argmax()), new)
            done = context + new
            stats = strategy.stats()
            peak = mib(torch.cuda.max_memory_allocated(device)) if device.type == "cuda" else float("nan")
            print(
                f"| {name} | {context} | {prefill_s:.2f} | {rate:.1f} | {mib(stats.kv_bytes):.1f} | {peak:.0f} "
                f"| {stats.state} |",
                flush=True,
            )
        strategy.release()
        del strategy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--contexts", type=int, nargs="+", default=[1024, 8192, 32768])
    parser.add_argument("--new", type=int, default=32, help="tokens decoded per measurement")
    parser.add_argument(
        "--kinds", nargs="+", default=["bf16", "nf4", "int8"], choices=["bf16", "nf4", "int8"]
    )
    parser.add_argument(
        "--cuda-graph", action="store_true", help="also transformers' StaticCache decode under CUDA graphs"
    )
    parser.add_argument(
        "--cudnn", action="store_true", help="also bf16 with cuDNN's attention allowed (glmdesk turns it off)"
    )
    parser.add_argument("--strategies", action="store_true", help="issue 5's KV-strategy table (bf16)")
    parser.add_argument("--tiny", action="store_true", help="a small model on the CPU (checks the script)")
    parser.add_argument("--table", action="store_true", help="issue 29's table (benchmarks/gpu_quant.py)")
    parser.add_argument("--smoke", action="store_true", help="--table on the CPU with tiny shapes")
    parser.add_argument(
        "--shapes", nargs="*", default=[], help="--table: ChatGLM3-6B and/or GLM-4-9B (default both)"
    )
    parser.add_argument(
        "--table-kinds",
        nargs="+",
        default=[
            "bf16",
            "torchao int8",
            "torchao int4 g64",
            "torchao int4 g64 HQQ",
            "bnb LLM.int8",
            "bnb NF4",
        ],
        help="--table: weight rows",
    )
    parser.add_argument("--ttft", type=int, nargs="*", default=[8192, 32768], help="--table: TTFT prompts")
    parser.add_argument("--kv", action="store_true", help="--table: the KV strategies beside the full cache")
    parser.add_argument("--ppl-tokens", type=int, default=1024, help="--table: perplexity text length")
    args = parser.parse_args()
    if args.table or args.smoke:
        from benchmarks.gpu_quant import table_main

        args.strategies, args.reference = args.kv, args.cuda_graph
        if args.contexts == parser.get_default("contexts"):
            args.contexts = [1024, 8192, 32768, 131072]
        table_main(args)
        return

    if args.strategies and args.contexts == parser.get_default("contexts"):
        args.contexts = [8192, 32768, 65536, 131072]
    if args.tiny:
        device, shape = torch.device("cpu"), TINY
        args.contexts = sorted({min(c, 256) for c in args.contexts} | {64})
    elif torch.cuda.is_available():
        device, shape = torch.device("cuda"), CHATGLM3_6B
    else:
        print("skipped: no CUDA device (use --tiny to check the script on the CPU)")
        return
    max_tokens = max(args.contexts) + args.new * len(args.contexts) + 8
    settings = CacheSettings(prefill_chunk=2048)
    if args.strategies:  # ChatGLM3-6B-128K: rope_ratio 500
        shape = {**shape, "rope_parameters": {**shape["rope_parameters"], "rope_theta": 10000.0 * 500}}
    config = make_config(shape, max_tokens)
    card = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU (--tiny)"
    bandwidth = copy_bandwidth(device, 64 if args.tiny else 1024)
    kv_per_token = kv_bytes_per_token(config, torch.bfloat16)
    print(f"{datetime.date.today()}, {card}, torch {torch.__version__}")
    print(
        f"measured copy bandwidth {bandwidth / 1e9:.0f} GB/s; KV {kv_per_token / 1024:.0f} KiB per token (bf16)"
    )
    torch.manual_seed(0)
    if args.strategies:
        model = new_model(config, device)
        print(
            f"weights {mib(bytes_read_per_token(model)):.0f} MiB (bf16), prefill chunk {settings.prefill_chunk}"
        )
        strategy_table(model, args.contexts, args.new, args.tiny)
        return
    print("| weights | context | tokens/s | bound tokens/s | of bound | weights read MiB |")
    print("|---|---:|---:|---:|---:|---:|")

    rows = list(args.kinds)
    if args.cudnn and device.type == "cuda":
        rows.insert(rows.index("bf16") + 1 if "bf16" in rows else 0, "bf16, cuDNN attention")
    if args.cuda_graph and device.type == "cuda":
        rows.append("bf16, transformers StaticCache + CUDA graphs")
    for kind in rows:
        model = new_model(config, device)
        if kind in ("nf4", "int8"):
            quantize(model, kind, device)
        weights = bytes_read_per_token(model)
        decode_kernels = cache_base.DECODE_ATTENTION_KERNELS
        if kind == "bf16, cuDNN attention":
            cache_base.DECODE_ATTENTION_KERNELS = [SDPBackend.CUDNN_ATTENTION, *decode_kernels]
        for context in args.contexts:
            if "CUDA graphs" in kind:
                rate = static_graph_rate(model, context, args.new)
            else:
                rate = decode_rate(model, settings, context, args.new, max_tokens)
            bound = bandwidth / (weights + kv_per_token * context)
            print(
                f"| {kind} | {context} | {rate:.1f} | {bound:.1f} | {rate / bound:.0%} | {weights / 2**20:.0f} |",
                flush=True,
            )
        cache_base.DECODE_ATTENTION_KERNELS = decode_kernels
        del model
        gc.collect()
        if device.type == "cuda":
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
