"""GLM-5.3-Flash's and GLM-5's KV cache: the forecast against what glmdesk's cache holds and
allocates, at real attention shapes and long contexts (a CUDA GPU for the long ones).

The models keep the published attention shapes (transformers 5.24's ``Glm5NextConfig`` and
``GlmMoeDsaConfig`` defaults: MLA latent 512, indexer keys of 128, KDA heads 64 x 128) but
only a few layers, dense MLPs and a small vocabulary, with random weights: the cache's size
depends on the shapes, not on the weights. GLM-5.3-Flash keeps its 3 : 1 mix (three
linear-attention layers, then an indexed one).

For each context it prints, in MiB: the forecast (``engine/forecast.py``, what the gauge
and the fit marks use), the bytes the cache *holds* for that many tokens, the bytes its
buffers *allocate* (grown by doubling, so up to twice what is held), and on a GPU the peak
allocation during the prefill above the weights (sparse attention's scores, bounded by the
prefill chunk the cache chooses: ``engine/cache/base.py``) and the last chunk's size. Then the forecast for the whole published
model at 128K and 1M tokens.

    python benchmarks/glm5_memory.py                      # GPU: 8K, 32K, 128K tokens
    python benchmarks/glm5_memory.py --contexts 512 --small   # a quick run on the CPU
"""

from __future__ import annotations

import argparse
import time

import torch
from transformers import (
    AutoModelForCausalLM,
    AutoModelForImageTextToText,
    Glm5NextConfig,
    GlmMoeDsaConfig,
)

from glmdesk.core.settings import CacheSettings
from glmdesk.engine.cache import make_cache_strategy
from glmdesk.engine.cache.layers import attention_layers
from glmdesk.engine.forecast import forecast
from glmdesk.engine.forecast_shape import shape_from_config

MIB = 2**20


def flash_config(small: bool) -> Glm5NextConfig:
    """GLM-5.3-Flash's attention shapes over four layers (three KDA, one indexed)."""
    config = Glm5NextConfig()
    text = config.text_config
    text.num_hidden_layers = 4
    text.layer_types = ["linear_attention"] * 3 + ["indexed_attention"]
    text.indexer_types = text.indexer_types[:4]
    text.mlp_layer_types = ["dense"] * 4
    text.intermediate_size = 1024
    text.vocab_size = 4096
    text.pad_token_id = 0
    if small:
        text.hidden_size, text.num_attention_heads, text.num_key_value_heads = 256, 4, 4
        text.linear_num_heads, text.linear_head_dim, text.index_n_heads = 4, 32, 4
        text.q_lora_rank, text.kv_lora_rank = 64, 64
        text.qk_nope_head_dim = text.qk_head_dim = text.v_head_dim = 32
        text.index_head_dim = 32
    vision = config.vision_config
    vision.depth, vision.hidden_size, vision.intermediate_size, vision.num_heads = 1, 64, 128, 2
    vision.out_hidden_size = text.hidden_size
    return config


def dsa_config(small: bool) -> GlmMoeDsaConfig:
    """GLM-5's attention shapes (MLA with rotary part, DSA indexer) over two dense layers."""
    fields = {
        "num_hidden_layers": 2,
        "first_k_dense_replace": 2,  # both layers dense: the MLP does not change the cache
        "intermediate_size": 1024,
        "vocab_size": 4096,
        "pad_token_id": 0,
    }
    if small:
        fields |= {
            "hidden_size": 256,
            "num_attention_heads": 4,
            "num_key_value_heads": 4,
            "q_lora_rank": 64,
            "kv_lora_rank": 64,
            "index_n_heads": 4,
            "qk_nope_head_dim": 32,
            "qk_rope_head_dim": 16,
            "v_head_dim": 32,
            "index_head_dim": 32,
        }
    return GlmMoeDsaConfig(**fields)


def cache_bytes(strategy) -> tuple[int, int]:
    """``(held, allocated)`` bytes of the cache's growing layers plus every fixed state."""
    held = allocated = 0
    grown = attention_layers(strategy.cache)
    for layer in grown:
        size = layer.keys.element_size()
        held += (layer.keys[:, :, : layer.length].numel() + layer.values[:, :, : layer.length].numel()) * size
        allocated += (layer.keys.numel() + layer.values.numel()) * size
        if layer.indexer_keys is not None:
            isize = layer.indexer_keys.element_size()
            held += layer.indexer_keys[:, : layer.indexer_length].numel() * isize
            allocated += layer.indexer_keys.numel() * isize
    for layer in strategy.cache.layers:
        if layer in grown:
            continue
        for value in vars(layer).values():  # a linear-attention layer's recurrent and conv states
            values = value.values() if isinstance(value, dict) else value
            for state in values if isinstance(values, (list, tuple, type({}.values()))) else [values]:
                if isinstance(state, torch.Tensor):
                    held += state.numel() * state.element_size()
                    allocated += state.numel() * state.element_size()
    return held, allocated


def measure(name: str, model, config, contexts: list[int], device: str, precision: str) -> None:
    shape = shape_from_config(config.to_dict(), name)
    print(f"\n{name}: {shape.layers} layers, {shape.growing_layers} growing; {precision} on {device}")
    print(
        "| context | forecast MiB | held MiB | allocated MiB | prefill peak over weights MiB | last chunk | prefill s |"
    )
    print("|---|---|---|---|---|---|---|")
    vocab = config.get_text_config().vocab_size
    for context in contexts:
        strategy = make_cache_strategy(model, CacheSettings(strategy="full", prefill_chunk=1024))
        ids = torch.randint(10, vocab - 10, (1, context), device=device)
        if device == "cuda":
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.memory_allocated()
        start = time.perf_counter()
        with torch.inference_mode():
            strategy.prefill(ids)
        if device == "cuda":
            torch.cuda.synchronize()
        seconds = time.perf_counter() - start
        peak = (torch.cuda.max_memory_allocated() - base) / MIB if device == "cuda" else float("nan")
        held, allocated = cache_bytes(strategy)
        want = forecast(
            shape, engine="transformers", precision=precision, on_gpu=device == "cuda", context=context
        ).kv
        print(
            f"| {context:,} | {want / MIB:.2f} | {held / MIB:.2f} | {allocated / MIB:.2f} | {peak:.1f} "
            f"| {strategy.prefill_chunk_now()} | {seconds:.2f} |"
        )
        del strategy, ids
        if device == "cuda":
            torch.cuda.empty_cache()


def published() -> None:
    print("\nThe published models, forecast (bf16 on a GPU):")
    for name, config in (("GLM-5.3-Flash", Glm5NextConfig()), ("GLM-5", GlmMoeDsaConfig())):
        shape = shape_from_config(config.to_dict(), name)
        for context in (131072, 2**20):
            kv = forecast(shape, engine="transformers", precision="bf16", on_gpu=True, context=context).kv
            print(f"  {name} at {context:,} tokens: {kv / 2**30:.2f} GiB KV")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--contexts", type=int, nargs="+", default=[8192, 32768, 131072])
    parser.add_argument("--small", action="store_true", help="small hidden sizes (a CPU run)")
    args = parser.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    precision = "bf16" if device == "cuda" else "fp32"
    torch.manual_seed(0)
    for name, config, auto in (
        ("GLM-5.3-Flash (4 layers)", flash_config(args.small), AutoModelForImageTextToText),
        ("GLM-5 (2 layers)", dsa_config(args.small), AutoModelForCausalLM),
    ):
        model = auto.from_config(config, dtype=dtype).to(device).eval()
        measure(name, model, config, args.contexts, device, precision)
        del model
        if device == "cuda":
            torch.cuda.empty_cache()
    published()


if __name__ == "__main__":
    main()
