"""The fused decode step gives transformers' logits, through every cache strategy.

The embedded model is loaded twice: with the fused step (the default) and with
``fused_decode=False`` (transformers' forward for every token). Both are fed the
same tokens, so a difference cannot compound; logits must agree to fp32 rounding.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn
from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

from glmdesk.core.settings import CacheSettings, LoadSettings
from glmdesk.engine.backends.transformers.loader import load_model
from glmdesk.engine.cache import make_cache_strategy
from glmdesk.engine.decode import decode_step
from glmdesk.engine.decode.decode_step import FusedProjection, ProjectionSlice

TEXT = Path(__file__).parents[3] / "benchmarks" / "data" / "public_domain.txt"
TOL = 1e-4


@pytest.fixture(scope="module")
def ids(embedded_folder):
    tokenizer = AutoTokenizer.from_pretrained(embedded_folder)
    return tokenizer(TEXT.read_text(), return_tensors="pt").input_ids[:, 100:190]


@pytest.fixture(scope="module")
def unfused(embedded_folder):
    return load_model(LoadSettings(fused_decode=False))


def step_logits(
    model, settings: CacheSettings, prompt: torch.Tensor, tokens: torch.Tensor, step=None
) -> torch.Tensor:
    """``[len(tokens) + 1, vocab]``: logits after the prompt, then after each token
    (single tokens through ``step`` when given, else transformers' forward)."""
    strategy = make_cache_strategy(model, settings, step)
    out = [strategy.prefill(prompt)]
    out += [strategy.step(int(t)) for t in tokens]
    strategy.release()
    return torch.stack(out)


def test_default_load_fuses_and_reports_it(embedded, unfused):
    assert embedded.info.fused_decode and isinstance(embedded.step, decode_step.FusedDecodeStep)
    assert "fused decode" in embedded.info.describe()
    attention = embedded.model.model.layers[0].self_attn
    assert isinstance(attention.q_proj, ProjectionSlice) and attention.q_proj.fused is attention.v_proj.fused
    # No weight is held twice: the same parameter count as the unfused model.
    count = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    assert count(embedded.model) == count(unfused.model)
    assert embedded.info.footprint_mib == pytest.approx(unfused.info.footprint_mib, rel=1e-6)
    assert not unfused.info.fused_decode and unfused.step is None
    assert type(unfused.model.model.layers[0].self_attn.q_proj) is nn.Linear


@pytest.mark.slow
@pytest.mark.parametrize(
    "settings",
    [
        CacheSettings("full", prefill_chunk=32),
        CacheSettings("sliding_window", window=48, sinks=4, prefill_chunk=32),  # ring mode
        CacheSettings("dynamic", window=48, sinks=4, budget_mib=3.0, prefill_chunk=32),  # switches
        CacheSettings("quantized"),
    ],
    ids=lambda s: s.strategy,
)
def test_fused_step_matches_transformers_forward(embedded, unfused, ids, settings):
    prompt, tokens = ids[:, :40], ids[0, 40:]
    if settings.strategy == "quantized":
        # fp8 keys: a 1e-7 difference can flip a rounding step (~6% of a value) and the
        # flip compounds; only the first steps are comparable to fp32 rounding.
        tokens = tokens[:2]
    fused = step_logits(embedded.model, settings, prompt, tokens, embedded.step)
    reference = step_logits(unfused.model, settings, prompt, tokens)
    assert (fused - reference).abs().max() < TOL
    assert torch.equal(fused.argmax(-1), reference.argmax(-1))


def test_static_cache_and_masks_keep_transformers_forward(embedded, monkeypatch, ids):
    """A static buffer (whole buffer returned, masked tail) is not the fused step's case."""
    from glmdesk.engine.cache import FullCacheStrategy

    calls = []
    step = embedded.step
    monkeypatch.setattr(type(step), "__call__", lambda self, *a: calls.append(a) or None)
    strategy = FullCacheStrategy(embedded.model, CacheSettings(), static=True, max_tokens=64)
    strategy.decode_step = step
    strategy.prefill(ids[:, :8])
    assert strategy.step(5).shape == (embedded.model.config.vocab_size,)
    assert not calls


@pytest.mark.parametrize("scheme", ["int8-wo", "int4-wo"])
def test_fused_weight_only_equals_unfused_weight_only(embedded_folder, ids, scheme):
    """int4 groups run along input channels, so quantizing stacked rows changes nothing."""
    fused = load_model(LoadSettings(quantization=scheme))
    plain = load_model(LoadSettings(quantization=scheme, fused_decode=False))
    prompt, tokens = ids[:, :24], ids[0, 24:40]
    a = step_logits(fused.model, CacheSettings(), prompt, tokens, fused.step)
    b = step_logits(plain.model, CacheSettings(), prompt, tokens)
    assert (a - b).abs().max() < 1e-3  # both compute in bf16 on the same codes


def test_slices_share_one_product_and_never_a_stale_one():
    torch.manual_seed(0)
    parts = [nn.Linear(8, n) for n in (4, 2, 2)]
    owner = nn.Module()
    for name, part in zip(("q", "k", "v"), parts, strict=True):
        setattr(owner, name, part)
    expected = lambda x: [p(x) for p in parts]  # noqa: E731
    x1, x2 = torch.randn(3, 8), torch.randn(3, 8)
    with torch.no_grad():
        want1, want2 = expected(x1), expected(x2)
        fused = decode_step._fuse(owner, ("q", "k", "v"))
        calls = []
        fused.linear.register_forward_hook(lambda *a: calls.append(1))
        assert torch.allclose(owner.q(x1), want1[0], atol=1e-6)
        assert torch.allclose(owner.q(x2), want2[0], atol=1e-6)  # a new input: a new product
        assert torch.allclose(owner.k(x2), want2[1], atol=1e-6)
        assert torch.allclose(owner.v(x2), want2[2], atol=1e-6)
        assert len(calls) == 2 and fused._memo is None  # released after the last part
        assert torch.allclose(owner.k(x1), want1[1], atol=1e-6)
    assert isinstance(fused, FusedProjection) and owner.k.out_features == 2


TINY = {"vocab_size": 64, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1}


def test_unsupported_models_keep_transformers_forward():
    model = Qwen2ForCausalLM(Qwen2Config(**TINY, num_attention_heads=4)).eval()
    assert "qwen2" in decode_step.unsupported_reason(model)
    with pytest.raises(ValueError, match="qwen2"):
        decode_step.fuse_projections(model)
    gelu = LlamaForCausalLM(LlamaConfig(**TINY, num_attention_heads=4, hidden_act="gelu"))
    assert "gelu" in decode_step.unsupported_reason(gelu)
    eager = LlamaForCausalLM(LlamaConfig(**TINY, num_attention_heads=4, attn_implementation="eager"))
    assert "eager" in decode_step.unsupported_reason(eager)
    with pytest.raises(ValueError, match="fuse_projections"):
        decode_step.FusedDecodeStep(LlamaForCausalLM(LlamaConfig(**TINY, num_attention_heads=4)))
