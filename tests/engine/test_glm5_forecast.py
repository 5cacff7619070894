"""What GLM-5's and GLM-5.3-Flash's KV cache costs: the forecast counts only the layers
that grow, with their sparse-attention indexer keys, plus the linear-attention layers'
fixed state, and equals what glmdesk's cache really holds per token on the tiny models.

The published shapes are transformers 5.24's configuration defaults for
``GlmMoeDsaConfig`` (GLM-5: 78 layers, MLA latent 512 + rotary 64, indexer keys of 128)
and ``Glm5NextConfig`` (GLM-5.3-Flash: 45 layers, 34 of them KDA linear attention, MLA
latent 512 without rotary part, pooled indexer keys of 128).
"""

from __future__ import annotations

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoModelForImageTextToText, Glm5NextConfig, GlmMoeDsaConfig

from glmdesk.core.settings import CacheSettings
from glmdesk.engine.cache import kv_bytes_per_token, make_cache_strategy
from glmdesk.engine.cache.layers import attention_layers
from glmdesk.engine.forecast import forecast
from glmdesk.engine.forecast_shape import shape_from_config
from tests.helpers.glm5_models import write_glm5, write_glm5_flash

GIB = 2**30


@pytest.mark.parametrize("kind", ["glm5", "glm5-flash"])
def test_the_per_token_figure_is_what_the_cache_holds(tmp_path, kind):
    if kind == "glm5":
        model = AutoModelForCausalLM.from_pretrained(write_glm5(tmp_path), dtype=torch.float32)
    else:
        model = AutoModelForImageTextToText.from_pretrained(write_glm5_flash(tmp_path), dtype=torch.float32)
    strategy = make_cache_strategy(model.eval(), CacheSettings(strategy="full"))
    tokens = 50
    strategy.prefill(torch.randint(10, 300, (1, tokens)))
    held = 0
    for layer in attention_layers(strategy.cache):
        held += layer.keys[:, :, : layer.length].numel() + layer.values[:, :, : layer.length].numel()
        held += layer.indexer_keys[:, : layer.indexer_length].numel()
    assert held * 4 == tokens * kv_bytes_per_token(model.config, torch.float32)
    shape = shape_from_config(model.config.to_dict())
    forecast_per_token = forecast(shape, engine="transformers", precision="fp32", context=tokens).kv
    assert forecast_per_token - shape.fixed_state_bytes == held * 4


def test_glm5_3_flash_at_128k_and_a_million_tokens():
    shape = shape_from_config(Glm5NextConfig().to_dict(), "GLM-5.3-Flash")
    assert (shape.layers, shape.growing_layers) == (45, 11)
    at = {
        n: forecast(shape, engine="transformers", precision="bf16", on_gpu=True, context=n).kv
        for n in (131072, 2**20)
    }
    per_token = 11 * (512 + 0 + 2 * 128 + 1) * 2  # latent, no rotary key, packed indexer; bf16
    state = 34 * (64 * 128 * 128 * 4 + 3 * 64 * 128 * 4 * 2)  # fp32 recurrent state + conv window
    assert shape.fixed_state_bytes == state
    assert at[131072] == 131072 * per_token + state  # about 2.2 GiB
    assert at[2**20] == 2**20 * per_token + state  # about 16.7 GiB
    assert 16 * GIB < at[2**20] < 17 * GIB
    # Counting every layer as growing would have forecast four times as much.
    every_layer = 45 * (512 + 2 * 128 + 1) * 2 * 2**20
    assert every_layer > 4 * (at[2**20] - state)


def test_glm5_counts_its_indexer_keys_in_every_layer():
    shape = shape_from_config(GlmMoeDsaConfig().to_dict(), "GLM-5")
    assert (shape.growing_layers, shape.index_head_dim, shape.fixed_state_bytes) == (78, 128, 0)
    kv = forecast(shape, engine="transformers", precision="bf16", on_gpu=True, context=131072).kv
    assert kv == 131072 * 78 * (512 + 64 + 128) * 2


def test_the_attention_working_memory_of_a_long_context_is_forecast():
    """transformers' MLA decompresses the latent cache into every head's keys and values
    over the whole context, and GLM-5's indexer scores every key of a prefill chunk:
    memory beyond the KV cache that grows with the context. Measured on an H200 in bf16
    with GLM-5's attention shapes over two layers (``benchmarks/glm5_memory.py``): 5,609 MiB
    above the weights during a 32K prompt; the forecast bounds it from above."""
    from glmdesk.engine.forecast import PREFILL_SCORE_BYTES

    two_layers = GlmMoeDsaConfig(num_hidden_layers=2, first_k_dense_replace=2, intermediate_size=1024)
    shape = shape_from_config(two_layers.to_dict(), "GLM-5, two layers")
    at_32k = forecast(shape, engine="transformers", precision="bf16", on_gpu=True, context=32768)
    assert 5609 * 2**20 <= at_32k.work <= 1.2 * 5609 * 2**20
    assert at_32k.total == at_32k.weights + at_32k.kv + at_32k.overhead + at_32k.work
    flash = shape_from_config(Glm5NextConfig().to_dict(), "GLM-5.3-Flash")
    at_1m = forecast(flash, engine="transformers", precision="bf16", on_gpu=True, context=2**20)
    decompressed = 2**20 * 64 * (256 + 0 + 256) * 2  # every head's key and value, one layer at a time
    assert at_1m.work == decompressed + PREFILL_SCORE_BYTES  # 68 GiB beside 16.7 GiB of KV
    # llama.cpp keeps its attention in its compute buffer (the overhead).
    assert forecast(flash, engine="llamacpp", on_gpu=True, context=2**20).work == 0
