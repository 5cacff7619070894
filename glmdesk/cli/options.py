"""Command-line options shared by ``glmdesk chat`` and ``glmdesk serve``: the model and
its engine, precision, quantization and KV cache, sampling, and a remote server."""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys

from glmdesk.core.settings import (
    CACHE_STRATEGIES,
    CHAT_FORMATS,
    DEVICES,
    PRECISIONS,
    QUANTIZATIONS,
    CacheSettings,
    LoadSettings,
    SamplingParams,
)
from glmdesk.engine.backends import AUTO_RULE, specs
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
        "int8-wo and int4-wo are weight-only int8 / int4: torch's kernels on the CPU, torchao's on "
        "a GPU (pip install 'glmdesk[cuda-quant]') (default: %(default)s)",
    )
    p.add_argument(
        "--precision",
        choices=PRECISIONS,
        default="auto",
        help="weight precision: auto is bf16 or fp16 on a GPU, fp32 on the CPU (default: %(default)s)",
    )
    p.add_argument("--device", choices=DEVICES, default="auto", help="where to run (default: %(default)s)")
    _add_decode_arguments(p)
    p.add_argument(
        "--no-thinking",
        dest="thinking",
        action="store_false",
        help="GLM-4.5/4.6/4.7: answer without reasoning first (the chat template's enable_thinking off)",
    )
    p.add_argument(
        "--reasoning-effort",
        metavar="LEVEL",
        help="how hard a model whose chat template reads reasoning_effort thinks (GLM-5.2: high or "
        "max; GLM-5.3: low, high or max); the loaded model's levels are checked",
    )
    keep = p.add_mutually_exclusive_group()
    keep.add_argument(
        "--keep-thinking",
        dest="clear_thinking",
        action="store_const",
        const=False,
        help="keep earlier turns' thinking in the prompt (the chat template's clear_thinking off; "
        "GLM-4.7 and the GLM-5 line)",
    )
    keep.add_argument(
        "--drop-thinking",
        dest="clear_thinking",
        action="store_const",
        const=True,
        help="drop earlier turns' thinking from the prompt (clear_thinking on)",
    )
    p.add_argument(
        "--chat-format",
        choices=CHAT_FORMATS,
        default="auto",
        help="how a chat-template model is prompted: auto reads it from the chat template; glm45 is "
        "GLM-4.5/4.6/4.7's (reasoning, XML tool calls), think GLM-Z1's, plain the template only "
        "(default: %(default)s)",
    )
    p.add_argument(
        "--chat-template",
        metavar="FILE",
        help="a chat template file (.jinja, or a tokenizer_config.json) to prompt the model with "
        "instead of its own; its format is read from it",
    )
    p.add_argument(
        "--trust-remote-code",
        action="store_true",
        help="run the model folder's own Python code (off by default)",
    )
    p.add_argument(
        "--engine",
        choices=["auto", *(spec.name for spec in specs() if spec.local)],
        default="auto",
        help=AUTO_RULE,
    )
    _add_engine_arguments(p)
    _add_cache_arguments(p)


def _add_decode_arguments(p: argparse.ArgumentParser) -> None:
    """The CPU threads, fused decode step and compiled decode step options."""
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
        help="compile the one-token decode step on static KV buffers while loading (torch.compile; CUDA graphs on a GPU; a C++ compiler on the CPU)",
    )


def _add_cache_arguments(p: argparse.ArgumentParser) -> None:
    """The KV-cache strategy, window and sinks options."""
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


def _add_engine_arguments(p: argparse.ArgumentParser) -> None:
    """Every engine's own options (its spec's fields: llama.cpp's ``--n-ctx``...), and
    the quantized KV cache's bits."""
    default = LoadSettings()
    for option in engine_options():
        value = default.option(option.name)
        if isinstance(value, bool):
            action = "store_false" if value else "store_true"
            p.add_argument(option.flag, dest=option.name, action=action, help=option.help)
        else:
            p.add_argument(option.flag, dest=option.name, type=int, default=value, help=option.help)
    p.add_argument(
        "--kv-bits", type=int, default=8, help="llama.cpp quantized KV cache: 8 (q8_0) or 4 (q4_0)"
    )


def unused_engine_options(args, engine: str) -> list[str]:
    """The engine options the command line set that ``engine`` (the one that loaded the
    model) does not read, each as ``"--n-ctx (llama.cpp)"``: said, never silently dropped."""
    default = LoadSettings()
    unused = []
    for spec in specs():
        if spec.name == engine:
            continue
        for option in spec.options:
            if getattr(args, option.name, None) not in (None, default.option(option.name)):
                unused.append(f"{option.flag} ({spec.label})")
    return unused


def engine_options() -> list:
    """The :class:`~glmdesk.engine.backends.spec.OptionField` of every engine, in order."""
    return [option for spec in specs() for option in spec.options]


def add_sampling_arguments(
    p: argparse.ArgumentParser, params_type: type[SamplingParams] = SamplingParams
) -> None:
    """Sampling options, one per row of ``params_type.TABLE`` (``--top-p`` for ``top_p``;
    unset ones take the model family's published defaults)."""
    for row in params_type.TABLE:
        p.add_argument(row.option, dest=row.name, type=row.type, help=row.help)


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
        chat_format=getattr(args, "chat_format", "auto"),
        chat_template=getattr(args, "chat_template", None),
        **{option.name: getattr(args, option.name) for option in engine_options()},
    )
    from glmdesk.engine.backends import engine_choice

    # The engine is chosen from the options asked for, before any is dropped; settings
    # whose preferred engine is not here stay "auto", so the engine that runs them
    # instead takes its best setting for them (transformers: a GGUF file's weight-only scheme).
    choice = engine_choice(settings)
    if choice.passed_over:
        return settings
    return dataclasses.replace(settings, engine=choice.engine)


def cache_settings(args) -> CacheSettings:
    """The KV-cache strategy the options name.

    Raises:
        ValueError: with a sentence, for bad sizes.
    """
    return CacheSettings(args.kv_cache, window=args.window, sinks=args.sinks, kv_bits=args.kv_bits)


def without_uncompilable(settings: LoadSettings, cache: CacheSettings) -> LoadSettings:
    """``settings`` without the compiled step when ``cache`` is one it cannot serve
    (the quantized cache decodes eagerly): no minute of compiling for nothing."""
    if settings.compile_decode and cache.strategy == "quantized":
        print(
            f"note: the compiled decode step runs with the full, sliding-window and dynamic KV "
            f"caches; --kv-cache {cache.strategy} decodes with the fused step, uncompiled.",
            file=sys.stderr,
        )
        return dataclasses.replace(settings, compile_decode=False)
    return settings


def sampling(args, family: str, params_type: type[SamplingParams] = SamplingParams) -> SamplingParams:
    """The family's defaults with the options given on top (the options of
    :func:`add_sampling_arguments` for ``params_type``), as a ``params_type``.

    Raises:
        ValueError: with a sentence, for a value out of range.
    """
    given = {row.name: getattr(args, row.name) for row in params_type.TABLE}
    base = dataclasses.asdict(sampling_defaults(family))
    return params_type(**(base | {k: v for k, v in given.items() if v is not None}))


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


def template_choices(args, info) -> tuple[tuple[str, object], ...]:
    """``--reasoning-effort`` and ``--keep-thinking``/``--drop-thinking`` as the values the
    loaded model's chat template reads (``SamplingParams.template_kwargs``).

    A remote server's model takes ``--reasoning-effort`` and ``--keep-thinking``/
    ``--drop-thinking`` as they are (its template is the server's: they go as
    ``reasoning_effort`` and ``chat_template_kwargs``, and the server refuses a level its
    model lacks, in its own words).

    Raises:
        ValueError: with a sentence, for an effort the model's template does not tell
            apart, or a thinking choice its template does not read.
    """
    chosen: list[tuple[str, object]] = []
    effort = getattr(args, "reasoning_effort", None)
    if effort is not None and info.engine != "remote":
        levels = info.effort_levels
        if not levels:
            raise ValueError(
                f"{info.name} has no reasoning effort levels (its chat template reads no "
                "reasoning_effort); leave out --reasoning-effort."
            )
        if effort not in levels:
            raise ValueError(
                f"--reasoning-effort must be one of {', '.join(levels)} for {info.name}, not {effort!r}."
            )
    if effort is not None:
        chosen.append(("reasoning_effort", effort))
    clear = getattr(args, "clear_thinking", None)
    if clear is not None:
        # A server's template is not known here: the value goes as chat_template_kwargs.
        if not info.clear_thinking and info.engine != "remote":
            raise ValueError(
                f"{info.name}'s chat template does not read clear_thinking; leave out "
                "--keep-thinking and --drop-thinking."
            )
        chosen.append(("clear_thinking", clear))
    return tuple(chosen)


def apply_thinking(backend, thinking: bool) -> str | None:
    """Switch the loaded model's reasoning off (``--no-thinking``): its prompt format's
    ``thinking`` (GLM-4.5's ``enable_thinking``). Returns a note (English) when the model
    has no such switch, else ``None``."""
    if thinking:
        return None
    if hasattr(backend, "enable_thinking"):  # a server: its requests ask for no thinking
        backend.enable_thinking = False
        return None
    model = getattr(backend, "loaded", None)
    fmt = getattr(model, "prompt_format", None) or getattr(backend, "prompt_format", None)
    if fmt is None or not hasattr(fmt, "thinking"):
        return "this model has no thinking switch, so --no-thinking changes nothing"
    fmt.thinking = False
    return None
