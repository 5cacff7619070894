"""The fused decode step on converted ChatGLM checkpoints (transformers' GlmForCausalLM):
interleaved partial rotary, grouped KV heads and QKV bias give transformers' logits."""

from __future__ import annotations

import pytest
import torch

from glmdesk.core.settings import CacheSettings, LoadSettings
from glmdesk.engine.backends.transformers.loader import load_model
from glmdesk.engine.decode.compile_support import compiler_missing_reason
from glmdesk.engine.decode.static_decode import StaticDecodeStep
from tests.engine.decode.test_decode_step import step_logits


@pytest.mark.parametrize(("family", "rope_ratio"), [("chatglm2", None), ("chatglm3", 50.0)])
def test_fused_step_matches_transformers_on_glm(make_checkpoint, monkeypatch, tmp_path, family, rope_ratio):
    monkeypatch.setenv("GLMDESK_MODEL_CACHE", str(tmp_path / "models"))
    src, config, _ = make_checkpoint(family, rope_ratio=rope_ratio, n_shards=1)
    fused = load_model(LoadSettings(model=str(src)))
    plain = load_model(LoadSettings(model=str(src), fused_decode=False))
    assert fused.info.fused_decode and not plain.info.fused_decode
    assert fused.model.model.layers[0].self_attn.q_proj.fused.linear.bias is not None  # QKV bias
    assert fused.step.apply_rotary is not None  # GLM's own rotary
    vocab = fused.model.config.vocab_size
    torch.manual_seed(0)
    ids = torch.randint(100, vocab - 100, (1, 30))
    for settings in (CacheSettings(), CacheSettings("sliding_window", window=16, sinks=2)):
        a = step_logits(fused.model, settings, ids[:, :12], ids[0, 12:], fused.step)
        b = step_logits(plain.model, settings, ids[:, :12], ids[0, 12:])
        assert (a - b).abs().max() < 1e-4 * max(1.0, b.abs().max().item())


@pytest.mark.slow
@pytest.mark.skipif(compiler_missing_reason() is not None, reason="no C++ compiler for TorchInductor")
def test_glm_decodes_on_the_static_path_when_compile_is_asked(make_checkpoint, monkeypatch, tmp_path):
    monkeypatch.setenv("GLMDESK_MODEL_CACHE", str(tmp_path / "models"))
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)  # glmdesk's cache folder is used
    src, *_ = make_checkpoint("chatglm3", n_shards=1)
    stages = []
    loaded = load_model(LoadSettings(model=str(src), compile_decode=True), stages.append)
    plain = load_model(LoadSettings(model=str(src), fused_decode=False))
    assert loaded.info.fused_decode and loaded.info.compiled_decode and not loaded.info.notes
    assert isinstance(loaded.step, StaticDecodeStep) and loaded.step.failure is None
    assert [(p.done, p.total) for p in stages if p.stage == "compiling"][-1] == (2, 2)
    assert any((tmp_path / "models" / "inductor").iterdir())  # generated code kept for next start
    vocab = loaded.model.config.vocab_size
    torch.manual_seed(1)
    ids = torch.randint(100, vocab - 100, (1, 40))
    for settings in (CacheSettings(), CacheSettings("sliding_window", window=16, sinks=2)):
        a = step_logits(loaded.model, settings, ids[:, :12], ids[0, 12:], loaded.step)
        b = step_logits(plain.model, settings, ids[:, :12], ids[0, 12:])
        assert (a - b).abs().max() < 1e-4 * max(1.0, b.abs().max().item())
    assert loaded.step.recompiles() == 0
