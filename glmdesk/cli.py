"""Entry points: ``glmdesk`` opens the window; ``glmdesk chat`` streams in a terminal
(a local model or a remote server); ``glmdesk serve`` serves the model over an
OpenAI-compatible API; ``glmdesk convert`` converts an original ChatGLM checkpoint."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time

from glmdesk.cli_options import (
    API_KEY_ENV,
    add_model_arguments,
    add_sampling_arguments,
    cache_settings,
    load_settings,
    progress,
    sampling,
    without_uncompilable,
)
from glmdesk.cli_serve import add_serve_parser, serve
from glmdesk.core.errors import GlmdeskError
from glmdesk.core.messages import ChatMessage
from glmdesk.core.settings import ParamsBox


def _chat_parser(sub) -> None:
    p = sub.add_parser("chat", help="chat in the terminal (streams the answer)")
    add_model_arguments(p)
    p.add_argument(
        "--remote",
        metavar="URL",
        help="answer with an OpenAI-compatible server (vLLM, SGLang, glmdesk serve), e.g. "
        "http://gpu-box:8000/v1; --model then names the server's model",
    )
    p.add_argument("--api-key", help=f"the remote server's API key (or set {API_KEY_ENV})")
    add_sampling_arguments(p)
    p.add_argument("--system", help="system prompt")
    p.add_argument("--prompt", help="answer this one message and exit")


def build_parser() -> argparse.ArgumentParser:
    """The ``glmdesk`` argument parser."""
    parser = argparse.ArgumentParser(prog="glmdesk", description="Chat with ChatGLM-family models locally.")
    parser.add_argument("--install-desktop-entry", action="store_true", help="add glmdesk to the app menu")
    parser.add_argument("--uninstall-desktop-entry", action="store_true", help="remove it from the app menu")
    parser.add_argument("--self-test", action="store_true", help="load the embedded model, answer once, exit")
    sub = parser.add_subparsers(dest="command")
    _chat_parser(sub)
    add_serve_parser(sub)
    conv = sub.add_parser("convert", help="convert an original ChatGLM2/3 or GLM-4 checkpoint")
    conv.add_argument("src", help="original checkpoint folder")
    conv.add_argument("dst", nargs="?", help="output folder (default: next to the source, suffix -hf)")
    return parser


def _stream_one(backend, messages, box, cache, stop) -> str | None:
    """Print one streamed answer; return its text (``None`` after an error with no text)."""
    parts: list[str] = []
    last = None
    for chunk in backend.stream(messages, box, cache, stop):
        if chunk.text:
            print(chunk.text, end="", flush=True)
            parts.append(chunk.text)
        last = chunk
    print()
    if last is not None and last.dropped_messages:
        print(f"({len(last.dropped_messages)} earlier messages left the context window)", file=sys.stderr)
    if last is not None and last.finish_reason == "error":
        print(f"error: {last.error.message}", file=sys.stderr)
        return None
    if last is not None:
        note = " (stopped)" if last.finish_reason == "cancelled" else ""
        print(
            f"[{last.n_generated} tokens, TTFT {last.ttft_s:.2f} s, {last.tokens_per_s:.1f} tokens/s{note}]",
            file=sys.stderr,
        )
    return "".join(parts)


def chat(args) -> int:
    """Run ``glmdesk chat``: one answer with ``--prompt``, else an interactive loop."""
    loading = False
    try:
        settings = load_settings(args)
        cache = cache_settings(args)
        sampling(args, "generic")  # refuse bad values before a long load
        settings = without_uncompilable(settings, cache)
        if args.prompt is not None and not args.prompt.strip():
            print("error: the prompt is empty.", file=sys.stderr)
            return 2
        from glmdesk.engine.backends import create_backend  # after the cheap checks: torch takes seconds

        t0 = time.perf_counter()
        loading = True
        backend = create_backend(settings)
        info = backend.load(settings, progress=progress)
        print(file=sys.stderr)
        box = ParamsBox(sampling(args, info.family))
    except (GlmdeskError, ValueError) as exc:
        print(f"{chr(10) if loading else ''}error: {exc}", file=sys.stderr)
        return 2
    print(f"{info.describe()} (loaded in {time.perf_counter() - t0:.1f} s)", file=sys.stderr)
    for note in info.notes:
        print(f"note: {note.message}", file=sys.stderr)
    system = [ChatMessage("system", args.system)] if args.system else []
    try:
        if args.prompt is not None:
            messages = system + [ChatMessage("user", args.prompt)]
            text = _stream_one(backend, messages, box, cache, threading.Event())
            return 0 if text is not None else 1
        return _interactive(backend, system, box, cache)
    finally:
        backend.close()


def _interactive(backend, system, box, cache) -> int:
    print("Type a message. /clear starts over, /exit leaves, Ctrl+C stops an answer.", file=sys.stderr)
    history: list[ChatMessage] = []
    stop = threading.Event()
    previous = signal.getsignal(signal.SIGINT)

    def on_sigint(signum, frame):
        stop.set()

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
            print("(new conversation)", file=sys.stderr)
            continue
        if not line.strip():
            continue
        history.append(ChatMessage("user", line))
        stop.clear()
        signal.signal(signal.SIGINT, on_sigint)
        try:
            text = _stream_one(backend, system + history, box, cache, stop)
        finally:
            signal.signal(signal.SIGINT, previous)
        if text is None:
            history.pop()
        else:
            history.append(ChatMessage("assistant", text))


def convert(args) -> int:
    """Run ``glmdesk convert SRC [DST]``."""
    from pathlib import Path

    from glmdesk.engine import chatglm
    from glmdesk.engine.info import LoadProgress

    src = Path(args.src)
    dst = Path(args.dst) if args.dst else src.with_name(src.name + "-hf")
    try:
        out = chatglm.convert_checkpoint(
            src, dst, progress=lambda d, t: progress(LoadProgress("converting", d, t))
        )
    except GlmdeskError as exc:
        print(f"\nerror: {exc.message}", file=sys.stderr)
        return 2
    print(f"\nconverted {src} -> {out}", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    """``glmdesk`` console entry point."""
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser().parse_args(argv)
    if args.command == "chat":
        return chat(args)
    if args.command == "serve":
        return serve(args)
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
        print(f"The window is not available ({exc}); use: glmdesk chat", file=sys.stderr)
        return 2
    return run_app([sys.argv[0], *(argv or [])])
