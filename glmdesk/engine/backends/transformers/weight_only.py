"""Weight-only int8 / int4 linear layers for CPU decoding, on torch's own kernels.

Decoding one token reads every weight once, so on a CPU its speed is bounded by
memory bandwidth: fewer bytes per weight, more tokens/s. These layers keep the
weights quantized and compute in bf16 (input and output cast back to the model's
dtype, so norms, attention and the KV cache keep theirs):

- ``int8``: one symmetric scale per output channel, ``w = q * s`` with
  ``q in [-127, 127]`` (LLM.int8's absmax rounding without the outlier split;
  gpt-fast's ``WeightOnlyInt8Linear``), matmul by ``torch._weight_int8pack_mm``.
- ``int4``: asymmetric groups of 32 input channels, ``w = q * s + m`` with
  ``q in [0, 15]`` (the layout of GGUF's Q4_1 blocks; gpt-fast's / torchao's
  int4 weight-only), matmul by ``torch._weight_int4pack_mm_for_cpu`` (tinygemm
  layout, which stores ``(s, m + 8 s)`` per group and computes ``(q - 8) s + z``).

torchao 0.18 wraps the same kernels in tensor subclasses, which are 2x slower than
plain fp32 in eager mode here (they are built for ``torch.compile``); these
modules call the kernels directly. Quality is lossy: see
``benchmarks/decode_speed.py`` for perplexity and greedy agreement.
"""

from __future__ import annotations

import torch
from torch import nn

from glmdesk.core.settings import WEIGHT_ONLY_QUANTIZATIONS

#: Weight-only schemes: name (``int8-wo``, ``int4-wo``) -> bits. On CUDA the same
#: names run torchao's kernels (:mod:`glmdesk.engine.backends.transformers.torchao_quant`).
SCHEMES: dict[str, int] = dict(zip(WEIGHT_ONLY_QUANTIZATIONS, (8, 4), strict=True))
#: Input channels per int4 group (GGUF Q4_0/Q4_1 blocks are 32 wide too).
GROUP_SIZE = 32


def kernels_available(bits: int) -> bool:
    """Whether this torch build has the CPU kernel for ``bits``-bit weights."""
    name = "_weight_int8pack_mm" if bits == 8 else "_weight_int4pack_mm_for_cpu"
    return hasattr(torch.ops.aten, name)


class WeightOnlyLinear(nn.Module):
    """A ``nn.Linear`` whose weight is stored as int8 or int4 (CPU only).

    Args:
        linear: The layer to quantize (weight ``[out, in]``, float).
        bits: 8 or 4. For 4, ``in`` must be a multiple of 32 and ``out`` of 8
            (the packed layout's tiles); :func:`quantize_linears` skips others.

    Shapes:
        ``forward``: ``[..., in] -> [..., out]``, returned in the input's dtype
        (computed in bf16, scales stored in bf16).

    Raises:
        ValueError: for other bit widths or shapes the int4 layout cannot hold.
    """

    qweight: torch.Tensor  # buffers registered in __init__
    scales: torch.Tensor

    def __init__(self, linear: nn.Linear, bits: int) -> None:
        super().__init__()
        if bits not in (4, 8):
            raise ValueError(f"weight-only quantization takes 8 or 4 bits, not {bits}")
        weight = linear.weight.detach().float()
        out_features, in_features = weight.shape
        if bits == 4 and not can_pack_int4(linear):
            raise ValueError(f"int4 needs in % {GROUP_SIZE} == 0 and out % 8 == 0, not {tuple(weight.shape)}")
        self.in_features = in_features
        self.out_features = out_features
        self.bits = bits
        # torch's CPU kernels are several times faster with bf16 activations than fp32
        # (measured: int4 7 vs 40 tokens/s on the embedded model); the layer casts its
        # input and output, so the rest of the model keeps its own dtype.
        dtype = torch.bfloat16
        if bits == 8:
            scale = weight.abs().amax(dim=1).clamp(min=1e-12) / 127
            q = (weight / scale[:, None]).round().clamp(-127, 127).to(torch.int8)
            self.register_buffer("qweight", q)
            self.register_buffer("scales", scale.to(dtype))
        else:
            groups = weight.reshape(out_features, -1, GROUP_SIZE)
            low = groups.amin(dim=-1, keepdim=True)
            scale = ((groups.amax(dim=-1, keepdim=True) - low) / 15).clamp(min=1e-12)
            q = (
                ((groups - low) / scale)
                .round()
                .clamp(0, 15)
                .to(torch.int32)
                .reshape(out_features, in_features)
            )
            self.register_buffer("qweight", torch._convert_weight_to_int4pack_for_cpu(q, 1))  # pyright: ignore[reportPrivateImportUsage]
            # [groups, out, 2]: (scale, zero) with zero = low + 8 * scale (tinygemm's centre).
            scales_and_zeros = torch.cat([scale, low + 8 * scale], dim=-1).transpose(0, 1).contiguous()
            self.register_buffer("scales", scales_and_zeros.to(dtype))
        self.bias = None if linear.bias is None else nn.Parameter(linear.bias.detach(), requires_grad=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        flat = x.reshape(-1, self.in_features).to(self.scales.dtype)
        if self.bits == 8:
            # torch's CPU weight-only kernels are private ops (no public name exists).
            y = torch._weight_int8pack_mm(flat, self.qweight, self.scales)  # pyright: ignore[reportPrivateImportUsage]
        else:
            y = torch._weight_int4pack_mm_for_cpu(flat, self.qweight, GROUP_SIZE, self.scales)  # pyright: ignore[reportPrivateImportUsage]
        y = y.reshape(*shape[:-1], self.out_features).to(x.dtype)
        return y if self.bias is None else y + self.bias

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bits={self.bits}"


def can_pack_int4(linear: nn.Linear) -> bool:
    """Whether ``linear``'s weight fits the int4 layout (in % 32 == 0, out % 8 == 0)."""
    out_features, in_features = linear.weight.shape
    return in_features % GROUP_SIZE == 0 and out_features % 8 == 0


def quantize_linears(model: nn.Module, scheme: str) -> int:
    """Replace every ``nn.Linear`` of ``model`` with a :class:`WeightOnlyLinear`, in place.

    The output projection (``lm_head``) is quantized too, even when it shares its
    weight with the input embedding (the embedding keeps the float copy); under
    ``int4-wo`` it gets int8, as llama.cpp's 4-bit types keep ``output.weight`` at
    6-8 bits: logits are the most sensitive product. Layers whose shape the int4
    layout cannot hold stay float.

    For weights that came from a GGUF Q4_1 file (the embedded model) ``int4-wo``
    is exact: Q4_1 blocks are 32 input channels wide with codes 0 and 15 at each
    block's min and max, which is the grid rebuilt here.

    Args:
        model: A model on the CPU.
        scheme: ``int8-wo`` or ``int4-wo``.

    Returns:
        How many layers were replaced.

    Raises:
        ValueError: for an unknown scheme, or a model on another device.
    """
    if scheme not in SCHEMES:
        raise ValueError(f"unknown weight-only scheme {scheme!r}; choose one of {tuple(SCHEMES)}")
    get_output = getattr(model, "get_output_embeddings", None)
    output = get_output() if callable(get_output) else None
    replaced = 0
    for module in list(model.modules()):
        for name, child in list(module.named_children()):
            if not isinstance(child, nn.Linear):
                continue
            if child.weight.device.type != "cpu":
                raise ValueError("weight-only int8/int4 runs on the CPU only")
            bits = 8 if child is output else SCHEMES[scheme]
            if bits == 4 and not can_pack_int4(child):
                continue
            setattr(module, name, WeightOnlyLinear(child, bits))
            replaced += 1
    return replaced
