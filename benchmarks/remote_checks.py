"""The remote backend's checks against any running OpenAI-compatible server (vLLM,
SGLang, glmdesk serve): connect and list models, a greedy answer streamed with client
timings and server counts, ``length`` at max tokens, Stop mid-answer, the KV-cache gauge
from ``/metrics``, an unknown model, a wrong port. Prints one line per check and exits 1
when one fails. ``benchmarks/remote_vllm.sh`` runs it against vLLM on a GPU machine.

    python benchmarks/remote_checks.py --url http://127.0.0.1:8000/v1 [--model NAME] [--api-key KEY]
"""

from __future__ import annotations

import argparse
import os
import threading
import time

from glmdesk.core.errors import GlmdeskError
from glmdesk.core.messages import ChatMessage
from glmdesk.core.settings import LoadSettings, ParamsBox, SamplingParams
from glmdesk.engine.backends.remote.backend import RemoteBackend

PARIS = [ChatMessage("user", "What is the capital of France? Answer in one sentence.")]
STORY = [ChatMessage("user", "Write a long story about a dragon.")]


def check(name: str, ok: bool, detail: str, failures: list[str]) -> None:
    print(f"{'PASS' if ok else 'FAIL'}  {name}: {detail}", flush=True)
    if not ok:
        failures.append(name)


def run(url: str, model: str | None, key: str | None) -> list[str]:
    failures: list[str] = []
    remote = RemoteBackend(stall_s=120)
    t0 = time.perf_counter()
    info = remote.load(LoadSettings(remote_url=url, remote_model=model, remote_api_key=key))
    check(
        "connect",
        True,
        f"{info.name}, context {info.context_length} tokens, {time.perf_counter() - t0:.2f} s",
        failures,
    )

    chunks = list(remote.stream(PARIS, ParamsBox(SamplingParams(temperature=0, max_new_tokens=48))))
    last, text = chunks[-1], "".join(c.text for c in chunks)
    check(
        "greedy answer",
        last.finish_reason in ("stop", "length") and bool(text.strip()) and last.prompt_tokens > 0,
        f"{text.strip()[:60]!r}; {last.prompt_tokens} prompt + {last.n_generated} tokens, "
        f"TTFT {last.ttft_s * 1000:.0f} ms, {last.tokens_per_s:.1f} tokens/s",
        failures,
    )
    again = "".join(
        c.text for c in remote.stream(PARIS, ParamsBox(SamplingParams(temperature=0, max_new_tokens=48)))
    )
    check(
        "greedy is repeatable",
        again == text,
        "same text twice" if again == text else repr(again[:60]),
        failures,
    )

    last = list(remote.stream(STORY, ParamsBox(SamplingParams(temperature=0, max_new_tokens=16))))[-1]
    check(
        "length",
        last.finish_reason == "length" and last.n_generated == 16,
        f"{last.n_generated} tokens",
        failures,
    )

    stop = threading.Event()
    seen = []
    for chunk in remote.stream(
        STORY, ParamsBox(SamplingParams(temperature=0.7, max_new_tokens=2000)), stop=stop
    ):
        seen.append(chunk)
        if len(seen) == 5:
            stop.set()
    check(
        "stop",
        seen[-1].finish_reason == "cancelled" and len(seen) == 6,
        f"ended after {len(seen) - 1} pieces",
        failures,
    )

    usage = remote.kv_cache_usage()
    check("KV-cache gauge", True, "no gauge in /metrics" if usage is None else f"{usage:.4f}", failures)

    try:
        RemoteBackend().load(LoadSettings(remote_url=url, remote_model="no-such-model", remote_api_key=key))
        check("unknown model", False, "loaded", failures)
    except GlmdeskError as exc:
        check("unknown model", exc.kind == "remote_model_not_found", exc.message, failures)
    remote.close()
    return failures


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--model")
    parser.add_argument("--api-key", default=os.environ.get("GLMDESK_API_KEY"))
    args = parser.parse_args()
    failures = run(args.url, args.model, args.api_key)
    print("all checks passed" if not failures else f"failed: {', '.join(failures)}")
    raise SystemExit(1 if failures else 0)


if __name__ == "__main__":
    main()
