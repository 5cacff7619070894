"""How many of 20 short factual questions the embedded model answers right, per engine.

The questions and their accepted answers are ``tests/data/factual_prompts.json``; each
is asked alone (default system prompt of the model's chat template), greedily
(temperature 0), through glmdesk's backends and decode loop:

- ``llamacpp``: the GGUF's own Q4_1 weights on llama.cpp (what ``engine=auto`` runs
  once llama-cpp-python is installed);
- ``int4-wo``: transformers on the same weights as int4 weight-only (the fallback
  while llama.cpp is missing or being built);
- ``fp32``: transformers on the GGUF dequantized to fp32.

An answer is right when it contains an accepted answer as a whole word (case ignored).
Prints one line per question (where the engines differ) and the count each got right.

Usage::

    python benchmarks/factual.py [--engines llamacpp,int4-wo,fp32] [--new 40] [--threads 0]
"""

from __future__ import annotations

import argparse
import json
import re
import time
from pathlib import Path

from glmdesk.core.messages import ChatMessage
from glmdesk.core.settings import CacheSettings, LoadSettings, ParamsBox, SamplingParams

PROMPTS = Path(__file__).parents[1] / "tests" / "data" / "factual_prompts.json"
ENGINES = {
    "llamacpp": {"engine": "llamacpp"},
    "int4-wo": {"engine": "transformers", "quantization": "int4-wo"},
    "fp32": {"engine": "transformers"},
}


def load_prompts(path: Path = PROMPTS) -> list[dict]:
    """The questions: ``[{"prompt": str, "accept": [str, ...]}, ...]``."""
    return json.loads(path.read_text(encoding="utf-8"))["prompts"]


def is_right(answer: str, accept: list[str]) -> bool:
    """Whether ``answer`` contains one of ``accept`` as a whole word, case ignored."""
    return any(re.search(rf"(?<!\w){re.escape(word)}(?!\w)", answer, re.IGNORECASE) for word in accept)


def answers(engine: str, prompts: list[dict], new_tokens: int, threads: int = 0) -> tuple[list[str], float]:
    """Greedy answers of ``engine`` (a key of :data:`ENGINES`) and its mean tokens/s."""
    from glmdesk.engine.backends import create_backend
    from glmdesk.engine.quiet import quiet_libraries

    settings = LoadSettings(threads=threads, **ENGINES[engine])
    backend = create_backend(settings)
    with quiet_libraries():
        backend.load(settings)
    box = ParamsBox(SamplingParams(temperature=0.0, max_new_tokens=new_tokens))
    texts, rates = [], []
    try:
        for item in prompts:
            parts, last = [], None
            for chunk in backend.stream([ChatMessage("user", item["prompt"])], box, CacheSettings()):
                parts.append(chunk.text)
                last = chunk
            texts.append("".join(parts).strip())
            if last is not None and last.tokens_per_s:
                rates.append(last.tokens_per_s)
    finally:
        backend.close()
    return texts, sum(rates) / max(len(rates), 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engines", default="llamacpp,int4-wo,fp32")
    parser.add_argument("--new", type=int, default=40, help="max new tokens per answer")
    parser.add_argument("--threads", type=int, default=0)
    args = parser.parse_args()
    prompts = load_prompts()
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    results = {}
    for engine in engines:
        t0 = time.perf_counter()
        texts, rate = answers(engine, prompts, args.new, args.threads)
        results[engine] = texts
        print(f"{engine}: {time.perf_counter() - t0:.0f} s, {rate:.1f} tokens/s", flush=True)
    for i, item in enumerate(prompts):
        marks = {e: is_right(results[e][i], item["accept"]) for e in engines}
        if len(set(marks.values())) > 1:
            print(f"\n{item['prompt']}")
            for e in engines:
                print(f"  {e:9} {'right' if marks[e] else 'wrong'}: {results[e][i][:90]!r}")
    print()
    for e in engines:
        right = sum(is_right(results[e][i], item["accept"]) for i, item in enumerate(prompts))
        print(f"{e:9} {right}/{len(prompts)} right")


if __name__ == "__main__":
    main()
