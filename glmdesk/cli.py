"""Entry points: ``glmdesk`` opens the window; ``glmdesk chat`` streams in a terminal;
``glmdesk convert`` converts an original ChatGLM checkpoint."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import signal
import sys
import threading
import time

from glmdesk.core.errors import GlmdeskError
from glmdesk.core.messages import ChatMessage
from glmdesk.core.settings import (
    DEVICES,
    FAMILY_DEFAULTS,
    PRECISIONS,
    QUANTIZATIONS,
    CacheSettings,
    LoadSettings,
    ParamsBox,
    SamplingParams,
)


def _chat_parser(sub) -> None:
    p = sub.add_parser(
        "chat",
        help="chat in the terminal (streams the answer)",
        description="Chat in the terminal. Sampling flags left out take the model family's defaults; "
        "Ctrl+C stops an answer and keeps it (with --prompt: prints '(stopped)' and exits with 130).",
    )
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
    p.add_argument("--system", help="system prompt (instructions the model reads before every message)")
    p.add_argument(
        "--kv-cache",
        choices=["full", "sliding_window", "dynamic", "quantized"],
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
    p.add_argument("--prompt", help="answer this one message and exit")


def build_parser() -> argparse.ArgumentParser:
    """The ``glmdesk`` argument parser."""
    parser = argparse.ArgumentParser(prog="glmdesk", description="Chat with ChatGLM-family models locally.")
    parser.add_argument("--install-desktop-entry", action="store_true", help="add glmdesk to the app menu")
    parser.add_argument("--uninstall-desktop-entry", action="store_true", help="remove it from the app menu")
    parser.add_argument("--self-test", action="store_true", help="load the embedded model, answer once, exit")
    sub = parser.add_subparsers(dest="command")
    _chat_parser(sub)
    conv = sub.add_parser("convert", help="convert an original ChatGLM2/3 or GLM-4 checkpoint")
    conv.add_argument("src", help="original checkpoint folder")
    conv.add_argument("dst", nargs="?", help="output folder (default: next to the source, suffix -hf)")
    return parser


def _sampling(args, family: str) -> SamplingParams:
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
    from dataclasses import replace

    return replace(base, **{k: v for k, v in values.items() if v is not None})


def _error(command: str, sentence: object) -> None:
    """Print a CLI error in argparse's style: ``glmdesk chat: error: <sentence>``.

    Args:
        command: ``chat``, ``convert``, or ``""`` for ``glmdesk`` itself.
        sentence: The sentence (a :class:`GlmdeskError`'s message, a ``ValueError``).
    """
    prog = f"glmdesk {command}" if command else "glmdesk"
    print(f"{prog}: error: {sentence}", file=sys.stderr)


@contextlib.contextmanager
def _ctrl_c_stops(stop: threading.Event):
    """While inside, Ctrl+C sets ``stop`` (the answer ends within a token and is kept);
    a second Ctrl+C raises :class:`KeyboardInterrupt` as usual."""
    previous = signal.getsignal(signal.SIGINT)

    def on_sigint(signum, frame):
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()

    signal.signal(signal.SIGINT, on_sigint)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _progress(p) -> None:
    total = f" {p.done}/{p.total}" if p.total else ""
    print(f"\r[{p.stage}{total}]        ", end="", file=sys.stderr, flush=True)


def _stream_one(loaded, messages, box, cache, stop, conversation=None) -> tuple[str | None, str]:
    """Print one streamed answer (Ctrl+C stops it and keeps it).

    ``conversation``: the key under which the KV cache is kept for the next turn.

    Returns:
        ``(text, finish reason)``; the text is ``None`` after an error.
    """
    from glmdesk.engine.generate import stream_chat
    from glmdesk.engine.quiet import quiet_libraries

    parts: list[str] = []
    last = None
    with _ctrl_c_stops(stop), quiet_libraries():
        for chunk in stream_chat(loaded, messages, box, cache, stop, conversation):
            if last is None and 0 < chunk.reply_limit < box.get().max_new_tokens:
                print(
                    f"(note: only {chunk.reply_limit} tokens are left in the context window for this answer; "
                    f"max new tokens is {box.get().max_new_tokens})",
                    file=sys.stderr,
                )
            if chunk.text:
                print(chunk.text, end="", flush=True)
                parts.append(chunk.text)
            last = chunk
    print()
    if last is not None and last.dropped_messages:
        print(f"({len(last.dropped_messages)} earlier messages left the context window)", file=sys.stderr)
    if last is not None and last.finish_reason == "error":
        _error("chat", last.error.message)
        return None, "error"
    if last is None:
        return "".join(parts), "stop"
    if last.finish_reason == "cancelled":
        print("(stopped)", file=sys.stderr)
    reused = f", {last.reused_tokens} prompt tokens reused" if last.reused_tokens else ""
    print(
        f"[{last.n_generated} tokens, TTFT {last.ttft_s:.2f} s{reused}, {last.tokens_per_s:.1f} tokens/s]",
        file=sys.stderr,
    )
    return "".join(parts), last.finish_reason or "stop"


def chat(args) -> int:
    """Run ``glmdesk chat``: one answer with ``--prompt``, else an interactive loop.

    Returns:
        0, 1 when the answer failed, 2 for bad settings or a model that does not load,
        130 when Ctrl+C stopped it (the answer so far is printed and kept).
    """
    try:
        return _chat(args)
    except KeyboardInterrupt:  # Ctrl+C while loading, or a second one while answering
        print("\n(stopped)", file=sys.stderr)
        return 130


def _chat(args) -> int:
    loading = False
    try:
        settings = LoadSettings(
            args.model,
            args.quantization,
            args.precision,
            args.device,
            args.trust_remote_code,
            threads=args.threads,
            fused_decode=args.fused_decode,
            compile_decode=args.compile_decode,
        )
        cache = CacheSettings(args.kv_cache, window=args.window, sinks=args.sinks)
        _sampling(args, "generic")  # refuse bad values before a long load
        if settings.compile_decode and cache.strategy in ("sliding_window", "quantized"):
            # The compiled step writes the full cache's buffers only: no minute of compiling for nothing.
            print(
                f"note: the compiled decode step runs with the full and dynamic KV caches only; "
                f"--kv-cache {cache.strategy} decodes with the fused step, uncompiled.",
                file=sys.stderr,
            )
            settings = dataclasses.replace(settings, compile_decode=False)
        if args.prompt is not None and not args.prompt.strip():
            _error("chat", "the prompt is empty.")
            return 2
        from glmdesk.engine.loader import load_model  # after the cheap checks: torch takes seconds
        from glmdesk.engine.quiet import quiet_libraries

        t0 = time.perf_counter()
        loading = True
        with quiet_libraries():
            loaded = load_model(settings, progress=_progress)
        print(file=sys.stderr)
        box = ParamsBox(_sampling(args, loaded.info.family))
    except (GlmdeskError, ValueError) as exc:
        if loading:
            print(file=sys.stderr)
        _error("chat", exc)
        return 2
    print(f"{loaded.info.describe()} (loaded in {time.perf_counter() - t0:.1f} s)", file=sys.stderr)
    for note in loaded.info.notes:
        print(f"note: {note.message}", file=sys.stderr)
    system = [ChatMessage("system", args.system)] if args.system else []
    if args.prompt is not None:
        messages = system + [ChatMessage("user", args.prompt)]
        text, reason = _stream_one(loaded, messages, box, cache, threading.Event())
        if text is None:
            return 1
        return 130 if reason == "cancelled" else 0
    return _interactive(loaded, system, box, cache)


def _interactive(loaded, system, box, cache) -> int:
    print("Type a message. /clear starts over, /exit leaves, Ctrl+C stops an answer.", file=sys.stderr)
    history: list[ChatMessage] = []
    stop = threading.Event()
    conversation = 0  # the KV cache is kept per conversation between turns
    while True:
        try:
            line = input("> ")
        except (EOFError, KeyboardInterrupt):
            print(file=sys.stderr)
            return 0
        if line.strip() == "/exit":
            return 0
        if line.strip() == "/clear":
            history.clear()
            loaded.kv_pool.discard(conversation)
            conversation += 1
            print("(new conversation)", file=sys.stderr)
            continue
        if not line.strip():
            continue
        history.append(ChatMessage("user", line))
        stop.clear()
        text, _reason = _stream_one(loaded, system + history, box, cache, stop, conversation)
        if text is None:
            history.pop()
        else:
            history.append(ChatMessage("assistant", text))


def convert(args) -> int:
    """Run ``glmdesk convert SRC [DST]``."""
    from pathlib import Path

    from glmdesk.engine import chatglm
    from glmdesk.engine.info import LoadProgress
    from glmdesk.engine.quiet import quiet_libraries

    src = Path(args.src)
    dst = Path(args.dst) if args.dst else src.with_name(src.name + "-hf")
    try:
        with quiet_libraries():
            out = chatglm.convert_checkpoint(
                src, dst, progress=lambda d, t: _progress(LoadProgress("converting", d, t))
            )
    except GlmdeskError as exc:
        print(file=sys.stderr)
        _error("convert", exc.message)
        return 2
    except KeyboardInterrupt:
        print("\n(stopped)", file=sys.stderr)
        return 130
    print(f"\nconverted {src} -> {out}", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    """``glmdesk`` console entry point."""
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser().parse_args(argv)
    if args.command == "chat":
        return chat(args)
    if args.command == "convert":
        return convert(args)
    if args.install_desktop_entry or args.uninstall_desktop_entry:
        from glmdesk import desktop_entry

        return desktop_entry.main(install=args.install_desktop_entry)
    if args.self_test:
        from glmdesk import selftest

        return selftest.run()
    return gui_main(argv)


def gui_main(argv: list[str] | None = None) -> int:
    """Open the window (``glmdesk`` with no verb)."""
    try:
        from glmdesk.ui.app import run_app
    except ImportError as exc:
        _error("", f"the window is not available ({exc}); use: glmdesk chat")
        return 2
    return run_app([sys.argv[0], *(argv or [])])
