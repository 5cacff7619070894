"""Weight-only int8 / int4 layers: exact against their own dequantized weights, and the
embedded model still answers through them."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from glmdesk.core.settings import LoadSettings
from glmdesk.engine.backends.transformers import weight_only
from glmdesk.engine.backends.transformers.loader import load_model
from glmdesk.engine.backends.transformers.weight_only import GROUP_SIZE, WeightOnlyLinear, quantize_linears


def dequantized(layer: WeightOnlyLinear) -> torch.Tensor:
    """The float weight ``[out, in]`` a quantized layer stands for, from its stored codes."""
    if layer.bits == 8:
        return layer.qweight.float() * layer.scales.float()[:, None]
    # Recover codes by running the kernel on the identity (tinygemm's packing is opaque).
    eye = torch.eye(layer.in_features, dtype=layer.scales.dtype)
    return torch._weight_int4pack_mm_for_cpu(eye, layer.qweight, GROUP_SIZE, layer.scales).float().T


@pytest.mark.parametrize("bits", [8, 4])
def test_layer_matches_its_dequantized_weight(bits):
    torch.manual_seed(0)
    linear = nn.Linear(128, 64, bias=True)
    layer = WeightOnlyLinear(linear, bits)
    x = torch.randn(3, 5, 128)
    # The layer computes in bf16: compare with the same rounding of the input, in fp32.
    reference = x.bfloat16().float() @ dequantized(layer).T + linear.bias
    out = layer(x)
    assert out.dtype == torch.float32 and out.shape == (3, 5, 64)
    assert (out - reference).abs().max() <= 1e-2 * reference.abs().max()
    # Quantization error: half a step of each scheme's grid (+ bf16 rounding of the scales).
    error = (dequantized(layer) - linear.weight).abs().max()
    top = linear.weight.abs().max()
    step = top / 127 if bits == 8 else 2 * top / 15
    assert error <= step / 2 + top * 2**-7


def test_int4_keeps_layers_it_cannot_pack():
    model = nn.Sequential(nn.Linear(64, 16), nn.Linear(16, 8), nn.Linear(8, 3))
    assert quantize_linears(model, "int4-wo") == 1
    assert isinstance(model[0], WeightOnlyLinear)
    assert isinstance(model[1], nn.Linear) and isinstance(model[2], nn.Linear)
    assert quantize_linears(nn.Sequential(nn.Linear(8, 3)), "int8-wo") == 1


def test_unknown_scheme_is_refused():
    with pytest.raises(ValueError, match="int8-wo"):
        quantize_linears(nn.Linear(4, 4), "int3")


@pytest.mark.parametrize("scheme", ["int8-wo", "int4-wo"])
def test_weight_only_embedded_model_answers(embedded_folder, scheme):
    from tests.engine.test_loader import answer

    assert weight_only.kernels_available(weight_only.SCHEMES[scheme])
    loaded = load_model(LoadSettings(quantization=scheme))
    assert loaded.info.quantization == scheme
    quantized = [m for m in loaded.model.modules() if isinstance(m, WeightOnlyLinear)]
    # 30 layers x 4 projections (QKV and gate/up fused) + the output projection.
    assert len(quantized) == 121
    assert loaded.info.footprint_mib < (300 if scheme == "int8-wo" else 220)
    assert "Paris" in answer(loaded)


def test_threads_setting_applies_and_zero_restores_the_default(embedded_folder):
    from glmdesk.engine.backends.transformers.acceleration import DEFAULT_THREADS

    try:
        load_model(LoadSettings(threads=1))
        assert torch.get_num_threads() == 1
        load_model(LoadSettings(threads=0))
        assert torch.get_num_threads() == DEFAULT_THREADS
    finally:
        torch.set_num_threads(DEFAULT_THREADS)
