"""A fused decode step for Llama- and GLM-architecture models on the CPU.

One decode step of a small model on a CPU spends as much time in Python and in
small tensor operations as in the matrix kernels: transformers' forward goes
through its keyword plumbing, mask builders and attention dispatch for every one
of the 30 layers, and runs separate query, key, value, gate and up projections.
This module does two things, both lossless up to fp32 rounding order:

1. :func:`fuse_projections` joins each layer's ``q_proj``/``k_proj``/``v_proj``
   (and Llama's ``gate_proj``/``up_proj``) into one linear layer whose weight is
   their rows stacked, as llama.cpp and vLLM run them (``QKVParallelLinear``,
   ``MergedColumnParallelLinear``). The original attributes become
   :class:`ProjectionSlice` modules that return their columns of the fused
   output, so transformers' own forward (prefill, masked chunks) still runs and
   computes the fused product once per input. No weight is held twice.
2. :class:`FusedDecodeStep` runs one token through the decoder with the model's
   own modules and rotary embedding, in a plain loop: RMSNorm (``F.rms_norm``),
   fused QKV, RoPE on queries and keys together, the cache layer's ``update``,
   ``scaled_dot_product_attention`` with grouped-query heads, output projection,
   fused gate/up, SiLU gating, down projection. The reference implementation is
   transformers' ``modeling_llama.py`` / ``modeling_glm.py``; the tests compare
   logits with it.

Measured on 2 CPU cores with the embedded model (``benchmarks/decode_speed.py``):
see the README's decode-speed table.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any, Protocol, cast

import torch
import torch.nn.functional as F
from torch import nn

#: model_type values whose decoder layer this step reproduces exactly (tested).
SUPPORTED_MODEL_TYPES = ("llama", "glm")
#: Attribute of the model that holds its :class:`FusedDecodeStep`.
ATTRIBUTE = "glmdesk_decode_step"


class FusedProjection(nn.Module):
    """Several linear layers on the same input, run as one (rows stacked).

    Args:
        linear: The fused layer, ``[in] -> [sum(sizes)]`` (``nn.Linear``, or a
            :class:`~glmdesk.engine.backends.transformers.weight_only.WeightOnlyLinear` after quantization).
        sizes: Output features of each part, in order.

    Shapes:
        ``forward``: ``[..., in] -> [..., sum(sizes)]``.
    """

    def __init__(self, linear: nn.Module, sizes: tuple[int, ...]) -> None:
        super().__init__()
        self.linear = linear
        self.sizes = tuple(sizes)
        self.offsets = [0]
        for size in self.sizes:
            self.offsets.append(self.offsets[-1] + size)
        # (input, output, parts still to take): lets the parts of one input share
        # one product; cleared when the last part is taken.
        self._memo: tuple[torch.Tensor, torch.Tensor, int] | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x)

    def part(self, x: torch.Tensor, index: int) -> torch.Tensor:
        """Columns of part ``index`` of ``self(x)``, ``[..., sizes[index]]`` (a view).

        The product is computed once per input tensor: the next parts asked for with
        the same tensor object reuse it.
        """
        memo = self._memo
        if memo is not None and memo[0] is x:
            _, out, left = memo
        else:
            out, left = self.linear(x), len(self.sizes)
        left -= 1
        self._memo = (x, out, left) if left > 0 else None
        return out[..., self.offsets[index] : self.offsets[index + 1]]


class ProjectionSlice(nn.Module):
    """Stands in for one of the layers a :class:`FusedProjection` joined.

    Args:
        fused: The shared fused projection.
        index: Which part this was (0 for ``q_proj`` in ``(q, k, v)``).

    Shapes:
        ``forward``: ``[..., in] -> [..., fused.sizes[index]]``.
    """

    def __init__(self, fused: FusedProjection, index: int) -> None:
        super().__init__()
        self.fused = fused
        self.index = index

    @property
    def out_features(self) -> int:
        return self.fused.sizes[self.index]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fused.part(x, self.index)


def _fuse(owner: nn.Module, names: tuple[str, ...]) -> FusedProjection:
    parts = [getattr(owner, name) for name in names]
    first = parts[0]
    with torch.no_grad():
        linear = nn.Linear(
            first.in_features,
            sum(p.out_features for p in parts),
            bias=first.bias is not None,
            device="meta",
        )
        linear.weight = nn.Parameter(torch.cat([p.weight for p in parts]), requires_grad=False)
        if first.bias is not None:
            linear.bias = nn.Parameter(torch.cat([p.bias for p in parts]), requires_grad=False)
    fused = FusedProjection(linear, tuple(p.out_features for p in parts))
    for index, name in enumerate(names):
        setattr(owner, name, ProjectionSlice(fused, index))
    return fused


class _RMSNorm(Protocol):
    """A Llama/GLM RMS norm (``LlamaRMSNorm``): its scale and epsilon."""

    weight: torch.Tensor
    variance_epsilon: float


class _DecoderLayer(Protocol):
    """A decoder layer as transformers builds one for :data:`SUPPORTED_MODEL_TYPES`
    (``LlamaDecoderLayer``, ``GlmDecoderLayer``...)."""

    self_attn: Any  # q/k/v/o projections (ProjectionSlice once fused), head_dim, scaling
    mlp: Any  # gate and up (or gate_up) and down projections
    input_layernorm: _RMSNorm
    post_attention_layernorm: _RMSNorm


class _DecoderStack(Protocol):
    """A causal LM's ``model.model``: embeddings, rotary table, layers, final norm."""

    layers: Sequence[_DecoderLayer]
    norm: _RMSNorm
    embed_tokens: Callable[[torch.Tensor], torch.Tensor]
    rotary_emb: Callable[..., tuple[torch.Tensor, torch.Tensor]]


def _text_model(model) -> _DecoderStack | None:
    inner = getattr(model, "model", None)
    if inner is None or not hasattr(inner, "layers"):
        return None
    # nn.Module types its submodules as "Tensor | Module"; a supported model's decoder has
    # this shape (unsupported_reason checks the parts the fused step calls).
    return cast("_DecoderStack", inner)


def unsupported_reason(model, any_device: bool = False) -> str | None:
    """Why the fused step cannot run ``model`` (``None`` when it can).

    Args:
        model: A transformers causal LM, before :func:`fuse_projections`.
        any_device: Accept a GPU model too (the static decode path,
            :mod:`glmdesk.engine.decode.static_decode`, runs the fused layers compiled there;
            the eager fused step alone is for the CPU).

    Returns:
        A short English reason, or ``None``.
    """
    config = model.config
    if config.model_type not in SUPPORTED_MODEL_TYPES:
        return f"model type {config.model_type!r} (supported: {', '.join(SUPPORTED_MODEL_TYPES)})"
    if getattr(config, "hidden_act", "silu") != "silu":
        return f"activation {config.hidden_act!r}"
    attention = getattr(config, "_attn_implementation", None) or "sdpa"
    if attention != "sdpa":  # the step always calls scaled_dot_product_attention
        return f"attention implementation {attention!r} (the fused step uses sdpa)"
    if model.device.type != "cpu" and not any_device:
        return "runs on the CPU only (a GPU decodes with transformers' forward)"
    inner = _text_model(model)
    if inner is None or not len(inner.layers):
        return "no decoder layers found"
    layer = inner.layers[0]
    mlp_parts = ("gate_up_proj",) if hasattr(layer.mlp, "gate_up_proj") else ("gate_proj", "up_proj")
    for owner, names in (
        (layer.self_attn, ("q_proj", "k_proj", "v_proj", "o_proj")),
        (layer.mlp, (*mlp_parts, "down_proj")),
    ):
        for name in names:
            if type(getattr(owner, name, None)) is not nn.Linear:
                return f"{name} is not a plain linear layer (bitsandbytes, already fused or missing)"
    for norm in (layer.input_layernorm, layer.post_attention_layernorm, inner.norm):
        if not hasattr(norm, "variance_epsilon") or getattr(norm, "bias", None) is not None:
            return f"unexpected norm {type(norm).__name__}"
    return None


def fuse_projections(model, any_device: bool = False) -> int:
    """Join each decoder layer's Q/K/V (and gate/up) projections, in place.

    Call before weight-only quantization (which then quantizes the fused layers;
    int4 groups run along input channels, so stacking rows changes no group).

    Args:
        model: A supported model (:func:`unsupported_reason` is ``None``).
        any_device: As in :func:`unsupported_reason`.

    Returns:
        How many fused projections were made.

    Raises:
        ValueError: for a model the fused step does not support.
    """
    reason = unsupported_reason(model, any_device)
    inner = _text_model(model)
    if reason is not None or inner is None:  # no inner model is a reason too
        raise ValueError(f"cannot fuse this model's projections: {reason or 'no decoder layers found'}")
    made = 0
    for layer in inner.layers:
        _fuse(layer.self_attn, ("q_proj", "k_proj", "v_proj"))
        made += 1
        if not hasattr(layer.mlp, "gate_up_proj"):
            layer.mlp.gate_up_proj = _fuse(layer.mlp, ("gate_proj", "up_proj"))
            made += 1
    return made


class _Layer:
    """The parts of one decoder layer the step calls, looked up once."""

    def __init__(self, layer: _DecoderLayer) -> None:
        attn, mlp = layer.self_attn, layer.mlp
        self.norm1 = (layer.input_layernorm.weight, layer.input_layernorm.variance_epsilon)
        self.norm2 = (layer.post_attention_layernorm.weight, layer.post_attention_layernorm.variance_epsilon)
        self.qkv = attn.q_proj.fused
        self.o_proj = attn.o_proj
        gate_up = mlp.gate_up_proj
        self.gate_up = gate_up.fused if isinstance(gate_up, ProjectionSlice) else gate_up
        self.down_proj = mlp.down_proj


class FusedDecodeStep:
    """One token through a fused Llama/GLM decoder (see the module docstring).

    Args:
        model: A model after :func:`fuse_projections` (and any weight-only
            quantization: the layers are looked up here, once).

    Raises:
        ValueError: when ``model``'s projections were not fused.
    """

    def __init__(self, model) -> None:
        inner = _text_model(model)
        if inner is None or not isinstance(inner.layers[0].self_attn.q_proj, ProjectionSlice):
            raise ValueError("fuse_projections(model) must run before FusedDecodeStep(model)")
        config = model.config
        attn = inner.layers[0].self_attn
        self.heads = config.num_attention_heads
        self.kv_heads = getattr(config, "num_key_value_heads", None) or self.heads
        self.head_dim = attn.head_dim
        self.hidden = config.hidden_size
        self.scaling = attn.scaling
        self.intermediate = inner.layers[0].mlp.down_proj.in_features
        self.embed = inner.embed_tokens
        self.rotary = inner.rotary_emb
        self.final_norm = (inner.norm.weight, inner.norm.variance_epsilon)
        self.lm_head = model.lm_head
        self.layers = [_Layer(layer) for layer in inner.layers]
        self.sizes = (
            self.heads,
            self.kv_heads,
            self.head_dim,
            self.hidden,
            self.intermediate,
            self.heads != self.kv_heads,
        )
        # Llama rotates halves of the whole head (GPT-NeoX layout): done here on the
        # queries and keys together. GLM rotates interleaved pairs of part of the
        # head: its own function is called.
        self.apply_rotary = None
        if config.model_type != "llama":
            self.apply_rotary = sys.modules[type(attn).__module__].apply_rotary_pos_emb

    @staticmethod
    def accepts(cache, n_tokens: int, attention_mask) -> bool:
        """Whether a forward can take the fused step: one token, no explicit mask, and
        cache layers that return only held tokens (not a static buffer's tail)."""
        return (
            n_tokens == 1
            and attention_mask is None
            and not any(getattr(layer, "static", False) for layer in cache.layers)
        )

    def __call__(self, cache, input_ids: torch.Tensor, position: int) -> torch.Tensor:
        """Append one token to ``cache`` and return the next-token logits.

        Args:
            cache: The transformers ``Cache`` over glmdesk's layers (one per decoder layer).
            input_ids: ``[1, 1]`` token id.
            position: Rotary position of the token, in tokens.

        Returns:
            Logits, shape ``[vocab]``, float32.
        """
        x = self.embed(input_ids)  # [1, 1, hidden]
        # [1, 1, rotary dim]; broadcasts over [1, heads, 1, head_dim].
        cos, sin = self.rotary(x, torch.tensor([[position]], device=input_ids.device))
        layers = cache.layers
        return self.run_layers(x, cos, sin, lambda index, k, v: layers[index].update(k, v))

    def run_layers(
        self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, store, attend=None
    ) -> torch.Tensor:
        """The decoder layers, final norm and output projection on one token.

        Args:
            x: The token's embedding, ``[1, 1, hidden]``.
            cos: Rotary cosines for its position, ``[1, 1, rotary dim]``.
            sin: Rotary sines, same shape.
            store: ``store(layer index, key, value)`` keeps the token's key and value
                (``[1, kv_heads, 1, head_dim]``, rotary applied) and returns the keys
                and values to attend to, ``[1, kv_heads, held, head_dim]``, all visible.
            attend: ``attend(q, keys, values)`` -> ``[1, heads, 1, head_dim]``, with ``q``
                ``[1, heads, 1, head_dim]`` and what ``store`` returned; default: every
                key visible (``scaled_dot_product_attention`` with grouped-query heads).

        Returns:
            Logits, shape ``[vocab]``, float32.
        """
        # One tuple of plain ints: under torch.compile Dynamo keeps its items constant.
        heads, kv_heads, dim, hidden, inter, gqa = self.sizes
        q_end, k_end, half = heads * dim, (heads + kv_heads) * dim, dim // 2
        for index, layer in enumerate(self.layers):
            qkv = layer.qkv(F.rms_norm(x, (hidden,), *layer.norm1))
            v = qkv[..., k_end:].view(1, kv_heads, 1, dim)
            if self.apply_rotary is None:  # queries and keys rotated together
                qk = qkv[..., :k_end].view(1, heads + kv_heads, 1, dim)
                qk = qk * cos + torch.cat((-qk[..., half:], qk[..., :half]), dim=-1) * sin
                q, k = qk[:, :heads], qk[:, heads:]
            else:
                q = qkv[..., :q_end].view(1, heads, 1, dim)
                k = qkv[..., q_end:k_end].view(1, kv_heads, 1, dim)
                q, k = self.apply_rotary(q, k, cos, sin)
            keys, values = store(index, k, v)
            if attend is None:
                attended = F.scaled_dot_product_attention(q, keys, values, scale=self.scaling, enable_gqa=gqa)
            else:
                attended = attend(q, keys, values)
            x = x + layer.o_proj(attended.view(1, 1, q_end))
            gate_up = layer.gate_up(F.rms_norm(x, (hidden,), *layer.norm2))
            x = x + layer.down_proj(F.silu(gate_up[..., :inter]) * gate_up[..., inter:])
        return self.lm_head(F.rms_norm(x, (hidden,), *self.final_norm))[0, -1].float()
