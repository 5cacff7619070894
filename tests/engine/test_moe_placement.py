"""MoE on a desktop, the parts a CPU can check: llama.cpp keeps a MoE GGUF's expert
tensors in system RAM when asked (llama.cpp's own log names each tensor it moved),
and the device map for a tiny ``Glm4MoeForCausalLM`` under a small GPU budget puts
the routed experts on the CPU first. Running the map on a GPU is in
``tests/engine/chatglm/test_gpu.py``."""

from __future__ import annotations

import pytest
import torch

from glmdesk.core.messages import ChatMessage
from glmdesk.core.settings import CacheSettings, LoadSettings, ParamsBox, SamplingParams
from glmdesk.engine.backends.llamacpp.backend import LlamaCppBackend
from glmdesk.engine.backends.transformers.placement import moe_offload_plan
from tests.helpers.gguf_models import write_glm45_gguf
from tests.helpers.glm45_models import write_glm45

EXPERTS = {"blk.1.ffn_gate_exps.weight", "blk.1.ffn_up_exps.weight", "blk.1.ffn_down_exps.weight"}


@pytest.fixture(scope="module")
def moe_gguf(tmp_path_factory):
    return write_glm45_gguf(tmp_path_factory.mktemp("moe-gguf") / "tiny-glm45.gguf")


@pytest.fixture(scope="module")
def glm45(tmp_path_factory):
    return write_glm45(tmp_path_factory.mktemp("glm45") / "GLM-4.5-Air")


@pytest.mark.parametrize("on", [True, False])
def test_llamacpp_keeps_the_experts_in_ram_when_asked(moe_gguf, monkeypatch, on):
    """The load path of a GPU build: this CPU build is told it can offload, so
    llama.cpp runs the load with every layer "offloaded" and glmdesk's override list;
    llama.cpp's own log then names each expert tensor it kept in the CPU buffer."""
    import llama_cpp

    monkeypatch.setattr(llama_cpp, "llama_supports_gpu_offload", lambda: True)
    backend = LlamaCppBackend()
    info = backend.load(LoadSettings(model=str(moe_gguf), engine="llamacpp", experts_in_ram=on))
    try:
        assert info.family == "glm4-moe"
        assert set(backend.model.experts_in_ram) == (EXPERTS if on else set())
        notes = {n.kind: n for n in info.notes}
        assert ("experts_in_ram" in notes) is on
        if on:
            assert notes["experts_in_ram"].params["tensors"] == 3 and info.offloaded_mib > 0
        params = ParamsBox(SamplingParams(temperature=0.0, max_new_tokens=4))
        final = list(backend.stream([ChatMessage("user", "hello")], params, CacheSettings()))[-1]
        # The random weights may end at once; the prompt ran through the experts either way.
        assert final.error is None and final.finish_reason in ("stop", "length") and final.prompt_tokens > 0
    finally:
        backend.close()


def test_experts_in_ram_on_the_cpu_changes_nothing(moe_gguf):
    backend = LlamaCppBackend()
    info = backend.load(
        LoadSettings(model=str(moe_gguf), engine="llamacpp", device="cpu", experts_in_ram=True)
    )
    try:
        assert backend.model.experts_in_ram == () and info.offloaded_mib == 0
        assert "experts_in_ram_cpu" in {n.kind for n in info.notes}
    finally:
        backend.close()


def test_experts_in_ram_on_a_dense_gguf_says_it_does_nothing(tmp_path):
    from tests.engine.test_llamacpp_glm import write_tiny_glm

    path = tmp_path / "dense.gguf"
    write_tiny_glm(path)
    backend = LlamaCppBackend()
    info = backend.load(LoadSettings(model=str(path), engine="llamacpp", experts_in_ram=True))
    try:
        assert backend.model.experts_in_ram == ()
        assert "experts_in_ram_dense" in {n.kind for n in info.notes}
    finally:
        backend.close()


def test_small_gpu_budget_puts_the_experts_on_the_cpu(glm45):
    """A budget just under the model's: every routed expert goes to the CPU, attention,
    router and shared experts stay on the GPU; a roomy budget needs no map."""
    from glmdesk.engine.forecast import forecast
    from glmdesk.engine.forecast_shape import shape_from_folder

    settings = LoadSettings(model=str(glm45))
    whole = forecast(
        shape_from_folder(glm45), engine="transformers", precision="bf16", on_gpu=True, context=2048
    )
    assert moe_offload_plan(glm45, settings, whole.gpu + 1, torch.bfloat16) is None
    plan = moe_offload_plan(glm45, settings, whole.gpu - 1, torch.bfloat16)
    assert plan.device_map["model.layers.1.mlp.experts"] == "cpu"
    on_gpu = {name for name, where in plan.device_map.items() if where == 0}
    assert {
        "model.layers.1.self_attn",
        "model.layers.1.mlp.gate",
        "model.layers.1.mlp.shared_experts",
    } <= on_gpu
    assert {"model.embed_tokens", "model.layers.0", "lm_head"} <= on_gpu
    assert plan.cpu_bytes == whole.experts  # the experts' bf16 bytes, as the forecast counts them


def test_a_gpu_too_small_for_the_rest_leaves_the_map_to_accelerate(glm45):
    plan = moe_offload_plan(glm45, LoadSettings(model=str(glm45)), 1 << 20, torch.bfloat16)
    assert plan is not None and plan.gpu_bytes < plan.cpu_bytes
    assert set(plan.device_map.values()) <= {0, "cpu"}
