"""``glmdesk --self-test``: load the embedded model, answer one greedy question, exit.

It proves that an installation (source, wheel or the frozen bundle) can load a
model and generate: the embedded SmolLM2-135M-Instruct is converted once into
the user cache (``glmdesk.core.paths.cache_dir()``), then answers "What is the
capital of France?" greedily. Exit status 0 when the answer names Paris, 1 when
it does not or when anything fails (the reason is printed).

Printed timings, in seconds:

- ``process start to first token``: from the operating system starting the
  process (psutil) to the first generated token: what a user waits for.
- ``load``: :func:`glmdesk.engine.backends.transformers.loader.load_model` (includes a first-start
  conversion of the GGUF file).
- ``time to first token``: from asking to the first token (prompt prefill).
"""

from __future__ import annotations

import sys
import threading
import time
import traceback

QUESTION = "What is the capital of France?"
EXPECTED = "Paris"
MAX_NEW_TOKENS = 32


def _process_age_s() -> float | None:
    """Seconds since this process started, or ``None`` when psutil cannot tell."""
    try:
        import psutil

        return time.time() - psutil.Process().create_time()
    except Exception:  # psutil missing or not permitted: the other timings still print
        return None


def run() -> int:
    """Run the self-test; print the answer and timings.

    Returns:
        0 when the answer contains "Paris", else 1.
    """
    from glmdesk.core.errors import GlmdeskError
    from glmdesk.core.messages import ChatMessage
    from glmdesk.core.settings import CacheSettings, LoadSettings, ParamsBox, SamplingParams

    started_age = _process_age_s()  # imports before this point count too
    t0 = time.perf_counter()
    try:
        from glmdesk.engine.backends.transformers.loader import load_model
        from glmdesk.engine.decode.generate import stream_chat

        loaded = load_model(LoadSettings())
    except GlmdeskError as exc:
        print(f"self-test: FAILED to load the embedded model: {exc.message}", file=sys.stderr)
        return 1
    except Exception:  # a broken install or bundle: show where
        traceback.print_exc()
        print("self-test: FAILED to load the embedded model (traceback above)", file=sys.stderr)
        return 1
    load_s = time.perf_counter() - t0
    print(f"self-test: loaded {loaded.info.describe()} in {load_s:.2f} s", flush=True)
    print(f"self-test: Q: {QUESTION}", flush=True)

    params = ParamsBox(SamplingParams(temperature=0, max_new_tokens=MAX_NEW_TOKENS))
    parts: list[str] = []
    first_token_at: float | None = None
    last = None
    for chunk in stream_chat(
        loaded, [ChatMessage("user", QUESTION)], params, CacheSettings(), threading.Event()
    ):
        if first_token_at is None and chunk.n_generated:
            first_token_at = time.perf_counter()
        parts.append(chunk.text)
        last = chunk
    answer = "".join(parts).strip()
    print(f"self-test: A: {answer}", flush=True)
    if last is None or last.finish_reason == "error":
        reason = last.error.message if last is not None and last.error else "no output"
        print(f"self-test: FAILED while answering: {reason}", file=sys.stderr)
        return 1

    print(
        f"self-test: {last.n_generated} tokens, time to first token {last.ttft_s:.2f} s, "
        f"{last.tokens_per_s:.1f} tokens/s (finish: {last.finish_reason})"
    )
    if first_token_at is not None and started_age is not None:
        since_start = started_age + (first_token_at - t0)
        print(f"self-test: process start to first token {since_start:.2f} s (load {load_s:.2f} s)")
    ok = EXPECTED.lower() in answer.lower()
    print(f"self-test: {'PASSED' if ok else 'FAILED'} (the answer {'names' if ok else 'lacks'} {EXPECTED})")
    return 0 if ok else 1
