"""Each KV-cache strategy generates past its window; bytes and switches are as predicted."""

from __future__ import annotations

import pytest
import torch
from transformers import GlmConfig

from glmdesk.core.errors import GlmdeskError
from glmdesk.core.settings import CacheSettings
from glmdesk.engine.cache import kv_bytes_per_token, make_cache_strategy
from glmdesk.engine.cache import quantized as quantized_module

SINKS, WINDOW = 4, 16
PER_TOKEN_FP32 = 2 * 30 * 3 * 64 * 4  # SmolLM2-135M: layers x kv heads x head dim x fp32


def prompt(n: int) -> torch.Tensor:
    return torch.arange(1000, 1000 + n).unsqueeze(0)


def generate(strategy, n_prompt: int, n_new: int) -> list:
    """Greedy decode; returns the stats after every forward."""
    logits = strategy.prefill(prompt(n_prompt))
    history = [strategy.stats()]
    for _ in range(n_new):
        assert torch.isfinite(logits).all()
        logits = strategy.step(int(logits.argmax()))
        history.append(strategy.stats())
    return history


def test_kv_bytes_per_token():
    chatglm3 = GlmConfig(
        num_hidden_layers=28, num_attention_heads=32, num_key_value_heads=2, head_dim=128, hidden_size=4096
    )
    assert kv_bytes_per_token(chatglm3, torch.float16) == 28 * 1024  # 28 KiB, issue 5
    assert kv_bytes_per_token(chatglm3, torch.bfloat16) == 28 * 1024


def test_embedded_kv_bytes_per_token(embedded_model):
    assert kv_bytes_per_token(embedded_model.config, torch.float32) == PER_TOKEN_FP32


@pytest.mark.parametrize("sinks", [SINKS, 0])
def test_window_bytes_stop_growing_and_never_reallocate(embedded_model, sinks):
    settings = CacheSettings(strategy="sliding_window", window=WINDOW, sinks=sinks, prefill_chunk=16)
    strategy = make_cache_strategy(embedded_model, settings)
    history = generate(strategy, 12, 20)
    capacity = sinks + WINDOW
    assert history[-1].tokens_seen == 32
    full = [s for s in history if s.tokens_seen >= capacity]
    assert {s.kv_bytes for s in full} == {capacity * PER_TOKEN_FP32}
    assert {s.tokens_held for s in full} == {capacity}
    assert history[-1].evicted == 32 - capacity
    assert history[-1].state == "windowed"
    layer = strategy.cache.layers[0]
    pointer, reallocations = layer.keys.data_ptr(), layer.reallocations
    strategy.step(5)
    assert (layer.keys.data_ptr(), layer.reallocations) == (pointer, reallocations)


def test_full_generates_and_grows(embedded_model):
    strategy = make_cache_strategy(embedded_model, CacheSettings(strategy="full", prefill_chunk=16))
    history = generate(strategy, 20, 8)
    last = history[-1]
    assert (last.tokens_held, last.tokens_seen, last.evicted, last.state) == (28, 28, 0, "full")
    assert last.kv_bytes >= 28 * PER_TOKEN_FP32
    strategy.release()
    assert strategy.stats().kv_bytes == 0


def test_dynamic_switches_at_predicted_token_count(embedded_model):
    switch = 24
    settings = CacheSettings(
        strategy="dynamic", window=WINDOW, sinks=SINKS, budget_mib=switch * PER_TOKEN_FP32 / 2**20
    )
    strategy = make_cache_strategy(embedded_model, settings)
    assert strategy.switch_tokens == switch
    history = generate(strategy, 14, 18)
    for stats in history:
        assert stats.state == ("full" if stats.tokens_seen <= switch else "windowed")
        assert stats.kv_bytes <= switch * PER_TOKEN_FP32
    assert strategy.switched_at == switch
    assert history[-1].tokens_held == SINKS + WINDOW


def test_dynamic_switch_inside_a_long_prefill_chunk(embedded_model):
    settings = CacheSettings(
        strategy="dynamic", window=WINDOW, sinks=SINKS, budget_mib=30 * PER_TOKEN_FP32 / 2**20
    )
    strategy = make_cache_strategy(embedded_model, settings)
    history = generate(strategy, 60, 2)
    assert strategy.switched_at == 30
    assert history[-1].state == "windowed"
    assert history[-1].tokens_held == SINKS + WINDOW


def test_quantized_runs_with_a_backend_here(embedded_model):
    strategy = make_cache_strategy(embedded_model, CacheSettings(strategy="quantized", prefill_chunk=16))
    history = generate(strategy, 20, 6)
    assert history[-1].tokens_held == 26
    assert 0 < history[-1].kv_bytes < 26 * PER_TOKEN_FP32


def test_quantized_without_backend_names_the_package(embedded_model, monkeypatch):
    monkeypatch.setattr(quantized_module, "BACKENDS", (("quanto", "optimum.quanto_missing"),))
    with pytest.raises(GlmdeskError) as caught:
        make_cache_strategy(embedded_model, CacheSettings(strategy="quantized"))
    assert caught.value.kind == "invalid_setting"
    assert "optimum-quanto" in caught.value.message


def test_decode_steps_on_cuda_leave_cudnn_attention_out():
    """cuDNN's attention plans each new key length (3x slower decode on an H200):
    single-token steps on CUDA allow every other SDPA backend; prefill chunks and the
    CPU keep all of them."""
    import torch

    from glmdesk.engine.cache.base import attention_kernels

    assert torch.backends.cuda.cudnn_sdp_enabled()
    with attention_kernels(torch.device("cuda", 0), 1):
        assert not torch.backends.cuda.cudnn_sdp_enabled()
        assert torch.backends.cuda.flash_sdp_enabled() and torch.backends.cuda.mem_efficient_sdp_enabled()
        assert torch.backends.cuda.math_sdp_enabled()
    assert torch.backends.cuda.cudnn_sdp_enabled()
    for device, n in ((torch.device("cuda", 0), 2048), (torch.device("cpu"), 1)):
        with attention_kernels(device, n):
            assert torch.backends.cuda.cudnn_sdp_enabled()
