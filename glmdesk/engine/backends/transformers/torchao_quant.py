"""Weight-only int8 / int4 through torchao's ``quantize_`` (CUDA's fast 4-bit and 8-bit).

Batch-1 decoding reads every weight once per token, so fewer bytes per weight is
more tokens/s, if the matmul kernel reads them at the memory's speed. On CUDA
bitsandbytes' NF4 and LLM.int8 do not (issue 29: 41-45 and 18-19 tokens/s against
bf16's 53-62 on an H200); torchao's weight-only kernels do (torchao's README:
Llama-3.1-8B on an H100, bf16 126.9 tokens/s, int8 weight-only 198.9, int4
weight-only in groups of 64 241.4, all under ``torch.compile``).

Schemes (:data:`SCHEMES`, named by :data:`glmdesk.core.settings.QUANTIZATION_SCHEMES`):

- ``torchao-int8``: ``Int8WeightOnlyConfig``, one symmetric scale per output row
  (CPU and CUDA).
- ``torchao-int4``: ``Int4WeightOnlyConfig`` with the ``tile_packed_to_4d`` layout
  (tinygemm's ``_weight_int4pack_mm``, CUDA), asymmetric groups of :data:`GROUP_SIZE`
  input channels; on the CPU ``PrototypeInt4WeightOnlyConfig`` (the same grid in
  torch's ``_weight_int4pack_mm_for_cpu`` layout).
- ``torchao-int4-hqq``: the same kernels with HQQ's scale and zero choice
  (half-quadratic optimisation, Badri & Shaji 2023, torchao's ``hqq`` algorithm).

torchao takes seconds to import: it is imported here only when a model is quantized
(:func:`torchao_missing_reason` only looks for it).
"""

from __future__ import annotations

import importlib.util

import torch
from torch import nn

#: Scheme -> bits.
SCHEMES = {"torchao-int8": 8, "torchao-int4": 4, "torchao-int4-hqq": 4}
#: Input channels per int4 group (torchao's figures quoted above use 64).
GROUP_SIZE = 64


def torchao_missing_reason() -> str | None:
    """``None`` when torchao is installed (found, not imported), else a sentence."""
    if importlib.util.find_spec("torchao") is None:
        return "torchao is not installed (pip install 'glmdesk[cuda-quant]')."
    return None


def _config(scheme: str, device_type: str, group_size: int):
    """The torchao config object for ``scheme`` on ``device_type`` (``cpu`` / ``cuda``)."""
    from torchao.quantization import Int4WeightOnlyConfig, Int8WeightOnlyConfig
    from torchao.quantization.quantize_.workflows import Int4ChooseQParamsAlgorithm, Int4PackingFormat

    if scheme == "torchao-int8":
        return Int8WeightOnlyConfig()
    algorithm = (
        Int4ChooseQParamsAlgorithm.HQQ if scheme.endswith("-hqq") else Int4ChooseQParamsAlgorithm.TINYGEMM
    )
    if device_type == "cuda":
        return Int4WeightOnlyConfig(
            group_size=group_size,
            int4_packing_format=Int4PackingFormat.TILE_PACKED_TO_4D,
            int4_choose_qparams_algorithm=algorithm,
        )
    from torchao.prototype.quantization.int4.inference_workflow import PrototypeInt4WeightOnlyConfig

    return PrototypeInt4WeightOnlyConfig(group_size=group_size, int4_choose_qparams_algorithm=algorithm)


def quantizable(layer: nn.Linear, bits: int, group_size: int = GROUP_SIZE) -> bool:
    """Whether torchao's ``bits``-bit layout holds ``layer``'s weight ``[out, in]``
    (int4: ``in % group_size == 0`` and ``out`` a multiple of the packed tile, 8 rows
    for CUDA's tinygemm, 16 for the CPU layout)."""
    out_features, in_features = layer.weight.shape
    tile = 8 if layer.weight.device.type == "cuda" else 16
    return bits == 8 or (in_features % group_size == 0 and out_features % tile == 0)


@torch.no_grad()
def quantize_model(model: nn.Module, scheme: str, group_size: int = GROUP_SIZE) -> int:
    """Quantize the ``nn.Linear`` layers of ``model`` in place with torchao.

    Weights are converted to bf16 first (tinygemm and torchao's int8 path compute in
    bf16; the model's norms and embedding keep their dtype, and each layer returns
    its input's dtype). The output projection (``lm_head``) gets int8 under the int4
    schemes, as llama.cpp's 4-bit types keep ``output.weight`` at 6-8 bits (logits
    are the most sensitive product); layers whose shape int4 cannot hold stay as
    they are.

    Args:
        model: A model on the CPU or a CUDA device.
        scheme: One of :data:`SCHEMES`.
        group_size: Input channels per int4 group (32, 64, 128 or 256).

    Returns:
        How many layers were quantized.

    Raises:
        ValueError: for an unknown scheme.
        ImportError: when torchao is not installed.
    """
    if scheme not in SCHEMES:
        raise ValueError(f"unknown torchao scheme {scheme!r}; choose one of {tuple(SCHEMES)}")
    from torchao.quantization import quantize_

    bits = SCHEMES[scheme]
    get_output = getattr(model, "get_output_embeddings", None)
    output = get_output() if callable(get_output) else None
    chosen: dict[str, list[nn.Linear]] = {"main": [], "output": []}
    for module in model.modules():  # each module once, however many names it has
        if isinstance(module, nn.Linear) and module.weight.is_floating_point():
            if module is output and bits == 4:
                chosen["output"].append(module)
            elif quantizable(module, bits, group_size):
                chosen["main"].append(module)
    for layers, name in ((chosen["main"], scheme), (chosen["output"], "torchao-int8")):
        _to_bf16_io(layers)
        # One layer at a time: glmdesk's fused projection is registered under each of
        # the q/k/v names it replaces, and quantize_'s walk over the model would reach it
        # (and quantize it) once per name.
        for layer in layers:
            quantize_(layer, _config(name, layer.weight.device.type, group_size))
    return len(chosen["main"]) + len(chosen["output"])


def _to_bf16_io(layers: list[nn.Linear]) -> None:
    """Store each layer's weight (and bias) in bf16; a layer that was in another dtype
    casts its input to bf16 and its output back to that dtype (an fp32 model keeps
    fp32 around them)."""
    for layer in layers:
        if layer.weight.dtype == torch.bfloat16:
            continue
        # torch types a module's attributes as tensors or modules only; this one is a dtype.
        layer.io_dtype = layer.weight.dtype  # pyright: ignore[reportArgumentType]
        layer.to(torch.bfloat16)
        layer.register_forward_pre_hook(_input_to_bf16)
        layer.register_forward_hook(_output_to_io_dtype)


def _input_to_bf16(_module: nn.Module, args: tuple) -> tuple:
    x, *rest = args
    return (x.to(torch.bfloat16), *rest)


def _output_to_io_dtype(module: nn.Module, _args: tuple, output: torch.Tensor) -> torch.Tensor:
    io_dtype: torch.dtype = module.io_dtype  # pyright: ignore[reportAssignmentType] - a dtype (_to_bf16_io)
    return output.to(io_dtype)
