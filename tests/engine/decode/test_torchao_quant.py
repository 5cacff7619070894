"""torchao weight-only int8 / int4 (CUDA's ``int8-wo`` / ``int4-wo``), where torchao
runs on a CPU: its int8 tensor and its CPU int4 layout (the same tinygemm grid), through
the app's backend on a tiny GLM-4 folder, against the unquantized bf16 answer."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from torch import nn

from glmdesk.core import settings as core_settings
from glmdesk.core.errors import GlmdeskError
from glmdesk.core.messages import ChatMessage
from glmdesk.core.settings import CacheSettings, LoadSettings, ParamsBox, SamplingParams, quantization_scheme
from glmdesk.engine.backends import create_backend
from glmdesk.engine.backends.transformers import torchao_quant

pytest.importorskip("torchao")

GREEDY = SamplingParams(temperature=0.0, max_new_tokens=16)


@pytest.fixture(scope="module")
def glm4_folder(tmp_path_factory):
    """A tiny GLM-4-9B-0414-shaped folder (hidden 64, FFN 96, random weights)."""
    from tests.helpers.glm4_0414_models import write_glm4_0414

    return write_glm4_0414(tmp_path_factory.mktemp("glm4-0414") / "GLM-4-9B-0414")


def test_cuda_weight_only_names_torchao_and_bits_stay_bitsandbytes():
    assert quantization_scheme("int8-wo", "cuda:0") == "torchao-int8"
    assert quantization_scheme("int4-wo", "cuda") == "torchao-int4"
    assert quantization_scheme("int4-wo", "cpu") == "torch-int4"
    assert quantization_scheme("4bit", "cuda:0") == "bnb-nf4"
    assert quantization_scheme("8bit", "cuda:0") == "bnb-llm-int8"
    assert quantization_scheme("none", "cuda:0") is None
    with pytest.raises(ValueError, match="mps"):
        quantization_scheme("int8-wo", "mps")


@pytest.mark.parametrize("scheme", ["torchao-int8", "torchao-int4", "torchao-int4-hqq"])
def test_layers_keep_their_dtype_and_stay_close(scheme):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(128, 64), nn.GELU(), nn.Linear(64, 32), nn.Linear(32, 24))
    x = torch.randn(3, 128)
    reference = model(x)
    # int4 on the CPU holds in % 64 == 0 and out % 16 == 0: the last layer (in 32) stays fp32.
    expected = 3 if scheme == "torchao-int8" else 2
    assert torchao_quant.quantize_model(model, scheme) == expected
    assert "Int" in type(model[0].weight).__name__  # torchao's tensor subclass
    assert isinstance(model[3].weight, nn.Parameter) and model[3].weight.dtype == (
        torch.bfloat16 if scheme == "torchao-int8" else torch.float32
    )
    out = model(x)
    assert out.dtype == torch.float32 and out.shape == reference.shape
    # bf16 activations + int8 rows: ~1%; int4 groups of 64: one grid step is max/7.5.
    tolerance = 0.03 if scheme == "torchao-int8" else 0.2
    assert (out - reference).abs().max() <= tolerance * reference.abs().max()


def test_fused_projections_are_quantized_once():
    """glmdesk's fused Q/K/V layer is registered under each name it replaces; each layer
    is still quantized once, and the fused model decodes (the static path's order:
    fuse, quantize, build)."""
    from transformers import GlmConfig, GlmForCausalLM

    from glmdesk.engine.decode.decode_step import fuse_projections

    torch.manual_seed(0)
    config = GlmConfig(
        vocab_size=256, hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, head_dim=32, attention_bias=True, pad_token_id=0,
    )  # fmt: skip
    model = GlmForCausalLM(config).eval().to(torch.bfloat16)
    ids = torch.tensor([[1, 5, 9, 42, 7]])
    with torch.inference_mode():
        want = model(input_ids=ids).logits.float()
    fuse_projections(model)
    unique = {id(m) for m in model.modules() if isinstance(m, nn.Linear)}
    assert torchao_quant.quantize_model(model, "torchao-int8") == len(unique)
    with torch.inference_mode():
        got = model(input_ids=ids).logits.float()
    assert ((got - want).abs().max() / want.abs().max()).item() <= 0.05


def test_unknown_scheme_is_refused():
    with pytest.raises(ValueError, match="torchao-int8"):
        torchao_quant.quantize_model(nn.Linear(64, 64), "torchao-int3")


def greedy(backend, question="Hello world, what is the weather today?"):
    chunks = list(backend.stream([ChatMessage("user", question)], ParamsBox(GREEDY), CacheSettings()))
    final = chunks[-1]
    assert final.error is None and final.finish_reason in ("stop", "length"), final.error
    return [t for c in chunks for t in c.token_ids]


def load(settings: LoadSettings):
    backend = create_backend(settings)
    backend.load(settings)
    return backend


@pytest.mark.parametrize(
    ("quantization", "scheme"), [("int8-wo", "torchao-int8"), ("int4-wo", "torchao-int4")]
)
def test_torchao_scheme_loads_through_the_backend_and_streams(glm4_folder, monkeypatch, quantization, scheme):
    """The CPU row of the scheme table pointed at torchao (as the CUDA row is): the load
    quantizes with it, an answer streams, and on bf16's greedy answer (teacher-forced)
    the quantized model's logits stay close to bf16's and pick mostly the same tokens."""
    settings = LoadSettings(model=str(glm4_folder), device="cpu", precision="bf16", threads=1)
    reference = load(settings)
    expected = greedy(reference)
    monkeypatch.setitem(core_settings.QUANTIZATION_SCHEMES, (quantization, "cpu"), scheme)
    backend = load(dataclasses.replace(settings, quantization=quantization))
    assert backend.info.quantization == quantization
    model = backend.loaded.model
    kinds = {type(m.weight).__name__ for m in model.modules() if isinstance(m, nn.Linear)}
    assert ("Int8Tensor" if scheme == "torchao-int8" else "Int4OpaqueTensor") in kinds
    tokens = greedy(backend)
    assert len(tokens) == len(expected) and all(isinstance(t, int) for t in tokens)
    ids = torch.tensor([expected])
    with torch.inference_mode():
        want = reference.loaded.model(input_ids=ids).logits[0].float()
        got = model(input_ids=ids).logits[0].float()
    error = ((got - want).abs().max() / want.abs().max()).item()
    agree = (got.argmax(-1) == want.argmax(-1)).float().mean().item()
    print(f"{scheme}: logits error {error:.3f} of the largest, top-1 agreement {agree:.0%}")
    assert error <= (0.05 if scheme == "torchao-int8" else 0.3)
    # Random weights give near-flat logits, so int4's rounding flips near ties: its
    # agreement moves with the tokenizer's merges (44-75% seen); 25% is still far above
    # chance (one in the vocabulary) and fails for a wrong scale or group layout.
    assert agree >= (0.75 if scheme == "torchao-int8" else 0.25)
    backend.close()
    reference.close()


def test_weight_only_on_a_gpu_without_torchao_is_refused_before_loading(monkeypatch):
    from glmdesk.engine.backends.transformers import loader, placement

    # As on a CUDA machine: the device choice says cuda (nothing is loaded before the refusal).
    monkeypatch.setattr(placement, "choose_device_and_dtype", lambda settings: ("cuda:0", "bf16", []))
    monkeypatch.setattr(torchao_quant, "torchao_missing_reason", lambda: "torchao is not installed.")
    with pytest.raises(GlmdeskError) as err:
        loader.load_model(LoadSettings(quantization="int4-wo"))
    assert err.value.kind == "quantization_unavailable"
    assert err.value.info.params["reason"] == "torchao_missing"


@pytest.mark.slow  # a fresh interpreter imports transformers (10-70 s on a shared machine)
def test_torchao_is_not_imported_until_a_model_is_quantized_with_it():
    """torchao takes seconds to import: the load stages and the Open model availability
    only look for it."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from glmdesk.engine.backends.transformers import acceleration, loader, placement\n"
        "from glmdesk.engine.backends.transformers.options import option_availability\n"
        "option_availability()\n"
        "print('torchao' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "False"
