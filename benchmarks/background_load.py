"""Decode speed and TTFT of each CPU thread policy, quiet and with one core kept busy.

The busy load is a child process spinning in a loop, pinned to the last CPU
(``os.sched_setaffinity``), as a browser tab or an indexer would be. Policies:

- ``cores``: one thread per physical core, fixed (torch's default; glmdesk's
  default before issue 21);
- ``1`` .. ``cores-1``: fixed counts;
- ``adaptive``: :class:`glmdesk.engine.decode.threads.ThreadTuner` (glmdesk's thread count),
  one tuner kept across answers as in the app;
- ``cores passive`` and ``adaptive passive``: the same with ``OMP_WAIT_POLICY=PASSIVE``,
  which OpenMP reads only when it loads, so they run in a child process started
  with it set.

Conditions and policies alternate, ``--rounds`` times; medians are printed with
the ratios the issue asks for: under load each policy / the best fixed count
(goal for the default >= 0.8), quiet each policy / ``cores`` (goal >= 0.95).

    python benchmarks/background_load.py [--rounds 2] [--tokens 60]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

PROMPT = "Write a long story about a lighthouse keeper and a storm."


def spinner() -> subprocess.Popen:
    """A child process spinning on the last CPU."""
    child = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    cpus = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(child.pid, {cpus[-1]})
    return child


def answer(loaded, tokens: int) -> tuple[float, float]:
    """``(tokens/s, TTFT s)`` of one greedy answer of exactly ``tokens`` tokens."""
    from glmdesk.core.messages import ChatMessage
    from glmdesk.core.settings import ParamsBox, SamplingParams
    from glmdesk.engine.decode.generate import stream_chat

    box = ParamsBox(SamplingParams(temperature=0.0, max_new_tokens=tokens))
    last = None
    for chunk in stream_chat(loaded, [ChatMessage("user", PROMPT)], box):
        last = chunk
    assert last is not None and last.error is None, last
    return last.tokens_per_s, last.ttft_s


def measure(policies: list[str], rounds: int, tokens: int, suffix: str = "") -> dict:
    """``{(policy, condition): [(tokens/s, ttft), ...]}`` measured in this process."""
    import torch

    from glmdesk.core.settings import LoadSettings
    from glmdesk.engine.backends.transformers.acceleration import DEFAULT_THREADS
    from glmdesk.engine.backends.transformers.loader import load_model
    from glmdesk.engine.decode.threads import ThreadTuner

    loaded = load_model(LoadSettings())
    tuner = ThreadTuner(max_threads=DEFAULT_THREADS)
    answer(loaded, 8)  # warm-up
    out: dict[str, list] = {}
    for r in range(rounds):
        for condition in ("quiet", "busy") if r % 2 == 0 else ("busy", "quiet"):
            child = spinner() if condition == "busy" else None
            try:
                time.sleep(0.5)
                for policy in policies:
                    if policy == "adaptive":
                        loaded.tuner = tuner
                    else:
                        loaded.tuner = None
                        torch.set_num_threads(DEFAULT_THREADS if policy == "cores" else int(policy))
                    rate, ttft = answer(loaded, tokens)
                    out.setdefault(f"{policy}{suffix}|{condition}", []).append((rate, ttft))
                    print(
                        f"  round {r + 1} {condition:5} {policy + suffix:17} {rate:6.1f} tokens/s  "
                        f"TTFT {ttft:6.3f} s",
                        file=sys.stderr,
                        flush=True,
                    )
            finally:
                if child is not None:
                    child.kill()
                    child.wait()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--tokens", type=int, default=60)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    import torch  # before glmdesk (which sets OMP_WAIT_POLICY=PASSIVE): this process spins as OpenMP does by default

    cores = torch.get_num_threads()
    if args.child:
        print(json.dumps(measure(["cores", "adaptive"], args.rounds, args.tokens, " passive")))
        return 0
    policies = ["cores", *[str(n) for n in range(1, cores)], "adaptive"]
    print(f"{os.cpu_count()} CPUs, torch default {cores} threads; load average now {os.getloadavg()[0]:.1f}")
    results = measure(policies, args.rounds, args.tokens)
    env = dict(os.environ, OMP_WAIT_POLICY="PASSIVE")
    child = subprocess.run(
        [sys.executable, __file__, "--child", "--rounds", str(args.rounds), "--tokens", str(args.tokens)],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
        check=True,
    )
    results.update(json.loads(child.stdout))
    med = {
        k: (statistics.median(r for r, _ in v), statistics.median(t for _, t in v))
        for k, v in results.items()
    }
    fixed = [p for p in policies if p != "adaptive"]
    best_busy = max(med[f"{p}|busy"][0] for p in fixed)
    quiet_ref = med["cores|quiet"][0]
    print(
        f"{'policy':17} {'quiet tok/s':>11} {'TTFT s':>7} {'busy tok/s':>10} {'TTFT s':>7} "
        f"{'busy/best fixed':>15} {'quiet/cores':>11}"
    )
    for name in [*policies, "cores passive", "adaptive passive"]:
        (q, qt), (b, bt) = med[f"{name}|quiet"], med[f"{name}|busy"]
        print(
            f"{name:17} {q:>11.1f} {qt:>7.3f} {b:>10.1f} {bt:>7.3f} {b / best_busy:>15.2f} {q / quiet_ref:>11.2f}"
        )
    print(
        f"goals for glmdesk's default (adaptive passive: importing glmdesk sets OMP_WAIT_POLICY=PASSIVE): "
        f"busy/best fixed >= 0.8, quiet/cores >= 0.95; "
        f"load average now {os.getloadavg()[0]:.1f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
