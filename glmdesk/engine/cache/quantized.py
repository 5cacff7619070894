"""The quantized strategy: transformers' ``QuantizedCache`` (KIVI-style, arXiv:2402.02750).

Backends, first importable wins: ``quanto`` (package ``optimum-quanto``, 4-bit),
``hqq`` (package ``hqq``, 4-bit), else transformers' built-in ``fp8`` (8-bit
float, per-tensor scale; no extra package, runs on the CPU). Memory still grows
with the conversation, at a quarter (4-bit) or half (fp8, from fp16) the bytes.
"""

from __future__ import annotations

import importlib.util

import torch

from glmdesk.core.errors import GlmdeskError
from glmdesk.core.settings import CacheSettings
from glmdesk.engine.cache.base import CacheStrategy, run_model, tensor_bytes
from glmdesk.engine.chunk import CacheStats

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
        if type(obj) is not torch.Tensor and hasattr(obj, "__tensor_flatten__"):
            names, _ = obj.__tensor_flatten__()
            return sum(_held_bytes(getattr(obj, name)) for name in names)
        return tensor_bytes(obj)
    return 0


class QuantizedCacheStrategy(CacheStrategy):
    """Keys and values stored quantized; full attention over the dequantized states.

    Lossy: logits differ slightly from the full cache. Slower per token than the
    full cache (every step dequantizes the whole cache).

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
        from transformers import QuantizedCache

        self.backend = backend or pick_backend()
        self.cache = QuantizedCache(self.backend, model.config)

    def _forward(self, input_ids: torch.Tensor, start: int) -> torch.Tensor:
        return run_model(self.model, self.cache, input_ids, start, step=self.decode_step)

    def stats(self) -> CacheStats:
        if self.cache is None:
            return CacheStats(self.name, "full", 0, 0, self.tokens_seen, 0)
        size = 0
        for layer in self.cache.layers:
            size += _held_bytes(layer._quantized_keys) + _held_bytes(layer._quantized_values)
            if layer.keys is not None and layer.keys.dim() == 4:  # residual, not yet quantized
                size += tensor_bytes(layer.keys, layer.values)
        held = self.cache.get_seq_length()
        return CacheStats(self.name, "full", size, held, self.tokens_seen, 0)
