"""The full strategy: every token's keys and values are kept."""

from __future__ import annotations

import torch

from glmdesk.core.settings import CacheSettings
from glmdesk.engine.cache.base import CacheStrategy, cache_bytes, run_model
from glmdesk.engine.cache.layers import GrowingLayer, attention_layers, make_cache, make_layers
from glmdesk.engine.chunk import CacheStats
from glmdesk.engine.info import context_limit


class FullCacheStrategy(CacheStrategy):
    """Every token's keys and values are kept; memory grows with the conversation.

    Storage is one buffer per layer that doubles when full (capped at the context
    window), so appending a token copies only that token: no per-token
    ``torch.cat`` of the whole cache. Bytes held per token:
    :func:`~glmdesk.engine.cache.base.kv_bytes_per_token`; the reported bytes are
    the allocated buffers (up to 2x the tokens held).

    Args:
        model: A transformers causal LM.
        settings: Cache settings (``prefill_chunk`` is used).
        static: Preallocate ``max_tokens`` and return the whole buffer each step
            (static shapes for CUDA graphs). Not yet run on a GPU.
        max_tokens: Most tokens held (default: the model's context window).
        initial_tokens: First allocation per layer, in tokens.
    """

    name = "full"

    def __init__(
        self,
        model,
        settings: CacheSettings,
        static: bool = False,
        max_tokens: int | None = None,
        initial_tokens: int = 256,
    ) -> None:
        super().__init__(model, settings)
        self._layer_args = (max_tokens or context_limit(model.config), initial_tokens, static)
        self.cache = self._fresh_cache()

    def _fresh_cache(self):
        return make_cache(make_layers(self.model.config, lambda: GrowingLayer(*self._layer_args)))

    def _truncate(self, n: int) -> None:
        for layer in attention_layers(self.cache):
            layer.crop(n)

    def _forward(self, input_ids: torch.Tensor, start: int) -> torch.Tensor:
        return run_model(self.model, self.cache, input_ids, start, step=self.decode_step)

    def stats(self) -> CacheStats:
        if self.cache is None:
            return CacheStats(self.name, "full", 0, 0, self.tokens_seen, 0)
        size = cache_bytes(self.cache)
        held = attention_layers(self.cache)[0].length
        return CacheStats(self.name, "full", size, held, self.tokens_seen, 0)
