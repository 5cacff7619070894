"""GPU decode speed of a ChatGLM3-6B-shaped model against the memory-bandwidth bound.

Issue 10's GPU benchmark. A ``GlmForCausalLM`` with ChatGLM3-6B's shape (28 layers,
hidden 4096, 32 heads in 2 KV groups, head dim 128, FFN 13696, vocabulary 65024;
the shape glmdesk's converter gives the original checkpoint) and random weights, in
bf16, bitsandbytes NF4 and bitsandbytes INT8. For each, decode tokens/s with the
full cache (:class:`~glmdesk.engine.cache.FullCacheStrategy`, buffers preallocated
to the longest context) at 1K, 8K and 32K tokens of context, against the bound

    tokens/s <= copy bandwidth / (bytes of weights read per token + KV bytes held)

where the copy bandwidth is measured in the same run (a 1 GiB device-to-device
copy: read + write bytes / time). Goal: bf16 at 70% of the bound or better.

``--cuda-graph`` also runs bf16 with the static cache (whole buffer, fixed shapes)
under ``torch.compile(mode="reduce-overhead")`` (CUDA graphs).

Run on a CUDA machine (a few minutes on one large GPU)::

    python benchmarks/gpu_decode.py [--contexts 1024 8192 32768] [--new 32] [--cuda-graph]

``--tiny`` runs the same code on a small random model on the CPU (bitsandbytes'
CPU backend), to check the script itself; its figures mean nothing.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import time

import torch
from torch import nn
from transformers import GlmConfig, GlmForCausalLM

from glmdesk.core.settings import CacheSettings
from glmdesk.engine.cache import FullCacheStrategy, kv_bytes_per_token

CHATGLM3_6B = {
    "vocab_size": 65024,
    "hidden_size": 4096,
    "intermediate_size": 13696,
    "num_hidden_layers": 28,
    "num_attention_heads": 32,
    "num_key_value_heads": 2,
    "head_dim": 128,
    "attention_bias": True,
    "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5},
}
TINY = {
    **CHATGLM3_6B,
    "vocab_size": 512,
    "hidden_size": 256,
    "intermediate_size": 512,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "head_dim": 64,
}


def make_config(shape: dict, max_tokens: int) -> GlmConfig:
    return GlmConfig(**shape, max_position_embeddings=max_tokens, tie_word_embeddings=False, pad_token_id=0)


def copy_bandwidth(device: torch.device, mib: int) -> float:
    """Device copy bandwidth in bytes/s (read + write), best of 5."""
    src = torch.empty(mib * 2**20, dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    best = float("inf")
    for _ in range(5):
        sync(device)
        t0 = time.perf_counter()
        dst.copy_(src)
        sync(device)
        best = min(best, time.perf_counter() - t0)
    return 2 * src.numel() / best


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def quantize(model: nn.Module, kind: str, device: torch.device) -> nn.Module:
    """Swap every decoder ``nn.Linear`` for bitsandbytes NF4 or INT8 (the output layer stays bf16,
    as transformers' ``BitsAndBytesConfig`` leaves ``lm_head``)."""
    import bitsandbytes as bnb

    for module in list(model.model.modules()):
        for name, child in list(module.named_children()):
            if not isinstance(child, nn.Linear):
                continue
            weight = child.weight.detach()
            if kind == "nf4":
                layer = bnb.nn.Linear4bit(
                    child.in_features,
                    child.out_features,
                    bias=child.bias is not None,
                    compute_dtype=torch.bfloat16,
                    quant_type="nf4",
                )
                layer.weight = bnb.nn.Params4bit(weight, requires_grad=False, quant_type="nf4")
            else:
                layer = bnb.nn.Linear8bitLt(
                    child.in_features, child.out_features, bias=child.bias is not None, has_fp16_weights=False
                )
                layer.weight = bnb.nn.Int8Params(weight, requires_grad=False, has_fp16_weights=False)
            if child.bias is not None:
                layer.bias = nn.Parameter(child.bias.detach(), requires_grad=False)
            setattr(module, name, layer.to(device))  # quantizes on the way to the device
            del child
    return model


def bytes_read_per_token(model: nn.Module) -> int:
    """Bytes of weights one decode step reads: everything but the input embedding
    (one row of it is read)."""
    embedding = model.get_input_embeddings().weight
    total = 0
    for tensor in (*model.parameters(), *model.buffers()):
        if tensor is not embedding:
            total += tensor.numel() * tensor.element_size()
    return total


@torch.inference_mode()
def decode_rate(model, settings, context: int, new: int, max_tokens: int, static: bool) -> float:
    """Greedy decode tokens/s after ``context`` random prompt tokens (3 warm-up steps first)."""
    device = model.device
    strategy = FullCacheStrategy(model, settings, static=static, max_tokens=max_tokens)
    ids = torch.randint(0, model.config.vocab_size, (1, context), device=device)
    token = int(strategy.prefill(ids).argmax())
    for _ in range(3):  # warm-up (and graph capture)
        token = int(strategy.step(token).argmax())
    sync(device)
    t0 = time.perf_counter()
    for _ in range(new):
        token = int(strategy.step(token).argmax())
    sync(device)
    rate = new / (time.perf_counter() - t0)
    strategy.release()
    return rate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--contexts", type=int, nargs="+", default=[1024, 8192, 32768])
    parser.add_argument("--new", type=int, default=32, help="tokens decoded per measurement")
    parser.add_argument(
        "--kinds", nargs="+", default=["bf16", "nf4", "int8"], choices=["bf16", "nf4", "int8"]
    )
    parser.add_argument("--cuda-graph", action="store_true", help="also bf16 under CUDA graphs")
    parser.add_argument("--tiny", action="store_true", help="a small model on the CPU (checks the script)")
    args = parser.parse_args()

    if args.tiny:
        device, shape = torch.device("cpu"), TINY
        args.contexts = sorted({min(c, 256) for c in args.contexts} | {64})
    elif torch.cuda.is_available():
        device, shape = torch.device("cuda"), CHATGLM3_6B
    else:
        print("skipped: no CUDA device (use --tiny to check the script on the CPU)")
        return
    max_tokens = max(args.contexts) + args.new + 8
    settings = CacheSettings(prefill_chunk=2048)
    config = make_config(shape, max_tokens)
    card = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU (--tiny)"
    bandwidth = copy_bandwidth(device, 64 if args.tiny else 1024)
    kv_per_token = kv_bytes_per_token(config, torch.bfloat16)
    print(f"{datetime.date.today()}, {card}, torch {torch.__version__}")
    print(
        f"measured copy bandwidth {bandwidth / 1e9:.0f} GB/s; KV {kv_per_token / 1024:.0f} KiB per token (bf16)"
    )
    print("| weights | context | tokens/s | bound tokens/s | of bound | weights read MiB |")
    print("|---|---:|---:|---:|---:|---:|")

    torch.manual_seed(0)
    for kind in [*args.kinds, *(["bf16 + CUDA graph"] if args.cuda_graph and device.type == "cuda" else [])]:
        default = torch.get_default_dtype()
        torch.set_default_dtype(torch.bfloat16)
        try:
            with torch.device(device):
                model = GlmForCausalLM(config).eval()
        finally:
            torch.set_default_dtype(default)
        if kind in ("nf4", "int8"):
            quantize(model, kind, device)
        weights = bytes_read_per_token(model)
        static = kind == "bf16 + CUDA graph"
        if static:
            compiled = torch.compile(model.forward, mode="reduce-overhead", fullgraph=False)
            model.forward = compiled
        for context in args.contexts:
            rate = decode_rate(model, settings, context, args.new, max_tokens, static)
            bound = bandwidth / (weights + kv_per_token * (max_tokens if static else context))
            print(
                f"| {kind} | {context} | {rate:.1f} | {bound:.1f} | {rate / bound:.0%} | {weights / 2**20:.0f} |"
            )
        del model
        gc.collect()
        if device.type == "cuda":
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
