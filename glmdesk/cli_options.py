"""Command-line options shared by ``glmdesk chat`` and ``glmdesk serve``: the model and
its engine, precision, quantization and KV cache, sampling, and a remote server."""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys

from glmdesk.core.settings import (
    CACHE_STRATEGIES,
    DEVICES,
    ENGINES,
    PRECISIONS,
    QUANTIZATIONS,
    CacheSettings,
    LoadSettings,
    SamplingParams,
)
from glmdesk.engine.families import sampling_defaults

#: Environment variable read for the API key when ``--api-key`` is not given (keeps it
#: out of the process list and shell history).
API_KEY_ENV = "GLMDESK_API_KEY"


def add_model_arguments(p: argparse.ArgumentParser) -> None:
    """The model, engine, precision, quantization, device, decode step and KV-cache options."""
    p.add_argument(
        "--model", help="a model folder, a .gguf file or a hub id (default: the embedded SmolLM2-135M)"
    )
    p.add_argument(
        "--quantization",
        choices=QUANTIZATIONS,
        default="none",
        help="weight quantization: 8bit and 4bit (NF4) use bitsandbytes (GPU; slow on the CPU); "
        "int8-wo and int4-wo are the CPU's weight-only kernels (default: %(default)s)",
    )
    p.add_argument(
        "--precision",
        choices=PRECISIONS,
        default="auto",
        help="weight precision: auto is bf16 or fp16 on a GPU, fp32 on the CPU (default: %(default)s)",
    )
    p.add_argument("--device", choices=DEVICES, default="auto", help="where to run (default: %(default)s)")
    p.add_argument(
        "--threads",
        type=int,
        default=0,
        help="CPU threads, 1 or more; 0 (default) adapts the count to measured decode steps",
    )
    p.add_argument(
        "--no-fused-decode",
        dest="fused_decode",
        action="store_false",
        help="decode with transformers' forward instead of the fused CPU step",
    )
    p.add_argument(
        "--compile-decode",
        action="store_true",
        help="compile the fused step with torch.compile while loading (needs a C++ compiler)",
    )
    p.add_argument(
        "--trust-remote-code",
        action="store_true",
        help="run the model folder's own Python code (off by default)",
    )
    p.add_argument(
        "--engine",
        choices=[e for e in ENGINES if e != "remote"],
        default="auto",
        help="auto: llama.cpp for .gguf files (the embedded model too) when llama-cpp-python is "
        "installed and no transformers-only option is given, else transformers",
    )
    _add_llamacpp_arguments(p)
    p.add_argument(
        "--kv-cache",
        choices=CACHE_STRATEGIES,
        default="full",
        help="KV-cache strategy: full keeps every token; sliding_window keeps the sinks and the last "
        "--window tokens; dynamic is full until its memory budget, then the window; quantized stores "
        "keys and values in fewer bits (default: %(default)s)",
    )
    p.add_argument(
        "--window",
        type=int,
        default=4096,
        help="sliding window size, 16 tokens or more (default: %(default)s)",
    )
    p.add_argument(
        "--sinks",
        type=int,
        default=4,
        help="attention sink tokens kept by the window, 0 to window-1 (default: %(default)s)",
    )


def _add_llamacpp_arguments(p: argparse.ArgumentParser) -> None:
    """The llama.cpp engine's own options (context, prefill batch, memory map, GPU layers, KV bits)."""
    p.add_argument(
        "--n-ctx", type=int, default=0, help="llama.cpp context, in tokens (0: the model's, at most 8192)"
    )
    p.add_argument(
        "--n-batch", type=int, default=512, help="llama.cpp prompt tokens per prefill call (1-8192)"
    )
    p.add_argument(
        "--no-mmap",
        dest="use_mmap",
        action="store_false",
        help="llama.cpp: read the file instead of mapping it",
    )
    p.add_argument(
        "--n-gpu-layers",
        type=int,
        default=-1,
        help="llama.cpp on a CUDA build: layers on the GPU (-1: all, 0: none)",
    )
    p.add_argument(
        "--kv-bits", type=int, default=8, help="llama.cpp quantized KV cache: 8 (q8_0) or 4 (q4_0)"
    )


def add_sampling_arguments(p: argparse.ArgumentParser) -> None:
    """Sampling options (unset ones take the model family's published defaults)."""
    p.add_argument("--temperature", type=float, help="0 to 2; 0 is greedy (always the likeliest token)")
    p.add_argument("--top-p", type=float, help="nucleus sampling, 0 to 1; 1 is off")
    p.add_argument("--top-k", type=int, help="sample from the k likeliest tokens, 0 or more; 0 is off")
    p.add_argument(
        "--min-p", type=float, help="drop tokens below min-p x the likeliest's probability, 0 to 1; 0 is off"
    )
    p.add_argument("--repetition-penalty", type=float, help="1 to 10; 1 is off")
    p.add_argument(
        "--max-new-tokens",
        type=int,
        help="longest answer, in tokens, 1 or more (capped by the room the context window has left)",
    )
    p.add_argument("--seed", type=int, help="random seed, 0 to 2^63-1, for repeatable sampling")


def api_key(args) -> str | None:
    """``--api-key``, else the :data:`API_KEY_ENV` environment variable, else ``None``."""
    return getattr(args, "api_key", None) or os.environ.get(API_KEY_ENV) or None


def load_settings(args) -> LoadSettings:
    """The :class:`LoadSettings` the options name (``--remote``: a server's model), with
    ``auto`` resolved to the engine that will run it.

    Raises:
        ValueError: with a sentence, for bad values.
    """
    remote = getattr(args, "remote", None)
    if remote:
        return LoadSettings(
            engine="remote", remote_url=remote, remote_model=args.model, remote_api_key=api_key(args)
        )
    settings = LoadSettings(
        args.model,
        args.quantization,
        args.precision,
        args.device,
        args.trust_remote_code,
        threads=args.threads,
        fused_decode=args.fused_decode,
        compile_decode=args.compile_decode,
        engine=args.engine,
        n_ctx=args.n_ctx,
        n_batch=args.n_batch,
        use_mmap=args.use_mmap,
        n_gpu_layers=args.n_gpu_layers,
    )
    from glmdesk.engine.backends import engine_for

    # The engine is chosen from the options asked for, before any is dropped.
    return dataclasses.replace(settings, engine=engine_for(settings))


def cache_settings(args) -> CacheSettings:
    """The KV-cache strategy the options name.

    Raises:
        ValueError: with a sentence, for bad sizes.
    """
    return CacheSettings(args.kv_cache, window=args.window, sinks=args.sinks, kv_bits=args.kv_bits)


def without_uncompilable(settings: LoadSettings, cache: CacheSettings) -> LoadSettings:
    """``settings`` without the compiled step when ``cache`` is one it cannot serve
    (it writes the full cache's buffers only): no minute of compiling for nothing."""
    if settings.compile_decode and cache.strategy in ("sliding_window", "quantized"):
        print(
            f"note: the compiled decode step runs with the full and dynamic KV caches only; "
            f"--kv-cache {cache.strategy} decodes with the fused step, uncompiled.",
            file=sys.stderr,
        )
        return dataclasses.replace(settings, compile_decode=False)
    return settings


def sampling(args, family: str) -> SamplingParams:
    """The family's defaults with the options given on top.

    Raises:
        ValueError: with a sentence, for a value out of range.
    """
    values = {
        "temperature": args.temperature,
        "top_p": args.top_p,
        "top_k": args.top_k,
        "min_p": args.min_p,
        "repetition_penalty": args.repetition_penalty,
        "max_new_tokens": args.max_new_tokens,
        "seed": args.seed,
    }
    return dataclasses.replace(
        sampling_defaults(family), **{k: v for k, v in values.items() if v is not None}
    )


_shown: list = [None]  # the last (stage, tenths) printed


def progress(p) -> None:
    """Show a load stage on one terminal line: each stage once, then every tenth of its
    steps (llama.cpp reports up to a thousand steps while it maps a file)."""
    tenths = 10 * p.done // p.total if p.total else -1
    if _shown[0] == (p.stage, tenths):
        return
    _shown[0] = (p.stage, tenths)
    total = f" {p.done}/{p.total}" if p.total else ""
    print(f"\r[{p.stage}{total}]        ", end="", file=sys.stderr, flush=True)
