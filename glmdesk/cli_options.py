"""Command-line options shared by ``glmdesk chat`` and ``glmdesk serve``: the model,
its precision, quantization and KV cache, and a remote server."""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from dataclasses import replace

from glmdesk.core.settings import (
    CACHE_STRATEGIES,
    DEVICES,
    FAMILY_DEFAULTS,
    PRECISIONS,
    QUANTIZATIONS,
    CacheSettings,
    LoadSettings,
    SamplingParams,
)

#: Environment variable read for the API key when ``--api-key`` is not given (keeps it
#: out of the process list and shell history).
API_KEY_ENV = "GLMDESK_API_KEY"


def add_model_arguments(p: argparse.ArgumentParser) -> None:
    """The model, precision, quantization, device, decode step and KV-cache options."""
    p.add_argument("--model", help="model folder, .gguf file or hub id (default: the embedded model)")
    p.add_argument("--quantization", choices=QUANTIZATIONS, default="none")
    p.add_argument("--precision", choices=PRECISIONS, default="auto")
    p.add_argument("--device", choices=DEVICES, default="auto")
    p.add_argument("--threads", type=int, default=0, help="CPU threads (0: one per physical core)")
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
    p.add_argument("--trust-remote-code", action="store_true", help="run the model folder's own code")
    p.add_argument("--kv-cache", choices=CACHE_STRATEGIES, default="full")
    p.add_argument("--window", type=int, default=4096, help="sliding window size, in tokens")
    p.add_argument("--sinks", type=int, default=4, help="attention sink tokens kept by the window")


def add_sampling_arguments(p: argparse.ArgumentParser) -> None:
    """Sampling options (unset ones take the model family's published defaults)."""
    p.add_argument("--temperature", type=float)
    p.add_argument("--top-p", type=float)
    p.add_argument("--top-k", type=int)
    p.add_argument("--min-p", type=float)
    p.add_argument("--repetition-penalty", type=float)
    p.add_argument("--max-new-tokens", type=int)
    p.add_argument("--seed", type=int)


def api_key(args) -> str | None:
    """``--api-key``, else the :data:`API_KEY_ENV` environment variable, else ``None``."""
    return getattr(args, "api_key", None) or os.environ.get(API_KEY_ENV) or None


def load_settings(args) -> LoadSettings:
    """The :class:`LoadSettings` the options name (``--remote``: a server's model).

    Raises:
        ValueError: with a sentence, for bad values.
    """
    remote = getattr(args, "remote", None)
    if remote:
        return LoadSettings(
            engine="remote", remote_url=remote, remote_model=args.model, remote_api_key=api_key(args)
        )
    return LoadSettings(
        args.model,
        args.quantization,
        args.precision,
        args.device,
        args.trust_remote_code,
        threads=args.threads,
        fused_decode=args.fused_decode,
        compile_decode=args.compile_decode,
    )


def cache_settings(args) -> CacheSettings:
    """The KV-cache strategy the options name.

    Raises:
        ValueError: with a sentence, for bad sizes.
    """
    return CacheSettings(args.kv_cache, window=args.window, sinks=args.sinks)


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
    base = FAMILY_DEFAULTS.get(family.split("-")[0], FAMILY_DEFAULTS["generic"])
    values = {
        "temperature": args.temperature,
        "top_p": args.top_p,
        "top_k": args.top_k,
        "min_p": args.min_p,
        "repetition_penalty": args.repetition_penalty,
        "max_new_tokens": args.max_new_tokens,
        "seed": args.seed,
    }
    return replace(base, **{k: v for k, v in values.items() if v is not None})


def progress(p) -> None:
    """Show a load stage on one terminal line."""
    total = f" {p.done}/{p.total}" if p.total else ""
    print(f"\r[{p.stage}{total}]        ", end="", file=sys.stderr, flush=True)
