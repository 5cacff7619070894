"""Decode speed on the CPU: our KV storage against transformers' ``torch.cat`` cache.

Issue 10's benchmark, CPU parts:

1. Tokens/s at 256, 2K and 8K tokens of context with the full cache (buffers
   that double, :class:`~glmdesk.engine.cache.FullCacheStrategy`) and with
   transformers' ``DynamicCache`` (``torch.cat`` per token); ratio 8K / 256
   (goal >= 0.8). One 8K prefill is shared: each context starts from a copy of
   its first L tokens. The two caches alternate token by token.
   A third column runs the app's default, the fused decode step
   (:mod:`glmdesk.engine.decode.decode_step`), on the same buffers.
2. CPU options: transformers' forward against the fused step and the static
   compiled step (:mod:`glmdesk.engine.decode.static_decode`, ``--compile``: about a minute
   per compiled variant on two cores), precision bf16, weight-only int8 / int4 linear
   layers (:mod:`glmdesk.engine.backends.transformers.weight_only`, torch's own kernels), one thread
   against the default: tokens/s, perplexity on
   ``benchmarks/data/public_domain.txt`` and how many greedy tokens match fp32.
3. llama.cpp on the same GGUF file, when ``llama-cpp-python`` is installed
   (otherwise skipped, with a line saying so), against ours in fp32 and int4-wo
   (and compiled with ``--compile``).

GPU parts of the issue (ChatGLM3-6B-shaped bf16/NF4/INT8 table) are not here.

Usage::

    GLMDESK_MODEL_CACHE=/tmp/glmdesk-models python benchmarks/decode_speed.py --new 32
"""

from __future__ import annotations

import argparse
import copy
import importlib.util
import math
import time
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, DynamicCache

from glmdesk.core.settings import CacheSettings
from glmdesk.engine.backends.transformers.weight_only import quantize_linears
from glmdesk.engine.cache import FullCacheStrategy, kv_bytes_per_token
from glmdesk.engine.cache.base import model_dtype
from glmdesk.engine.decode.decode_step import FusedDecodeStep, fuse_projections
from glmdesk.engine.decode.static_decode import build_static_step
from glmdesk.engine.files.sources import embedded_gguf_path, embedded_model_folder

TEXT = Path(__file__).parent / "data" / "public_domain.txt"
CONTEXTS = (256, 2048, 8192)


def long_ids(tokenizer, n: int) -> torch.Tensor:
    """``[1, n]`` ids: the benchmark text repeated."""
    ids = tokenizer(TEXT.read_text(), return_tensors="pt").input_ids[0]
    return ids.repeat(n // ids.numel() + 1)[:n].unsqueeze(0)


def ours_from(prefilled: FullCacheStrategy, length: int, headroom: int, model=None) -> FullCacheStrategy:
    """A fresh full strategy (for ``model``, default the prefilled one's) holding the
    first ``length`` tokens of ``prefilled``.

    Its buffers have room for ``headroom`` more tokens: the table measures steady
    decoding, not the one doubling a real chat pays when it crosses a power of two
    (amortised: one copy of the held tokens per doubling).
    """
    strategy = full_strategy(model or prefilled.model, prefilled.settings)
    for new, old in zip(strategy.cache.layers, prefilled.cache.layers, strict=True):
        new.lazy_initialization(old.keys, old.values)
        new.reserve(length + headroom)
        new.keys[:, :, :length].copy_(old.keys[:, :, :length])
        new.values[:, :, :length].copy_(old.values[:, :, :length])
        new.length = length
    strategy.tokens_seen = length
    return strategy


def full_strategy(model, settings: CacheSettings) -> FullCacheStrategy:
    """A full-cache strategy decoding with the step :func:`variant_model` chose for ``model``."""
    strategy = FullCacheStrategy(model, settings)
    strategy.decode_step = getattr(model, "bench_step", None)
    return strategy


def dynamic_from(prefilled: FullCacheStrategy, length: int) -> DynamicCache:
    data = [
        (layer.keys[:, :, :length].clone(), layer.values[:, :, :length].clone())
        for layer in prefilled.cache.layers
    ]
    return DynamicCache(data)


@torch.inference_mode()
def dynamic_step(model, cache: DynamicCache, token: int, position: int) -> torch.Tensor:
    out = model(
        input_ids=torch.tensor([[token]]),
        position_ids=torch.tensor([[position]]),
        cache=cache,
        use_cache=True,
    )
    return out.logits[0, -1]


def context_table(model, tokenizer, new: int) -> None:
    print(f"\n## 1. Full cache, tokens/s by context ({new} greedy tokens each, caches alternating)")
    started = time.perf_counter()
    prefilled = full_strategy(model, CacheSettings(prefill_chunk=512))
    prefilled.prefill(long_ids(tokenizer, max(CONTEXTS)))
    print(f"8K prefill in chunks of 512: {time.perf_counter() - started:.1f} s")
    fused = variant_model(model, "fp32", None, "fused")
    speeds = {}
    for length in CONTEXTS:
        ours = ours_from(prefilled, length, new + 1)
        theirs = dynamic_from(prefilled, length)
        ours_fused = ours_from(prefilled, length, new + 1, fused)
        tokens = [13, 13, 13]  # "." for all, then greedy
        spent = [0.0, 0.0, 0.0]
        for i in range(new):
            for k in (0, 1, 2) if i % 2 else (2, 1, 0):
                t0 = time.perf_counter()
                if k == 0:
                    logits = ours.step(tokens[0])
                elif k == 1:
                    logits = dynamic_step(model, theirs, tokens[1], length + i)
                else:
                    logits = ours_fused.step(tokens[2])
                tokens[k] = int(logits.argmax())
                spent[k] += time.perf_counter() - t0
        speeds[length] = tuple(new / t for t in spent)
        del ours, theirs, ours_fused
    prefilled.release()
    print(
        "| context | ours (doubling buffers) tok/s | transformers DynamicCache (torch.cat) tok/s "
        "| ours / theirs | ours + fused step (app default) tok/s |"
    )
    print("|--------:|---:|---:|---:|---:|")
    for length, (a, b, c) in speeds.items():
        print(f"| {length:7d} | {a:.1f} | {b:.1f} | {a / b:.2f} | {c:.1f} |")
    lo, hi = CONTEXTS[0], CONTEXTS[-1]
    print(
        f"ratio {hi} / {lo}: ours {speeds[hi][0] / speeds[lo][0]:.2f}, "
        f"DynamicCache {speeds[hi][1] / speeds[lo][1]:.2f}, "
        f"ours + fused step {speeds[hi][2] / speeds[lo][2]:.2f} (goal >= 0.8)"
    )
    # A decode step reads every weight once and every held key and value once: on a
    # memory-bound CPU its time is at least (weights + KV) / bandwidth.
    weights = sum(
        m.weight.numel() * m.weight.element_size() for m in model.modules() if isinstance(m, torch.nn.Linear)
    )
    kv = kv_bytes_per_token(model.config, model_dtype(model))
    bound = (weights + kv * lo) / (weights + kv * hi)
    print(
        f"memory-traffic bound on that ratio: (weights {weights / 2**20:.0f} MiB + KV at {lo}) / "
        f"(weights + KV at {hi}, {kv * hi / 2**20:.0f} MiB) = {bound:.2f}; "
        f"ours reaches {speeds[hi][0] / speeds[lo][0] / bound:.0%} of it"
    )


@torch.inference_mode()
def decode_speed(model, ids: torch.Tensor, new: int) -> float:
    """Greedy tokens/s after a prompt, full cache."""
    strategy = full_strategy(model, CacheSettings(prefill_chunk=512))
    logits = strategy.prefill(ids)
    started = time.perf_counter()
    for _ in range(new):
        logits = strategy.step(int(logits.argmax()))
    return new / (time.perf_counter() - started)


@torch.inference_mode()
def perplexity(model, ids: torch.Tensor) -> float:
    logits = model(input_ids=ids).logits[0, :-1].float()
    return math.exp(torch.nn.functional.cross_entropy(logits, ids[0, 1:]).item())


def alternate(variants: dict, ids: torch.Tensor, new: int, rounds: int) -> dict:
    """Median-free mean tokens/s per variant, runs alternating ``rounds`` times."""
    totals = dict.fromkeys(variants, 0.0)
    for _ in range(rounds):
        for name, run in variants.items():
            totals[name] += run(ids, new)
    return {name: total / rounds for name, total in totals.items()}


def variant_model(model, precision: str, scheme: str | None, step: str = "transformers"):
    """A copy of ``model`` in ``precision`` with ``scheme`` weight-only layers (or as is),
    decoding with ``step``: ``transformers`` (its forward), ``fused`` or ``compiled`` (the
    static path, :func:`~glmdesk.engine.decode.static_decode.build_static_step`)."""
    if precision == "fp32" and scheme is None and step == "transformers":
        return model
    variant = copy.deepcopy(model).to(torch.bfloat16 if precision == "bf16" else torch.float32)
    if step != "transformers":
        fuse_projections(variant)
    if scheme is not None:
        quantize_linears(variant, scheme)
    if step != "transformers":
        variant.bench_step = FusedDecodeStep(variant)
    if step == "compiled":
        variant.bench_step = build_static_step(variant)
        print(
            f"compiled the static decode step ({precision}, {scheme or 'no quantization'}) in "
            f"{variant.bench_step.compile_seconds:.0f} s"
        )
    return variant


def cpu_options(model, tokenizer, new: int, compile_too: bool) -> None:
    print(f"\n## 2. CPU options at 256 tokens of context ({new} greedy tokens, 2 alternating rounds)")
    ids = long_ids(tokenizer, 256)
    threads = torch.get_num_threads()

    def run_with(variant, n_threads=threads):
        def run(ids, new):
            torch.set_num_threads(n_threads)
            try:
                return decode_speed(variant, ids, new)
            finally:
                torch.set_num_threads(threads)

        return run

    fused = variant_model(model, "fp32", None, "fused")
    models = {
        f"fp32, transformers' forward, {threads} threads": model,
        "fp32, fused step (default)": fused,
        "bf16, fused step": variant_model(model, "bf16", None, "fused"),
        "int8-wo, fused step": variant_model(model, "fp32", "int8-wo", "fused"),
        "int4-wo (groups of 32), fused step": variant_model(model, "fp32", "int4-wo", "fused"),
        "int4-wo, transformers' forward": variant_model(model, "fp32", "int4-wo"),
    }
    if compile_too:
        models["fp32, static compiled step"] = variant_model(model, "fp32", None, "compiled")
        models["int4-wo, static compiled step"] = variant_model(model, "fp32", "int4-wo", "compiled")
    variants = {name: run_with(m) for name, m in models.items()}
    if threads > 1:
        variants["fp32, fused step, 1 thread"] = run_with(fused, 1)
    speeds = alternate(variants, ids, new, rounds=2)
    base = next(iter(speeds.values()))
    text = long_ids(tokenizer, 1024)
    prompt = ids[:, :64]
    reference = decode_tokens(model, prompt, 32)
    base_ppl = perplexity(model, text)
    print("| variant | tokens/s | vs default | perplexity (1,024 tokens) | greedy vs fp32 (32 tokens) |")
    print("|---|---:|---:|---:|---:|")
    for name, speed in speeds.items():
        variant = models.get(name)
        if variant is None:
            print(f"| {name} | {speed:.1f} | {speed / base:.2f} | same weights | same weights |")
            continue
        ppl = perplexity(variant, text)
        tokens = decode_tokens(variant, prompt, 32)
        same = next((i for i, (a, b) in enumerate(zip(tokens, reference, strict=True)) if a != b), 32)
        print(
            f"| {name} | {speed:.1f} | {speed / base:.2f} | {ppl:.3f} ({ppl / base_ppl - 1:+.1%}) | "
            f"{same} before the first difference |"
        )


@torch.inference_mode()
def decode_tokens(model, ids: torch.Tensor, new: int) -> list[int]:
    strategy = full_strategy(model, CacheSettings())
    logits = strategy.prefill(ids)
    out = []
    for _ in range(new):
        out.append(int(logits.argmax()))
        logits = strategy.step(out[-1])
    return out


def llama_cpp_row(pairs: int = 3, new: int = 200, compile_too: bool = False) -> None:
    """Our decode loop against llama.cpp on the same Q4_1 GGUF file.

    Ours runs twice: the default load (fp32 weights dequantized from the GGUF) and
    ``int4-wo`` (the same Q4_1 grid in torch's int4 kernel). Same prompt ids, ``new``
    greedy tokens each (end-of-sequence ignored by all), alternating runs; decode
    tokens/s after the first token.
    """
    print("\n## 3. llama.cpp on the same GGUF")
    if importlib.util.find_spec("llama_cpp") is None:
        print(
            "skipped: llama-cpp-python is not installed (pip install 'glmdesk[llamacpp]'; compiles ~10 min)"
        )
        return
    import llama_cpp

    from glmdesk.core.messages import ChatMessage
    from glmdesk.core.settings import LoadSettings, ParamsBox, SamplingParams
    from glmdesk.engine.backends.transformers.loader import load_model
    from glmdesk.engine.decode.generate import stream_chat

    messages = [ChatMessage("user", "Write a long story about a lighthouse keeper and a storm.")]
    loads = {
        "fp32, transformers' forward": load_model(LoadSettings(fused_decode=False)),
        "fp32, fused step": load_model(LoadSettings()),
        "int4-wo, fused step": load_model(LoadSettings(quantization="int4-wo")),
    }
    if compile_too:
        loads["int4-wo, static compiled step"] = load_model(
            LoadSettings(quantization="int4-wo", compile_decode=True)
        )
    prompt = loads["fp32, fused step"].prompt_format.encode(messages)

    class NoStop(type(loads["fp32, fused step"].prompt_format)):
        """The model's own format with no stop ids and the same prompt every time."""

        stop_ids = frozenset()

        def encode(self, *_args, **_kwargs):
            return prompt

    for loaded in loads.values():
        no_stop = NoStop.__new__(NoStop)
        no_stop.__dict__.update(loaded.prompt_format.__dict__)
        loaded.prompt_format = no_stop
    threads = torch.get_num_threads()
    llm = llama_cpp.Llama(
        model_path=str(embedded_gguf_path()), n_ctx=1024, n_threads=threads, verbose=False, seed=0
    )

    def ours(loaded) -> float:
        last = None
        for chunk in stream_chat(
            loaded, messages, ParamsBox(SamplingParams(temperature=0.0, max_new_tokens=new))
        ):
            last = chunk
        return last.tokens_per_s

    def theirs() -> float:
        llm.reset()
        first = None
        count = 0
        for _token in llm.generate(prompt, top_k=1, top_p=1.0, temp=0.0, repeat_penalty=1.0, reset=True):
            count += 1
            if count == 1:
                first = time.perf_counter()
            if count == new:
                break
        return (count - 1) / (time.perf_counter() - first)

    runs = {"llama.cpp": theirs, **{name: (lambda lm=lm: ours(lm)) for name, lm in loads.items()}}
    for run in runs.values():
        run()  # warm-up
    rows: dict[str, list[float]] = {name: [] for name in runs}
    for i in range(pairs):
        order = list(runs) if i % 2 == 0 else list(reversed(runs))
        for name in order:
            rows[name].append(runs[name]())
        print(f"round {i + 1}: " + "   ".join(f"{name} {rows[name][-1]:6.2f}" for name in runs) + " tokens/s")
    median = {name: sorted(values)[len(values) // 2] for name, values in rows.items()}
    base = median["llama.cpp"]
    print(f"median, {threads} threads, {new} greedy tokens: llama.cpp (Q4_1 GGUF) {base:.2f} tokens/s")
    for name in loads:
        print(f"  glmdesk {name}: {median[name]:.2f} tokens/s, ratio {median[name] / base:.3f} (goal >= 0.5)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--new", type=int, default=32, help="tokens decoded per measurement")
    parser.add_argument(
        "--compile", action="store_true", help="also measure the compiled decode step (a minute per variant)"
    )
    parser.add_argument("--skip-contexts", action="store_true", help="skip the 256/2K/8K table")
    parser.add_argument("--skip-options", action="store_true", help="skip the CPU-options table")
    parser.add_argument("--only-llama-cpp", action="store_true", help="only the llama.cpp comparison")
    args = parser.parse_args()
    if args.only_llama_cpp:
        llama_cpp_row(compile_too=args.compile)
        return
    folder = embedded_model_folder()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    print(f"SmolLM2-135M-Instruct fp32 on CPU, torch {torch.__version__}, {torch.get_num_threads()} threads")
    if not args.skip_contexts:
        context_table(model, tokenizer, args.new)
    if not args.skip_options:
        cpu_options(model, tokenizer, args.new, args.compile)
    llama_cpp_row(compile_too=args.compile)


if __name__ == "__main__":
    main()
