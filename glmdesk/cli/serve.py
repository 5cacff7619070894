"""``glmdesk serve``: load a model once and serve it over an OpenAI-compatible API."""

from __future__ import annotations

import argparse
import signal
import socket
import sys
import threading
import time

from glmdesk.cli.options import (
    API_KEY_ENV,
    add_model_arguments,
    api_key,
    apply_thinking,
    cache_settings,
    load_settings,
    progress,
    without_uncompilable,
)
from glmdesk.core.errors import GlmdeskError


def add_serve_parser(sub) -> None:
    """Register the ``serve`` verb."""
    p = sub.add_parser(
        "serve",
        help="serve the model over an OpenAI-compatible API (one answer at a time)",
        description="Serve one model over an OpenAI-compatible HTTP API (/v1/chat/completions, "
        "/v1/completions, /v1/models, /health). Answers one request at a time; for many users "
        "at once, use vLLM or SGLang.",
    )
    add_model_arguments(p)
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default: this machine only)")
    p.add_argument("--port", type=int, default=8000, help="TCP port (0: any free port)")
    p.add_argument("--api-key", help=f"clients must send this key (or set {API_KEY_ENV})")
    p.add_argument("--queue-size", type=int, default=16, help="requests that may wait for the model")
    p.add_argument("--served-model-name", help="the model id clients use (default: the model's name)")
    p.add_argument(
        "--max-body-mib",
        type=float,
        help="the largest request body read, in MiB; longer ones get HTTP 413 unread "
        "(default: 32 bytes per token of context + 1 MiB)",
    )


def serve(args: argparse.Namespace) -> int:
    """Run ``glmdesk serve`` until Ctrl+C; returns the exit status."""
    from glmdesk.server.config import ServeSettings

    loading = False
    try:
        settings = ServeSettings(
            host=args.host,
            port=args.port,
            api_key=api_key(args),
            queue_size=args.queue_size,
            model_name=args.served_model_name,
            max_body_bytes=_mib_to_bytes(args.max_body_mib),
        )
        cache = cache_settings(args)
        load = without_uncompilable(load_settings(args), cache)
        _check_port(settings.host, settings.port)  # before a load that can take minutes
        from glmdesk.engine.backends import create_backend  # after the cheap checks: torch takes seconds

        t0 = time.perf_counter()
        loading = True
        backend = create_backend(load)
        info = backend.load(load, progress=progress)
        print(file=sys.stderr)
    except (GlmdeskError, ValueError) as exc:
        print(f"{chr(10) if loading else ''}error: {exc}", file=sys.stderr)
        return 2
    print(f"{info.describe()} (loaded in {time.perf_counter() - t0:.1f} s)", file=sys.stderr)
    thinking_note = apply_thinking(backend, args.thinking)
    if thinking_note:
        print(f"note: {thinking_note}", file=sys.stderr)
    for note in info.notes:
        print(f"note: {note.message}", file=sys.stderr)
    try:
        return _serve_loaded(backend, settings, cache)
    finally:
        backend.close()


def _check_port(host: str, port: int) -> None:
    """Raise ValueError with a sentence when ``host:port`` cannot be listened on (another
    server holds it, or the address is not this machine's); port 0 is always free."""
    if port == 0:
        return
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise ValueError(f"--host {host} is not an address of this machine ({exc.strerror}).") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server itself binds
        try:
            probe.bind(address)
        except OSError as exc:
            raise ValueError(
                f"Cannot listen on {host}:{port} ({exc.strerror}). Is another server using the port? "
                "Try --port 0 for any free port."
            ) from None


def _mib_to_bytes(mib: float | None) -> int | None:
    """``--max-body-mib`` in bytes (``None``: sized from the context length).

    Raises:
        ValueError: for a size that is not a positive number.
    """
    if mib is None:
        return None
    if not mib > 0 or mib == float("inf"):
        raise ValueError(f"--max-body-mib must be a positive number of MiB, not {mib}.")
    return round(mib * 1024 * 1024)


def _serve_loaded(backend, settings, cache) -> int:
    from glmdesk.server.app import create_app
    from glmdesk.server.runner import ServerThread

    app = create_app(backend, settings, cache)
    try:
        server = ServerThread(app, settings).start()
    except OSError as exc:
        print(
            f"error: {exc} Is another server using the port? Try --port 0 for any free port.", file=sys.stderr
        )
        return 2
    state = app.state.glmdesk
    model_id = state.model_id
    print(
        f"Request bodies over {state.body_limit / 2**20:.2f} MiB are refused (--max-body-mib).",
        file=sys.stderr,
    )
    print(f"Serving {model_id} at {server.url} (Ctrl+C stops)", file=sys.stderr, flush=True)
    stopped = threading.Event()
    previous = signal.signal(signal.SIGINT, lambda signum, frame: stopped.set())
    previous_term = signal.signal(signal.SIGTERM, lambda signum, frame: stopped.set())
    try:
        while not stopped.wait(0.5):
            if not server.thread.is_alive():
                print("error: the server stopped unexpectedly.", file=sys.stderr)
                return 1
    finally:
        signal.signal(signal.SIGINT, previous)
        signal.signal(signal.SIGTERM, previous_term)
        server.stop()
    print("Stopped.", file=sys.stderr)
    return 0
