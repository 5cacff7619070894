"""The cache-strategy interface and the full (grow-only) strategy."""

from __future__ import annotations

from abc import ABC, abstractmethod

import torch

from glmdesk.core.settings import CacheSettings
from glmdesk.engine.chunk import CacheStats


class CacheStrategy(ABC):
    """Owns one answer's KV cache and runs the forwards that use it.

    The decode loop calls :meth:`prefill` once with the prompt, then :meth:`step`
    once per generated token. Positions are explicit: token ``i`` of the answer's
    sequence always gets rotary position ``i``, whatever the cache evicted.

    Args:
        model: A transformers causal LM in eval mode.
        settings: Strategy parameters.
    """

    name = "base"

    def __init__(self, model, settings: CacheSettings) -> None:
        self.model = model
        self.settings = settings
        self.tokens_seen = 0

    @abstractmethod
    def prefill(self, input_ids: torch.Tensor) -> torch.Tensor:
        """Run the prompt through the model in chunks of ``settings.prefill_chunk``.

        Args:
            input_ids: Prompt ids, shape ``[1, n_prompt]``, ``n_prompt >= 1``.

        Returns:
            Logits of the last prompt position, shape ``[vocab]``, float32.
        """

    @abstractmethod
    def step(self, token_id: int) -> torch.Tensor:
        """Append one token and return the next-token logits, shape ``[vocab]``."""

    @abstractmethod
    def stats(self) -> CacheStats:
        """Current accounting (bytes held, tokens held/seen, state)."""

    def release(self) -> None:
        """Drop every tensor the cache holds (after an answer or an OOM)."""


def _forward(model, cache, input_ids: torch.Tensor, start: int) -> torch.Tensor:
    """One forward of ``input_ids`` ([1, n]) at positions ``start..start+n-1``.

    Returns the last position's logits, shape ``[vocab]``, as float32.
    ``logits_to_keep=1`` skips the vocabulary projection for every other position.
    """
    n = input_ids.shape[1]
    positions = torch.arange(start, start + n, device=input_ids.device).unsqueeze(0)
    out = model(
        input_ids=input_ids,
        past_key_values=cache,
        position_ids=positions,
        cache_position=positions[0],
        use_cache=True,
        logits_to_keep=1,
    )
    return out.logits[0, -1].float()


def tensor_bytes(*tensors: torch.Tensor | None) -> int:
    """Bytes held by the given tensors' storage (``numel x element size``)."""
    return sum(t.numel() * t.element_size() for t in tensors if t is not None)


class FullCacheStrategy(CacheStrategy):
    """Every token's keys and values are kept (transformers ``DynamicCache``).

    Memory grows with the conversation: 2 x layers x kv heads x head dim x bytes
    per element per token.
    """

    name = "full"

    def __init__(self, model, settings: CacheSettings) -> None:
        super().__init__(model, settings)
        from transformers import DynamicCache

        self.cache = DynamicCache(config=model.config)

    @torch.inference_mode()
    def prefill(self, input_ids: torch.Tensor) -> torch.Tensor:
        chunk = self.settings.prefill_chunk
        logits = None
        for start in range(0, input_ids.shape[1], chunk):
            part = input_ids[:, start : start + chunk]
            logits = _forward(self.model, self.cache, part, self.tokens_seen)
            self.tokens_seen += part.shape[1]
        assert logits is not None, "prefill needs at least one token"
        return logits

    @torch.inference_mode()
    def step(self, token_id: int) -> torch.Tensor:
        ids = torch.tensor([[token_id]], device=self.model.device)
        logits = _forward(self.model, self.cache, ids, self.tokens_seen)
        self.tokens_seen += 1
        return logits

    def stats(self) -> CacheStats:
        held = 0
        size = 0
        for layer in self.cache.layers:
            keys = getattr(layer, "keys", None)
            values = getattr(layer, "values", None)
            size += tensor_bytes(keys, values)
            if keys is not None and keys.dim() == 4:
                held = max(held, keys.shape[-2])
        return CacheStats("full", "full", size, held, self.tokens_seen, 0)

    def release(self) -> None:
        self.cache = None
