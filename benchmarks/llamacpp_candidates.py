"""llama.cpp's candidate builds side by side: smoke verdict, TTFT and decode tokens/s.

The builder (:mod:`glmdesk.engine.llamacpp_build`) installs the first candidate that
answers its smoke test: ``native`` (AMX where the CPU has it), ``noamx`` (native, AMX
compiled out), ``portable`` (``GGML_NATIVE=OFF``). This prints each candidate's verdict
and speed on the embedded model (SmolLM2-135M-Instruct, Q4_1), each in a child process
of its own with the wheel unpacked first on its ``sys.path`` (nothing is installed):

- TTFT: a 93-token prompt decoded in one batch (``n_batch`` 512) and the first token
  sampled, in ms;
- decode: 200 greedy tokens after it (end of text ignored), tokens/s.

A candidate that crashes on prompt batches (AMX here) is also timed with the prompt fed
one token at a time (``n_batch`` 1), marked ``1-by-1``: what it would give if it worked.
The median of ``--rounds`` runs; ``--threads`` threads (2: this machine's cores).

Usage::

    python benchmarks/llamacpp_candidates.py [--wheels DIR] [--rounds 3] [--new 200]

``--wheels`` is a folder with one subfolder per candidate holding its wheel (default:
glmdesk's wheel folder, where the builder keeps them).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

PROMPT = (
    "Here is a short story about a lighthouse keeper. Every night she climbed the stairs, "
    "lit the lamp and watched the ships pass the rocks. One winter a storm came from the "
    "north, the lamp went out, and a small fishing boat was lost in the dark. She took the "
    "old oil lantern, climbed to the gallery and swung it back and forth until the boat "
    "found the harbour. Write the rest of the story, with what the fishermen said to her."
)


def child(root: str, model: str, n_batch: int, new: int, threads: int) -> None:
    """In the child: time one prompt and ``new`` greedy tokens; print JSON."""
    sys.path.insert(0, root)
    import llama_cpp

    llm = llama_cpp.Llama(
        model_path=model, n_ctx=1024, n_batch=n_batch, n_threads=threads, seed=0, verbose=False
    )
    ids = llm.tokenize(PROMPT.encode())
    start = time.perf_counter()
    llm.eval(ids)
    token = llm.sample(temp=0.0)
    ttft = time.perf_counter() - start
    start = time.perf_counter()
    for _ in range(new):
        llm.eval([token])
        token = llm.sample(temp=0.0)
    decode = new / (time.perf_counter() - start)
    print(json.dumps({"prompt_tokens": len(ids), "ttft_s": ttft, "tokens_per_s": decode}))


def one_run(root: Path, n_batch: int, args) -> dict | str:
    """The figures of one child, or why it did not finish (``exit -11``)."""
    from glmdesk.engine.files.sources import embedded_gguf_path

    command = [sys.executable, __file__, "--child", str(root), str(embedded_gguf_path())]
    command += [str(n_batch), str(args.new), str(args.threads)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        return f"exit {done.returncode}"
    return json.loads(done.stdout.strip().splitlines()[-1])


def median(runs: list) -> dict | str:
    """Median of each figure over the runs; the first failure's reason when one failed."""
    failed = [run for run in runs if isinstance(run, str)]
    if failed:
        return failed[0]
    return {key: statistics.median(run[key] for run in runs) for key in runs[0]}


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        root, model, n_batch, new, threads = sys.argv[2:7]
        child(root, model, int(n_batch), int(new), int(threads))
        return
    from glmdesk.core.paths import wheel_dir
    from glmdesk.engine import llamacpp_smoke
    from glmdesk.engine.llamacpp_build import CANDIDATES, cached_wheel, cpu_has_amx, requirement

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheels", type=Path, default=None)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--new", type=int, default=200)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    folder = args.wheels or wheel_dir()
    print(
        f"CPU lists AMX: {cpu_has_amx()}; {args.threads} threads; median of {args.rounds}; {args.new} tokens"
    )
    builds, chosen = [], None  # (name, verdict, unpacked folder, n_batch)
    with contextlib.ExitStack() as stack:
        for candidate in CANDIDATES:
            wheel = cached_wheel(folder / candidate.name, requirement())
            if wheel is None:
                print(f"{candidate.name:9} no wheel in {folder / candidate.name}")
                continue
            root = stack.enter_context(llamacpp_smoke.unpacked_wheel(wheel))
            verdict = llamacpp_smoke.verdict_for(root, name=candidate.name)
            chosen = chosen or (candidate.name if verdict.passed else None)
            builds.append((candidate.name, verdict, root, 512 if verdict.passed else 1))
        runs: dict[str, list] = {name: [] for name, *_ in builds}
        for _ in range(args.rounds):  # rounds alternate the builds: a busy machine slows each alike
            for name, _verdict, root, n_batch in builds:
                runs[name].append(one_run(root, n_batch, args))
    rows = [
        (name, verdict, "batch" if n == 512 else "1-by-1", median(runs[name]))
        for name, verdict, _r, n in builds
    ]
    base = next((r[3] for r in rows if r[0] == chosen and isinstance(r[3], dict)), None)
    print(f"{'build':9} {'smoke test':18} {'prompt':7} {'TTFT ms':>8} {'tok/s':>7} {'x chosen':>8}")
    for name, verdict, mode, figures in rows:
        outcome = verdict.outcome + (f" {verdict.signal}" if verdict.signal else "")
        if not isinstance(figures, dict):
            print(f"{name:9} {outcome:18} {mode:7} {figures}")
            continue
        ratio = figures["tokens_per_s"] / base["tokens_per_s"] if base else float("nan")
        mark = " <- chosen" if name == chosen else ""
        print(
            f"{name:9} {outcome:18} {mode:7} {1000 * figures['ttft_s']:8.0f} "
            f"{figures['tokens_per_s']:7.1f} {ratio:8.2f}{mark}"
        )


if __name__ == "__main__":
    main()
