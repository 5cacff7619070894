"""What the GPU decode benchmarks share: the model shapes, a random-weight ``GlmForCausalLM``,
the device copy bandwidth, bitsandbytes quantization and transformers' own CUDA-graph
decode rate (:mod:`benchmarks.gpu_decode` and :mod:`benchmarks.gpu_quant` import these).

Shapes: ChatGLM3-6B as glmdesk's converter gives the original checkpoint (28 layers,
hidden 4096, 32 heads in 2 KV groups, head dim 128, FFN 13696, vocabulary 65024).
"""

from __future__ import annotations

import time

import torch
from torch import nn
from transformers import GlmConfig, GlmForCausalLM

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


def new_model(config: GlmConfig, device: torch.device) -> nn.Module:
    """A ``GlmForCausalLM`` with random weights, created in bf16 on ``device``."""
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.bfloat16)
    try:
        with torch.device(device):
            return GlmForCausalLM(config).eval()
    finally:
        torch.set_default_dtype(default)


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


def static_graph_rate(model, context: int, new: int) -> float:
    """Greedy decode tokens/s of transformers' own ``generate`` with its ``StaticCache``,
    whose decode steps ``generate`` compiles (``torch.compile``, mode
    ``reduce-overhead``: CUDA graphs): the reference for what CUDA graphs give.
    Rate = ``new`` extra tokens / the time they add (two lengths, best of two each,
    after two warm-up calls that compile)."""
    from transformers import StaticCache

    prompt = torch.randint(0, model.config.vocab_size, (1, context), device=model.device)
    cache = StaticCache(config=model.config, max_cache_len=context + new + 16)

    def run(n: int) -> float:
        cache.reset()
        sync(model.device)
        t0 = time.perf_counter()
        model.generate(
            prompt,
            attention_mask=torch.ones_like(prompt),
            max_new_tokens=n,
            min_new_tokens=n,
            do_sample=False,
            cache=cache,
        )
        sync(model.device)
        return time.perf_counter() - t0

    run(8), run(8)
    short, long = min(run(8), run(8)), min(run(8 + new), run(8 + new))
    return new / (long - short)
