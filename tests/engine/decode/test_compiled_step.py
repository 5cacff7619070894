"""The compiled decode step (torch.compile): transformers' logits, and a clean fallback.

A tiny random Llama is compiled for real (Inductor's C++ backend, ~20 s on two
cores); the embedded model only checks the fallback when compiling fails.
"""

from __future__ import annotations

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from glmdesk.core.settings import CacheSettings, LoadSettings
from glmdesk.engine.cache import make_cache_strategy
from glmdesk.engine.decode import compiled_step, decode_step
from glmdesk.engine.loader import load_model
from tests.engine.decode.test_decode_step import step_logits


def tiny_llama(seed: int = 0) -> LlamaForCausalLM:
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=256,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=512,
    )
    return LlamaForCausalLM(config).eval()


needs_compiler = pytest.mark.skipif(
    compiled_step.compiler_missing_reason() is not None, reason="no C++ compiler for TorchInductor"
)


@pytest.fixture(autouse=True)
def inductor_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))


@pytest.mark.slow
@needs_compiler
def test_compiled_step_matches_transformers_and_runs_compiled(tmp_path, monkeypatch):
    reference = tiny_llama()
    model = tiny_llama()
    decode_step.fuse_projections(model)
    eager = decode_step.FusedDecodeStep(model)
    step = compiled_step.compile_decode_step(model, eager, tmp_path / "inductor")
    assert step.eager is eager and step.failure is None
    eager_calls = []
    original = type(eager).__call__
    monkeypatch.setattr(type(eager), "__call__", lambda self, *a: eager_calls.append(1) or original(self, *a))
    ids = torch.randint(0, 256, (1, 60))
    settings = CacheSettings(prefill_chunk=16)
    got = step_logits(model, settings, ids[:, :20], ids[0, 20:], step)
    want = step_logits(reference, settings, ids[:, :20], ids[0, 20:])
    assert (got - want).abs().max() < 1e-4
    assert not eager_calls  # every decode step ran compiled
    # A window cache is not the compiled step's case: the eager fused step answers it.
    window = CacheSettings("sliding_window", window=16, sinks=2)
    got = step_logits(model, window, ids[:, :20], ids[0, 20:30], step)
    want = step_logits(reference, window, ids[:, :20], ids[0, 20:30])
    assert (got - want).abs().max() < 1e-4 and eager_calls


@pytest.mark.slow
@needs_compiler
def test_compiled_step_crosses_a_buffer_doubling(tmp_path, monkeypatch):
    from torch._inductor.runtime.cache_dir_utils import default_cache_dir

    # As after importing transformers: torch's default cache folder (emptied on reboot) is set.
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", default_cache_dir())
    model = tiny_llama(1)
    reference = tiny_llama(1)
    decode_step.fuse_projections(model)
    step = compiled_step.compile_decode_step(
        model, decode_step.FusedDecodeStep(model), tmp_path / "glmdesk-cache"
    )
    assert any((tmp_path / "glmdesk-cache").iterdir())  # the generated code is kept in ours
    ids = torch.randint(0, 256, (1, 300))
    strategy = make_cache_strategy(model, CacheSettings(), step)
    ref = make_cache_strategy(reference, CacheSettings())
    a, b = strategy.prefill(ids[:, :250]), ref.prefill(ids[:, :250])
    for token in ids[0, 250:]:  # 256 slots, then 512
        assert (a - b).abs().max() < 1e-4
        a, b = strategy.step(int(token)), ref.step(int(token))
    assert strategy.cache.layers[0].capacity == 512 and strategy.cache.layers[0].reallocations == 2


def test_failed_compile_keeps_the_eager_step_with_a_note(embedded_folder, monkeypatch):
    def no_compiler(fn, **kwargs):
        def run(*args):
            raise RuntimeError("InvalidCxxCompiler: No working C++ compiler found")

        return run

    monkeypatch.setattr(compiled_step.torch, "compile", no_compiler)
    loaded = load_model(LoadSettings(compile_decode=True))
    assert loaded.info.fused_decode and not loaded.info.compiled_decode
    assert [n.kind for n in loaded.info.notes] == ["compile_unavailable"]
    assert "C++ compiler" in loaded.info.notes[0].params["reason"]
    assert type(loaded.step) is decode_step.FusedDecodeStep
    from tests.engine.test_loader import answer

    assert "Paris" in answer(loaded)


def test_compile_needs_the_fused_step():
    with pytest.raises(ValueError, match="fused decode step"):
        LoadSettings(compile_decode=True, fused_decode=False)


def test_each_step_compiles_its_own_code_object():
    """Dynamo's graphs and recompile limit (8) are per code object: loading a ninth model
    must not fall back to the uncompiled step, and a closed model's graphs must go."""
    model = tiny_llama()
    decode_step.fuse_projections(model)
    eager = decode_step.FusedDecodeStep(model)
    one, two = compiled_step.CompiledDecodeStep(eager), compiled_step.CompiledDecodeStep(eager)
    a, b = compiled_step._own_function(one._layers), compiled_step._own_function(two._layers)
    assert a.__self__ is one and a.__func__.__code__ is not b.__func__.__code__
    assert a.__func__.__code__ is not compiled_step.CompiledDecodeStep._layers.__code__


@pytest.mark.parametrize("frozen", [False, True])
def test_no_compiler_is_known_before_a_minute_of_tracing(embedded_folder, monkeypatch, frozen):
    """No C++ compiler (or the packaged app): the load says so at once and never starts
    Dynamo; Open model greys the option out with the same reason."""
    import sys

    from glmdesk.engine.options import option_availability

    if frozen:
        monkeypatch.setattr(sys, "frozen", True, raising=False)
    else:
        monkeypatch.delenv("CXX", raising=False)
        monkeypatch.setattr(compiled_step.shutil, "which", lambda name: None)
    reason = compiled_step.compiler_missing_reason()
    assert reason and ("packaged" in reason if frozen else "C++ compiler" in reason)
    option = option_availability()["decode:compile"]
    assert option.kind == "option_unavailable" and option.message == reason
    assert option.params["reason"] == ("frozen_app" if frozen else "no_compiler")
    monkeypatch.setattr(compiled_step, "compile_decode_step", lambda *a: pytest.fail("compiled anyway"))
    loaded = load_model(LoadSettings(compile_decode=True))
    assert not loaded.info.compiled_decode and loaded.info.notes[0].params["reason"] == reason
