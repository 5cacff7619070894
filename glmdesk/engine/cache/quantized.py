"""The quantized strategy: transformers' ``QuantizedCache`` (KIVI-style, arXiv:2402.02750).

Backends, first importable wins: ``quanto`` (package ``optimum-quanto``, 4-bit),
``hqq`` (package ``hqq``, 4-bit), else transformers' built-in ``fp8`` (8-bit
float, per-tensor scale; no extra package, runs on the CPU). Memory still grows
with the conversation, at a quarter (4-bit) or half (fp8, from fp16) the bytes.
"""

from __future__ import annotations

import importlib.util
from typing import TYPE_CHECKING, cast

import torch
from transformers.cache_utils import LinearAttentionCacheLayerMixin

from glmdesk.core.errors import GlmdeskError
from glmdesk.core.settings import CacheSettings
from glmdesk.engine.cache.base import CacheStrategy, run_model, tensor_bytes
from glmdesk.engine.chunk import CacheStats

if TYPE_CHECKING:
    from transformers.cache_utils import BaseQuantizedLayer

#: Backends in order of preference, with the module that must be importable.
BACKENDS = (("quanto", "optimum.quanto"), ("hqq", "hqq"), ("fp8", None))


def _importable(module: str | None) -> bool:
    if module is None:
        return hasattr(torch, "float8_e4m3fn")
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


def pick_backend() -> str:
    """The first usable backend name.

    Raises:
        GlmdeskError: ``invalid_setting`` when none can run, naming the package to install.
    """
    for name, module in BACKENDS:
        if _importable(module):
            return name
    raise GlmdeskError(
        "invalid_setting",
        "The quantized KV cache needs a quantization backend: run pip install optimum-quanto.",
        name="kv_cache",
        value="quantized",
        reason="pip install optimum-quanto",
    )


def _held_bytes(obj) -> int:
    """Bytes of every tensor inside ``obj`` (tensors, tuples, dicts, quanto tensors)."""
    if obj is None:
        return 0
    if isinstance(obj, (tuple, list)):
        return sum(_held_bytes(item) for item in obj)
    if isinstance(obj, dict):
        return sum(_held_bytes(item) for item in obj.values())
    if isinstance(obj, torch.Tensor):
        flatten = getattr(obj, "__tensor_flatten__", None)  # a traceable tensor subclass's parts
        if type(obj) is not torch.Tensor and flatten is not None:
            names, _ = flatten()
            return sum(_held_bytes(getattr(obj, name)) for name in names)
        return tensor_bytes(obj)
    return 0


def _layer_class(backend: str):
    from transformers.cache_utils import Fp8QuantizedLayer, HQQQuantizedLayer, QuantoQuantizedLayer

    return {"quanto": QuantoQuantizedLayer, "hqq": HQQQuantizedLayer, "fp8": Fp8QuantizedLayer}[backend]


def _indexed(layer_class):
    """``layer_class`` with a DSA indexer-key cache beside its quantized keys and values.

    The indexer keys (``[batch, tokens, index_head_dim]``, a fraction of a latent's
    size) stay in the model's dtype: the indexer's top-k choice is what a rounding
    error would change, and the sparse attention follows that choice."""

    class IndexedQuantizedLayer(layer_class):
        indexer_keys: torch.Tensor | None = None

        def _quantize(self, tensor, *args, **kwargs):
            # GLM-5.3-Flash's MLA has no rotary key part: its ``values`` are 0 wide, and
            # fp8's per-tensor scale cannot be calibrated on nothing.
            if (
                tensor.numel() == 0
                and not args
                and kwargs.get("scale") is None
                and hasattr(self, "fp8_dtype")
            ):
                kwargs["scale"] = torch.ones((), dtype=torch.float32, device=tensor.device)
            return super()._quantize(tensor, *args, **kwargs)

        def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
            out = super().update(key_states, value_states, *args, **kwargs)
            if hasattr(self, "fp8_dtype"):
                # GLM-5.3-Flash's pooled indexer reads the held length from
                # ``keys.shape[-2]``; fp8 holds its keys quantized only, so ``keys`` is a
                # zero-stride view of that shape (no memory behind it).
                b, h, _, d = key_states.shape
                self.keys = key_states.new_zeros(()).expand(b, h, self.cumulative_length, d)
            return out

        def update_indexer(self, indexer_key_states: torch.Tensor) -> torch.Tensor:
            """Append ``[batch, n, index_head_dim]`` keys; return all held, in position order."""
            if self.indexer_keys is None:
                self.indexer_keys = indexer_key_states.clone()
            else:
                self.indexer_keys = torch.cat([self.indexer_keys, indexer_key_states], dim=1)
            return self.indexer_keys

    return IndexedQuantizedLayer


def quantized_cache(backend: str, config):
    """A quantized KV cache for ``config``'s decoder.

    Full-attention models get transformers' ``QuantizedCache``. GLM-5's sparse-attention
    layers (``indexed_attention``) get the same quantized layers with an indexer-key
    cache, and GLM-5.3-Flash's linear-attention layers keep their fixed-size state in
    transformers' ``LinearAttentionLayer`` (there is nothing per token to quantize).
    """
    from transformers import QuantizedCache
    from transformers.cache_utils import Cache, LinearAttentionLayer

    from glmdesk.engine.cache.layers import LINEAR_LAYER_TYPES, layer_types

    kinds = layer_types(config)
    if all(kind == "full_attention" for kind in kinds):
        return QuantizedCache(backend, config)
    indexed = _indexed(_layer_class(backend))
    return Cache(
        layers=[LinearAttentionLayer() if kind in LINEAR_LAYER_TYPES else indexed() for kind in kinds]
    )


def _quantized_layers(cache) -> list:
    """The layers holding quantized keys and values (not linear-attention states)."""
    return [layer for layer in cache.layers if not hasattr(layer, "recurrent_states")]


class QuantizedCacheStrategy(CacheStrategy):
    """Keys and values stored quantized; full attention over the dequantized states.

    Lossy: logits differ slightly from the full cache. Slower per token than the
    full cache (every step dequantizes the whole cache). The stored values depend on
    how the sequence arrived (fp8 calibrates its per-tensor scale on the first chunk;
    the 4-bit backends re-quantize every ``residual_length`` tokens), so a kept cache
    reused for the next prompt is exact for that cache, not bit-equal to a fresh
    prefill of the whole prompt.

    Args:
        model: A transformers causal LM with full-attention layers only.
        settings: ``prefill_chunk`` is used.
        backend: ``quanto``, ``hqq`` or ``fp8``; ``None`` picks with :func:`pick_backend`.

    Raises:
        GlmdeskError: ``invalid_setting`` when no backend can run.
    """

    name = "quantized"

    def __init__(self, model, settings: CacheSettings, backend: str | None = None) -> None:
        super().__init__(model, settings)
        self.backend = backend or pick_backend()
        self.cache = self._fresh_cache()
        self.first_chunk = 0  # tokens of the chunk fp8 calibrated its scale on

    def _fresh_cache(self):
        return quantized_cache(self.backend, self.model.config)

    def _keepable(self, common: int) -> int:
        """fp8 states are appended under a scale frozen at the first chunk, so a prefix
        that still holds that whole chunk is exactly what the same pieces fed anew would
        give; the 4-bit backends re-quantize the whole cache every ``residual_length``
        tokens, so they keep the whole held sequence or nothing."""
        if common == self.tokens_seen or (self.backend == "fp8" and common >= self.first_chunk):
            return common
        return 0

    def _truncate(self, n: int) -> None:
        for layer in _quantized_layers(self.cache):
            if getattr(layer, "indexer_keys", None) is not None:
                layer.indexer_keys = layer.indexer_keys[:, :n].clone()
            keys, key_scale = layer._quantized_keys
            values, value_scale = layer._quantized_values
            layer._quantized_keys = (keys[:, :, :n].clone(), key_scale)
            layer._quantized_values = (values[:, :, :n].clone(), value_scale)
            layer.cumulative_length = n

    def _forward(self, input_ids: torch.Tensor, start: int) -> torch.Tensor:
        if start == 0:
            self.first_chunk = input_ids.shape[1]
        return run_model(self.model, self.cache, input_ids, start, step=self.decode_step)

    def stats(self) -> CacheStats:
        if self.cache is None:
            return CacheStats(self.name, "full", 0, 0, self.tokens_seen, 0)
        size = 0
        for layer in self.cache.layers:
            if isinstance(layer, LinearAttentionCacheLayerMixin):  # a fixed-size state
                size += _held_bytes(layer.conv_states) + _held_bytes(layer.recurrent_states)
                continue
            # The other layers of a quantized cache are quantized ones (see quantized_cache).
            quantized = cast("BaseQuantizedLayer", layer)
            size += _held_bytes(quantized._quantized_keys) + _held_bytes(quantized._quantized_values)
            size += _held_bytes(getattr(layer, "indexer_keys", None))
            if layer.keys is not None and layer.keys.dim() == 4 and layer.keys.stride(-2):  # residual
                size += tensor_bytes(layer.keys, layer.values)
        held = self.cache.get_seq_length()
        return CacheStats(self.name, "full", size, held, self.tokens_seen, 0)
