"""glmdesk's llama.cpp backend against llama-cpp-python's own loop and glmdesk's transformers path.

Issue 17's benchmark, on the embedded model's GGUF (SmolLM2-135M-Instruct, Q4_1):

1. Speed: same prompt ids, 200 greedy tokens (end-of-turn ignored by all), runs
   alternating in order each round. glmdesk's llama.cpp backend (our decode loop:
   transformers processors, live parameters and detokenizer on llama.cpp's logits)
   against llama-cpp-python's ``Llama.create_completion`` (its own sampler chain)
   - goal: tokens/s ratio >= 0.95, TTFT within 10 % - and against glmdesk's fastest
   transformers CPU path (int4-wo weights, fused decode step) - goal >= 2x.
   TTFT: from the call to the first token (prefill included), in s.
2. Perplexity of ``benchmarks/data/public_domain.txt`` (first ``--tokens`` tokens)
   through the llama.cpp backend (its full cache, batched, and the window
   strategies token by token) and through transformers (the same GGUF
   dequantized to fp32): goal within 1 %; 4 sinks + 252 window within 10 % of full.

Usage::

    python benchmarks/llamacpp_backend.py [--rounds 3] [--new 200] [--tokens 2200]
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from pathlib import Path

import torch

from glmdesk.core.messages import ChatMessage
from glmdesk.core.settings import CacheSettings, LoadSettings, ParamsBox, SamplingParams
from glmdesk.engine.backends.llamacpp.backend import LlamaCppBackend
from glmdesk.engine.files.sources import embedded_gguf_path, embedded_model_folder
from glmdesk.engine.formats.prompt import PromptFormat, ReplyFilter

TEXT = Path(__file__).parent / "data" / "public_domain.txt"
MESSAGES = [ChatMessage("user", "Write a long story about a lighthouse keeper and a storm.")]


class NoStop(PromptFormat):
    """The same prompt ids with no stop id, so every run decodes exactly ``new`` tokens."""

    name = "no-stop"

    def __init__(self, ids: list[int]) -> None:
        self.ids = ids

    def encode(self, messages):
        return self.ids

    def reply_filter(self) -> ReplyFilter:
        return ReplyFilter()


def ours(model, new: int) -> tuple[float, float]:
    """(tokens/s, TTFT s) of one greedy answer through :func:`stream_answer`."""
    from glmdesk.engine.decode.generate import stream_answer

    last = None
    for chunk in stream_answer(
        model, MESSAGES, ParamsBox(SamplingParams(temperature=0.0, max_new_tokens=new))
    ):
        last = chunk
    assert last.n_generated == new, (last.n_generated, last.finish_reason, last.error)
    return last.tokens_per_s, last.ttft_s


def theirs(llm, prompt: list[int], new: int, bias: dict[int, float]) -> tuple[float, float]:
    """(tokens/s, TTFT s) of ``create_completion`` streaming ``new`` greedy tokens."""
    llm.reset()  # no prompt-prefix reuse: a full prefill, as ours
    start = time.perf_counter()
    first = None
    finish = None
    for chunk in llm.create_completion(
        prompt, max_tokens=new, temperature=0.0, repeat_penalty=1.0, logit_bias=bias, stream=True
    ):
        if first is None:
            first = time.perf_counter()
        finish = chunk["choices"][0]["finish_reason"] or finish
    assert finish == "length", finish  # all `new` tokens (the last chunk only carries the reason)
    return (new - 1) / (time.perf_counter() - first), first - start


def speed(rounds: int, new: int, threads: int) -> None:
    import llama_cpp

    from glmdesk.engine.backends.transformers.loader import load_model

    print(f"## 1. Speed: {new} greedy tokens, {threads} threads, {rounds} rounds after a warm-up")
    backend = LlamaCppBackend()
    backend.load(LoadSettings(engine="llamacpp", threads=threads))
    model = backend.model
    prompt = model.prompt_format.encode(MESSAGES)
    stops = model.prompt_format.stop_ids
    model.prompt_format = NoStop(prompt)
    int4 = load_model(LoadSettings(quantization="int4-wo", threads=threads))
    int4.prompt_format = NoStop(prompt)
    llm = llama_cpp.Llama(
        model_path=str(embedded_gguf_path()),
        n_ctx=model.context_length,
        n_batch=512,
        n_threads=threads,
        n_threads_batch=threads,
        verbose=False,
    )
    bias = {int(i): -1e9 for i in stops}
    runs = {
        "create_completion": lambda: theirs(llm, prompt, new, bias),
        "glmdesk llama.cpp": lambda: ours(model, new),
        "glmdesk int4-wo fused": lambda: ours(int4, new),
    }
    for run in runs.values():
        run()
    rows: dict[str, list[tuple[float, float]]] = {name: [] for name in runs}
    for i in range(rounds):
        for name in list(runs) if i % 2 == 0 else list(reversed(runs)):
            rows[name].append(runs[name]())
        print(
            f"round {i + 1}: "
            + "   ".join(
                f"{n} {rows[n][-1][0]:6.1f} tokens/s, TTFT {rows[n][-1][1] * 1000:5.1f} ms" for n in runs
            )
        )
    med = {
        n: (statistics.median(r[0] for r in v), statistics.median(r[1] for r in v)) for n, v in rows.items()
    }
    base, mine, torch_path = med["create_completion"], med["glmdesk llama.cpp"], med["glmdesk int4-wo fused"]
    print("| engine | tokens/s | TTFT ms |\n|---|---:|---:|")
    for n, (rate, ttft) in med.items():
        print(f"| {n} | {rate:.1f} | {ttft * 1000:.1f} |")
    ratio, ttft_ratio = mine[0] / base[0], mine[1] / base[1]
    print(
        f"ours / create_completion: tokens/s {ratio:.3f} (goal >= 0.95: {'yes' if ratio >= 0.95 else 'NO'}), "
        f"TTFT {ttft_ratio:.3f} (goal within 10%: {'yes' if ttft_ratio <= 1.10 else 'NO'})"
    )
    versus = mine[0] / torch_path[0]
    print(f"ours / transformers int4-wo fused: {versus:.2f}x (goal >= 2: {'yes' if versus >= 2 else 'NO'})")
    llm.close()
    backend.close()


def nll(logits: torch.Tensor, targets: torch.Tensor) -> float:
    """Summed negative log-likelihood of ``targets`` [n] under ``logits`` [n, vocab]."""
    return float(torch.nn.functional.cross_entropy(logits.float(), targets, reduction="sum"))


def perplexity(n_tokens: int, threads: int) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = embedded_model_folder()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    ids = tokenizer(TEXT.read_text(), return_tensors="pt").input_ids[0, :n_tokens]
    n = ids.numel()
    print(f"\n## 2. Perplexity: {TEXT.name}, {n} tokens")
    hf = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    torch.set_num_threads(threads)
    with torch.inference_mode():
        hf_logits = hf(ids.unsqueeze(0)).logits[0]
    ppl_hf = math.exp(nll(hf_logits[:-1], ids[1:]) / (n - 1))
    del hf, hf_logits

    backend = LlamaCppBackend()
    backend.load(LoadSettings(engine="llamacpp", threads=threads))
    model = backend.model
    rows = {}
    full = model.open_source(CacheSettings())
    t0 = time.perf_counter()
    rows["llama.cpp full (batched)"] = (
        nll(full.step_all(ids.tolist())[:-1], ids[1:]),
        time.perf_counter() - t0,
    )
    for name, cache in (
        ("llama.cpp window 256, no sinks", CacheSettings(strategy="sliding_window", window=256, sinks=0)),
        ("llama.cpp 4 sinks + 252 window", CacheSettings(strategy="sliding_window", window=252, sinks=4)),
    ):
        source = model.open_source(cache)
        t0 = time.perf_counter()
        logits, total, held = source.prefill(ids[:1].unsqueeze(0)), 0.0, 0
        for i in range(1, n):
            total -= float(torch.log_softmax(logits, dim=-1)[int(ids[i])])
            logits = source.step(int(ids[i]))
            held = max(held, source.stats().kv_bytes)
        rows[name] = (total, time.perf_counter() - t0, held)
    base = math.exp(rows["llama.cpp full (batched)"][0] / (n - 1))
    print(
        "| path | perplexity | vs transformers | vs llama.cpp full | peak KV MB | s |\n|---|---:|---:|---:|---:|---:|"
    )
    print(f"| transformers fp32 (GGUF dequantized) | {ppl_hf:.3f} | 1.000 | {ppl_hf / base:.3f} | | |")
    for name, row in rows.items():
        ppl = math.exp(row[0] / (n - 1))
        held = f"{row[2] / 1e6:.1f}" if len(row) > 2 else ""
        print(f"| {name} | {ppl:.3f} | {ppl / ppl_hf:.4f} | {ppl / base:.3f} | {held} | {row[1]:.1f} |")
    diff = abs(math.exp(rows["llama.cpp full (batched)"][0] / (n - 1)) / ppl_hf - 1)
    sinks = math.exp(rows["llama.cpp 4 sinks + 252 window"][0] / (n - 1)) / base
    print(f"llama.cpp vs transformers: {diff:.2%} apart (goal within 1%: {'yes' if diff <= 0.01 else 'NO'})")
    print(f"4 sinks + 252 window vs full: {sinks:.3f} (goal within 10%: {'yes' if sinks <= 1.10 else 'NO'})")
    backend.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds after the warm-up")
    parser.add_argument("--new", type=int, default=200, help="greedy tokens per run")
    parser.add_argument("--tokens", type=int, default=2200, help="tokens of the text for perplexity")
    parser.add_argument("--threads", type=int, default=0, help="threads for every engine (0: physical cores)")
    parser.add_argument("--skip-speed", action="store_true")
    parser.add_argument("--skip-perplexity", action="store_true")
    args = parser.parse_args()
    from glmdesk.engine.backends.llamacpp.backend import default_threads

    threads = args.threads or default_threads()
    if not args.skip_speed:
        speed(args.rounds, args.new, threads)
    if not args.skip_perplexity:
        perplexity(args.tokens, threads)


if __name__ == "__main__":
    main()
