"""What serving over HTTP costs: the same greedy answer in-process and through
``glmdesk serve`` + the official ``openai`` client, alternating, in one run.

The server is a separate ``glmdesk serve`` process on 127.0.0.1 (as a user runs it);
the in-process answer uses the same engine and settings in this process. Both are
timed the same way at the consumer: TTFT from the request to the first text piece,
tokens/s over the pieces after it (token counts from the engine or from ``usage``).
The server keeps its KV cache between requests (under one key), so the in-process
answers keep theirs too (under one conversation key): both prefill the same. Prints the
tokens/s ratio (served / in-process; goal >= 0.95) and the TTFT that HTTP + SSE add
(goal <= 20 ms).

``--window`` adds the window half (``_serve_window.py``): the same answer in a window
answering in-process and in a window on the remote backend against the same server,
alternating: tokens/s ratio and TTFT difference as the user sees them.

    python benchmarks/serve_overhead.py [--pairs 3] [--tokens 128] [--engine transformers] [--window]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import threading
import time

import openai

from glmdesk.core.messages import ChatMessage
from glmdesk.core.settings import LoadSettings, ParamsBox, SamplingParams
from glmdesk.engine.backends import Backend, create_backend

PROMPT = "Write a long story about a lighthouse keeper and a storm."


def in_process(backend: Backend, n: int) -> tuple[float, float, str]:
    """``(TTFT s, tokens/s, text)`` of one in-process answer of at most ``n`` tokens,
    decoded on a thread of its own as the window's worker and the server's answers are
    (decoding on the main thread measured 2-8x slower on this busy 2-core machine)."""
    out: list = []
    thread = threading.Thread(target=lambda: out.append(_in_process(backend, n)))
    thread.start()
    thread.join()
    return out[0]


def _in_process(backend: Backend, n: int) -> tuple[float, float, str]:
    box = ParamsBox(SamplingParams(temperature=0.0, max_new_tokens=n))
    start = time.perf_counter()
    first = last_at = 0.0
    parts, last = [], None
    for chunk in backend.stream([ChatMessage("user", PROMPT)], box, conversation="bench"):
        if chunk.text:
            last_at = time.perf_counter()
            first = first or last_at
            parts.append(chunk.text)
        last = chunk
    return first - start, (last.n_generated - 1) / (last_at - first), "".join(parts)


def served(client: openai.OpenAI, model: str, n: int) -> tuple[float, float, str]:
    """``(TTFT s, tokens/s, text)`` of one answer through the server."""
    start = time.perf_counter()
    stream = client.chat.completions.create(
        model=model,
        messages=[{"role": "user", "content": PROMPT}],
        temperature=0,
        max_tokens=n,
        stream=True,
        stream_options={"include_usage": True},
    )
    first = last_at = 0.0
    parts, tokens = [], 0
    for event in stream:
        if event.usage is not None:
            tokens = event.usage.completion_tokens
        if event.choices and event.choices[0].delta.content:
            last_at = time.perf_counter()
            first = first or last_at
            parts.append(event.choices[0].delta.content)
    return first - start, (tokens - 1) / (last_at - first), "".join(parts)


def start_server(engine: str) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "glmdesk", "serve", "--port", "0", "--engine", engine],
        stderr=subprocess.PIPE,
        text=True,
    )
    for line in proc.stderr:
        match = re.search(r"at (http://\S+/v1)", line)
        if match:
            return proc, match.group(1)
    raise SystemExit("glmdesk serve did not start")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument(
        "--engine",
        default="transformers",
        help="transformers, llamacpp or auto, on both sides (default transformers)",
    )
    parser.add_argument(
        "--window", action="store_true", help="add the window half (remote vs in-process window)"
    )
    parser.add_argument("--window-only", action="store_true", help="only the window half")
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.1f}; engine {args.engine}")
    proc, url = start_server(args.engine)
    try:
        if not args.window_only:
            http_half(url, args)
        if args.window or args.window_only:
            sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
            from _serve_window import run

            print()
            run(url, args.engine, PROMPT, args.pairs, args.tokens)
    finally:
        proc.terminate()
        proc.wait(30)


def http_half(url: str, args: argparse.Namespace) -> None:
    """The in-process backend against ``glmdesk serve`` + the ``openai`` client."""
    backend = create_backend(LoadSettings(engine=args.engine))
    backend.load(LoadSettings(engine=args.engine))
    client = openai.OpenAI(base_url=url, api_key="none", max_retries=0, timeout=600)
    model = client.models.list().data[0].id
    in_process(backend, 8), served(client, model, 8)  # warm-up
    local_rows, http_rows = [], []
    for i in range(args.pairs):
        order = (0, 1) if i % 2 == 0 else (1, 0)
        for which in order:
            if which == 0:
                local_rows.append(in_process(backend, args.tokens))
            else:
                http_rows.append(served(client, model, args.tokens))
        same = local_rows[-1][2] == http_rows[-1][2]
        print(
            f"pair {i + 1}: in-process TTFT {local_rows[-1][0] * 1000:.0f} ms, {local_rows[-1][1]:.2f} tokens/s; "
            f"served TTFT {http_rows[-1][0] * 1000:.0f} ms, {http_rows[-1][1]:.2f} tokens/s; same text: {same}"
        )
    ttft_local = statistics.median(r[0] for r in local_rows)
    ttft_http = statistics.median(r[0] for r in http_rows)
    rate_local = statistics.median(r[1] for r in local_rows)
    rate_http = statistics.median(r[1] for r in http_rows)
    print(f"\nmedians over {args.pairs} pairs, {len(local_rows[-1][2])} characters per answer:")
    print(
        f"tokens/s: in-process {rate_local:.2f}, served {rate_http:.2f}: ratio {rate_http / rate_local:.3f} (goal >= 0.95)"
    )
    print(
        f"TTFT: in-process {ttft_local * 1000:.1f} ms, served {ttft_http * 1000:.1f} ms: "
        f"added {1000 * (ttft_http - ttft_local):.1f} ms (goal <= 20 ms)"
    )
    backend.close()


if __name__ == "__main__":
    main()
