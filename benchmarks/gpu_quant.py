"""Issue 29's GPU table: glmdesk's static decode path, torchao and bitsandbytes weights.

One run, side by side, for each model shape (ChatGLM3-6B, GLM-4-9B; random weights)
and each context (1K / 8K / 32K / 128K by default), one growing sequence per row:

- **bf16**: glmdesk's eager loop, glmdesk's static path
  (``glmdesk.engine.decode.static_decode.build_static_step``: CUDA graphs; skipped with a
  line when this checkout has no such module) and transformers' own ``generate``
  with ``StaticCache`` compiled (``reduce-overhead``), the ratio static / theirs.
- **weights**: torchao int8 / int4 (tinygemm, groups of 64) / int4 with HQQ's
  parameters, bitsandbytes LLM.int8 and NF4, each on the static path when there is
  one, else eager; ratio to bf16 on the same path.
- **KV strategies** on the static path: sinks + window and dynamic, ratio to the
  full cache at the same context (goal >= 0.9).
- per row: tokens/s, the share of the copy bound (``bandwidth / (weights + KV
  bytes)``), peak memory torch allocated (MiB), compile and capture time (s) and
  Dynamo recompiles after warm-up (goal 0) and CUDA graphs recorded after it; TTFT of 8K and 32K prompts per weights.

Perplexity beside speed: random weights say nothing about quality, so each weight
scheme is also applied to the embedded model (SmolLM2-135M, real weights) and its
perplexity on ``benchmarks/data/public_domain.txt`` printed
(:func:`benchmarks.decode_speed.perplexity`); the last lines name, for 8 and 4 bits,
the fastest scheme within 2% of bf16's perplexity: what "8-bit" / "4-bit" should
mean on CUDA (:data:`glmdesk.core.settings.QUANTIZATION_SCHEMES`).

``--smoke`` runs all of it on the CPU with tiny shapes (figures mean nothing).
"""

from __future__ import annotations

import datetime
import gc
import importlib.util
import math
import time

import torch

from benchmarks._gpu_common import (
    CHATGLM3_6B,
    TINY,
    copy_bandwidth,
    make_config,
    new_model,
    quantize,
    static_graph_rate,
    sync,
)
from glmdesk.core.settings import CacheSettings
from glmdesk.engine.backends.transformers import torchao_quant
from glmdesk.engine.cache import kv_bytes_per_token, make_cache_strategy

#: GLM-4-9B: ChatGLM3-6B's layers with 40 of them and a 151552-token vocabulary.
GLM4_9B = {**CHATGLM3_6B, "vocab_size": 151552, "num_hidden_layers": 40}
#: Weight rows: name -> (bits, how).
KINDS = {
    "bf16": (16, None),
    "torchao int8": (8, "torchao-int8"),
    "torchao int4 g64": (4, "torchao-int4"),
    "torchao int4 g64 HQQ": (4, "torchao-int4-hqq"),
    "bnb LLM.int8": (8, "int8"),
    "bnb NF4": (4, "nf4"),
}


def static_path():
    """``glmdesk.engine.decode.static_decode.build_static_step``, or ``None`` when absent."""
    if importlib.util.find_spec("glmdesk.engine.decode.static_decode") is None:
        return None
    from glmdesk.engine.decode import static_decode

    return getattr(static_decode, "build_static_step", None)


def apply_kind(model, kind: str, device: torch.device):
    """Quantize ``model`` (bf16, on ``device``) in place for the row ``kind``; the fused
    projections come first on the static path (``fuse -> quantize -> build``)."""
    _, how = KINDS[kind]
    if how in torchao_quant.SCHEMES:
        torchao_quant.quantize_model(model, how)
    elif how in ("int8", "nf4"):
        quantize(model, how, device)
    return model


def prepare(model, kind: str, device: torch.device, static: bool):
    """``(model, step, compile s, note)``: fused and quantized, with the static step
    built when ``static`` (``None`` and a note when it cannot be)."""
    from glmdesk.engine.decode.decode_step import fuse_projections, unsupported_reason

    build = static_path() if static else None
    if build is not None and unsupported_reason(model) is None:
        fuse_projections(model)
    apply_kind(model, kind, device)
    if build is None:
        return model, None, 0.0, "eager"
    started = time.perf_counter()
    try:
        step = build(model)
    except (ValueError, RuntimeError) as exc:
        return model, None, 0.0, f"eager ({exc.__class__.__name__}: {str(exc).splitlines()[0][:80]})"
    return model, step, getattr(step, "compile_seconds", time.perf_counter() - started), "static"


@torch.inference_mode()
def growing_rows(model, step, settings: CacheSettings, contexts: list[int], new: int) -> list[dict]:
    """One growing sequence: prefill to each context in turn, decode ``new`` greedy
    tokens there. Per context: tokens/s, KV bytes held, peak MiB since the start."""
    device = model.device
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    strategy = make_cache_strategy(model, settings, step)
    generator = torch.Generator(device="cpu").manual_seed(0)
    rows, done = [], 0
    for context in contexts:
        ids = torch.randint(0, model.config.vocab_size, (1, context - done), generator=generator)
        token = int(strategy.prefill(ids.to(device)).argmax())
        for _ in range(3):  # warm-up at this length (a new bucket captures here)
            token = int(strategy.step(token).argmax())
        sync(device)
        t0 = time.perf_counter()
        for _ in range(new):
            token = int(strategy.step(token).argmax())
        sync(device)
        rate = new / (time.perf_counter() - t0)
        done = context + new + 3
        peak = torch.cuda.max_memory_allocated(device) / 2**20 if device.type == "cuda" else float("nan")
        rows.append({"context": context, "rate": rate, "kv": strategy.stats().kv_bytes, "peak": peak})
    strategy.release()
    return rows


@torch.inference_mode()
def ttft(model, step, settings: CacheSettings, context: int) -> float:
    """Seconds from a fresh ``context``-token prompt to its first token (greedy)."""
    strategy = make_cache_strategy(model, settings, step)
    ids = torch.randint(0, model.config.vocab_size, (1, context)).to(model.device)
    sync(model.device)
    t0 = time.perf_counter()
    int(strategy.prefill(ids).argmax())
    sync(model.device)
    seconds = time.perf_counter() - t0
    strategy.release()
    return seconds


def recompiles(step) -> str | None:
    """``recompiles / graphs``: Dynamo recompiles of the static step since its warm-up
    (goal 0) and the CUDA graphs recorded since then (one per bucket or slab size first
    used; none for buckets used before), ``None`` for eager."""
    if step is None:
        return None
    count = getattr(step, "recompiles", None)
    if not callable(count):
        return None
    recorded = getattr(step, "recordings", None)
    return f"{count()} / {recorded() if callable(recorded) else '-'}"


def free(device: torch.device) -> None:
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()


# --- perplexity beside speed -------------------------------------------------------


@torch.inference_mode()
def perplexities(device: torch.device, kinds: list[str], tokens: int) -> dict[str, float]:
    """Perplexity of the embedded model (real weights, bf16 on ``device``) on the
    benchmark text under each weight row; ``nan`` where a row cannot run here."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from benchmarks.decode_speed import long_ids, perplexity
    from glmdesk.engine.files.sources import embedded_model_folder

    folder = embedded_model_folder()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    text = long_ids(tokenizer, tokens).to(device)
    out = {}
    for kind in kinds:
        model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.bfloat16).to(device).eval()
        try:
            apply_kind(model, kind, device)
            out[kind] = perplexity(model, text)
        except Exception as exc:  # bitsandbytes without its native library, say
            print(f"perplexity of {kind} not measured: {exc.__class__.__name__}: {str(exc)[:120]}")
            out[kind] = float("nan")
        del model
        free(device)
    return out


def decide(speeds: dict[str, float], ppl: dict[str, float], limit: float = 0.02) -> dict[int, str]:
    """For 8 and 4 bits: the fastest row (``speeds``: tokens/s) whose perplexity is
    within ``limit`` of bf16's; ``"none within 2%"`` when no row is (issue 29's rule)."""
    base = ppl.get("bf16", float("nan"))
    chosen = {}
    for bits in (8, 4):
        fits = [
            kind
            for kind, (b, _) in KINDS.items()
            if b == bits and kind in speeds and not math.isnan(ppl.get(kind, math.nan))
            if ppl[kind] <= base * (1 + limit)
        ]
        chosen[bits] = max(fits, key=speeds.__getitem__) if fits else f"none within {limit:.0%}"
    return chosen


def weights_bytes(model) -> int:
    """Bytes one decode step reads from weights (all but the input embedding; torchao's
    subclasses are counted by their packed data and scales)."""
    embedding = model.get_input_embeddings().weight
    total = 0
    for tensor in (*model.parameters(), *model.buffers()):
        if tensor is embedding:
            continue
        inner = getattr(tensor, "__tensor_flatten__", None)
        if callable(inner):
            names, _ = inner()
            total += sum(getattr(tensor, n).numel() * getattr(tensor, n).element_size() for n in names)
        else:
            total += tensor.numel() * tensor.element_size()
    return total


def bound_rate(bandwidth: float, model, context: int) -> float:
    """Copy-bandwidth bound on tokens/s at ``context`` tokens (bf16 KV)."""
    kv = kv_bytes_per_token(model.config, torch.bfloat16)
    return bandwidth / (weights_bytes(model) + kv * context)


# --- the table ---------------------------------------------------------------------


def strategy_settings(smoke: bool) -> dict[str, CacheSettings]:
    """The KV strategies beside the full cache (window and budget scaled down in smoke)."""
    if smoke:
        return {
            "sinks 4 + window 64": CacheSettings(strategy="sliding_window", sinks=4, window=64),
            "dynamic, 0.05 MiB": CacheSettings(strategy="dynamic", sinks=4, window=64, budget_mib=0.05),
        }
    return {
        "sinks 4 + window 16K": CacheSettings(strategy="sliding_window", sinks=4, window=16384),
        "dynamic, 2 GiB": CacheSettings(strategy="dynamic", sinks=4, window=16384, budget_mib=2048),
    }


def tokens_label(tokens: int) -> str:
    """``8K`` for 8192 tokens, ``256`` for 256."""
    return f"{tokens // 1024}K" if tokens >= 1024 else str(tokens)


def dash(value) -> str:
    """``-`` for a figure that does not apply (``None``)."""
    return "-" if value is None else str(value)


def print_rows(label: str, rows: list[dict], base: dict, bound, extra: str) -> None:
    for row in rows:
        ratio = row["rate"] / base[row["context"]] if row["context"] in base else float("nan")
        limit = bound(row["context"])
        print(
            f"| {label} | {row['context']} | {row['rate']:.1f} | {ratio:.2f} | {row['rate'] / limit:.0%} "
            f"| {dash(None if math.isnan(row['peak']) else round(row['peak']))} | {extra} |",
            flush=True,
        )


def shape_rows(name: str, config, device, bandwidth: float, args) -> dict[str, float]:
    """Every row of one shape; returns the static (or eager) tokens/s per weight row at
    the first context, for :func:`decide`."""
    settings = CacheSettings(prefill_chunk=2048)
    has_static = static_path() is not None
    speeds: dict[str, float] = {}
    base: dict[str, dict[int, float]] = {}
    for kind in args.kinds:
        paths = (
            ["eager", "static"] if kind == "bf16" and has_static else ["static" if has_static else "eager"]
        )
        for path in paths:
            model, step, compile_s, how = prepare(new_model(config, device), kind, device, path == "static")
            rows = growing_rows(model, step, settings, args.contexts, args.new)
            base.setdefault(how.split(" ")[0], {r["context"]: r["rate"] for r in rows})
            times = ", ".join(f"{tokens_label(c)} {ttft(model, step, settings, c):.2f} s" for c in args.ttft)
            extra = f"{compile_s:.1f} | {dash(recompiles(step))} | {times} | {how}"
            print_rows(
                f"{name} | {kind}",
                rows,
                base[how.split(" ")[0]],
                lambda c, m=model: bound_rate(bandwidth, m, c),
                extra,
            )
            if path == paths[-1]:
                speeds[kind] = rows[0]["rate"]
            if kind == "bf16" and path == paths[-1] and args.strategies:
                full = {r["context"]: r["rate"] for r in rows}
                for label, strategy in strategy_settings(args.smoke).items():
                    srows = growing_rows(model, step, strategy, args.contexts, args.new)
                    extra = f"{compile_s:.1f} | {dash(recompiles(step))} | - | {how}, vs full cache"
                    print_rows(
                        f"{name} | bf16, {label}",
                        srows,
                        full,
                        lambda c, m=model: bound_rate(bandwidth, m, c),
                        extra,
                    )
            if kind == "bf16" and path == paths[-1] and args.reference:
                for context in args.contexts:
                    theirs = static_graph_rate(model, context, args.new)
                    ours = base[how.split(" ")[0]][context]
                    print(
                        f"| {name} | bf16, transformers StaticCache compiled | {context} | {theirs:.1f} "
                        f"| ours / theirs {ours / theirs:.2f} | | | | | | reduce-overhead |",
                        flush=True,
                    )
            del model, step
            free(device)
    return speeds


def table_main(args) -> None:
    """``gpu_decode.py --table`` / ``--smoke``: pick the device and shapes, then :func:`run_table`."""
    shapes = {"ChatGLM3-6B": CHATGLM3_6B, "GLM-4-9B": GLM4_9B}
    if args.smoke:
        device = torch.device("cpu")
        shapes = {"tiny ChatGLM3": TINY, "tiny GLM-4": {**TINY, "num_hidden_layers": 3, "vocab_size": 1024}}
        args.contexts, args.ttft, args.new = [64, 256], [256], min(args.new, 8)
        args.ppl_tokens = min(args.ppl_tokens, 256)
    elif torch.cuda.is_available():
        device = torch.device("cuda")
    else:
        print("skipped: no CUDA device (--smoke checks the script on the CPU)")
        return
    args.kinds = args.table_kinds
    card = (
        torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU (--smoke, figures mean nothing)"
    )
    bandwidth = copy_bandwidth(device, 64 if args.smoke else 1024)
    print(f"{datetime.date.today()}, {card}, torch {torch.__version__}")
    print(f"measured copy bandwidth {bandwidth / 1e9:.0f} GB/s; {args.new} greedy tokens per point")
    torch.manual_seed(0)
    run_table(
        args, device, bandwidth, {k: v for k, v in shapes.items() if not args.shapes or k in args.shapes}
    )


def run_table(args, device, bandwidth: float, shapes: dict) -> None:
    """Print the whole table (see the module docstring) and the 8-bit / 4-bit choice."""
    build = static_path()
    print(
        "static path: glmdesk.engine.decode.static_decode.build_static_step"
        if build is not None
        else "static path: not in this checkout (glmdesk.engine.decode.static_decode missing); rows run eager"
    )
    print(f"torchao {_version('torchao')}, bitsandbytes {_version('bitsandbytes')}")
    print(
        "| shape | weights | context | tokens/s | vs bf16 (same path) or full cache | of copy bound "
        "| peak MiB | compile + capture s | recompiles / CUDA graphs recorded | TTFT | path |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|")
    speeds: dict[str, float] = {}
    for i, (name, shape) in enumerate(shapes.items()):
        config = make_config(shape, max([*args.contexts, *args.ttft]) + args.new * len(args.contexts) + 64)
        got = shape_rows(name, config, device, bandwidth, args)
        speeds = speeds if i else got  # the first shape's figures decide
    if len(args.kinds) < 2:
        return  # perplexity compares weight rows
    ppl = perplexities(device, args.kinds, args.ppl_tokens)
    base = ppl.get("bf16", float("nan"))
    print(
        f"\nperplexity of the embedded model (SmolLM2-135M, real weights) on {args.ppl_tokens} tokens of the text:"
    )
    for kind, value in ppl.items():
        print(
            f"  {kind}: {value:.3f} ({value / base - 1:+.2%} vs bf16), {speeds.get(kind, float('nan')):.1f} tokens/s"
        )
    for bits, kind in decide(speeds, ppl).items():
        print(
            f"{bits}-bit on CUDA by these figures: {kind} (QUANTIZATION_SCHEMES names what Open model uses)"
        )


def _version(name: str) -> str:
    if importlib.util.find_spec(name) is None:
        return "not installed"
    from importlib.metadata import version

    return version(name)
