"""What compiling the decode step needs (compiler check, a code object per step,
Inductor's cache folder) and a clean fallback when compiling fails, on a load."""

from __future__ import annotations

import os

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from glmdesk.core.settings import LoadSettings
from glmdesk.engine.backends.transformers.loader import load_model
from glmdesk.engine.decode import compile_support, decode_step, static_decode


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


@pytest.fixture(autouse=True)
def inductor_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))


def test_failed_compile_keeps_the_eager_step_with_a_note(embedded_folder, monkeypatch):
    def no_compiler(fn, **kwargs):
        def run(*args):
            raise RuntimeError("InvalidCxxCompiler: No working C++ compiler found")

        return run

    monkeypatch.setattr(torch, "compile", no_compiler)
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
    decode_step.fuse_projections(model, any_device=True)
    eager = decode_step.FusedDecodeStep(model)
    one, two = static_decode.StaticDecodeStep(eager), static_decode.StaticDecodeStep(eager)
    a, b = one._function, two._function
    assert a.__self__ is one and a.__func__.__code__ is not b.__func__.__code__
    assert a.__func__.__code__ is not static_decode.StaticDecodeStep._one_token.__code__
    again = compile_support.own_function(one._one_token)
    assert again.__func__.__code__ is not a.__func__.__code__ and again.__self__ is one


def test_inductor_code_is_kept_in_glmdesk_cache_folder_unless_the_user_chose_one(tmp_path, monkeypatch):
    from torch._inductor.runtime.cache_dir_utils import default_cache_dir

    ours = tmp_path / "glmdesk-cache" / "inductor"
    # As after importing transformers: torch's default folder (emptied on reboot) is set.
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", default_cache_dir())
    compile_support.use_cache_dir(ours)
    assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == str(ours)
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR")
    compile_support.use_cache_dir(ours)
    assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == str(ours)
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "mine"))  # the user's own
    compile_support.use_cache_dir(ours)
    assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path / "mine")


@pytest.mark.parametrize("frozen", [False, True])
def test_no_compiler_is_known_before_a_minute_of_tracing(embedded_folder, monkeypatch, frozen):
    """No C++ compiler (or the packaged app): the load says so at once and never starts
    Dynamo; Open model greys the option out with the same reason."""
    import sys

    from glmdesk.engine.backends.transformers.options import option_availability

    if frozen:
        monkeypatch.setattr(sys, "frozen", True, raising=False)
    else:
        monkeypatch.delenv("CXX", raising=False)
        monkeypatch.setattr(compile_support.shutil, "which", lambda name: None)
    reason = compile_support.compiler_missing_reason()
    assert reason and ("packaged" in reason if frozen else "C++ compiler" in reason)
    option = option_availability()["decode:compile"]
    assert option.kind == "option_unavailable" and option.message == reason
    assert option.params["reason"] == ("frozen_app" if frozen else "no_compiler")
    monkeypatch.setattr(static_decode, "build_static_step", lambda *a: pytest.fail("compiled anyway"))
    loaded = load_model(LoadSettings(compile_decode=True))
    assert not loaded.info.compiled_decode and loaded.info.notes[0].params["reason"] == reason
