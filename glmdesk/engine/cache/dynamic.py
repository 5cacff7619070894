"""The dynamic strategy: full while the projected KV size fits a budget, then the window.

Projected bytes for ``t`` tokens = ``t x kv_bytes_per_token`` (2 x layers x kv
heads x head dim x bytes per element). When the next forward would take the cache
past the budget, the held keys/values are moved into a sink + window ring
(StreamingLLM, arXiv:2309.17453) and the answer goes on: the conversation is not
lost, only its middle is evicted from then on.
"""

from __future__ import annotations

import torch

from glmdesk.core.settings import CacheSettings
from glmdesk.engine.cache.base import CacheStrategy, cache_bytes, kv_bytes_per_token, model_dtype, run_model
from glmdesk.engine.cache.layers import (
    GrowingLayer,
    SinkWindowLayer,
    attention_layers,
    make_cache,
    make_layers,
)
from glmdesk.engine.cache.window import RingBook, check_mask_support, mask_for
from glmdesk.engine.chunk import CacheStats
from glmdesk.engine.info import context_limit

#: Budget on the CPU when the settings give none, in MiB.
CPU_BUDGET_MIB = 1024
#: Memory left free on a GPU when the budget is read from it: the larger of this
#: share of the card and :data:`GPU_MARGIN_MIB`.
GPU_MARGIN_SHARE = 0.10
GPU_MARGIN_MIB = 512


def kv_budget_bytes(settings: CacheSettings, device: torch.device, reclaimable: int = 0) -> int:
    """KV memory budget, in bytes.

    ``settings.budget_mib`` when set; on CUDA, free memory (``torch.cuda.mem_get_info``)
    plus ``reclaimable`` (bytes glmdesk holds that the cache may take: the static step's
    idle KV slabs) minus a margin (10 % of the card, at least 512 MiB); else
    :data:`CPU_BUDGET_MIB`.
    """
    if settings.budget_mib is not None:
        return int(settings.budget_mib * 2**20)
    if device.type == "cuda":
        free, total = torch.cuda.mem_get_info(device)
        margin = max(int(total * GPU_MARGIN_SHARE), GPU_MARGIN_MIB * 2**20)
        return max(free + max(reclaimable, 0) - margin, 0)
    return CPU_BUDGET_MIB * 2**20


class DynamicCacheStrategy(CacheStrategy):
    """Full cache until ``budget // kv_bytes_per_token`` tokens, then sink + window.

    The window after the switch is ``settings.window``, shrunk when needed so that
    ``sinks + window`` fits the budget (never below 16 tokens).

    Args:
        model: A transformers causal LM.
        settings: ``budget_mib``, ``sinks``, ``window``, ``prefill_chunk``.
        reclaimable: Bytes of idle static KV slabs the cache will decode in, counted as
            free in a budget read from the GPU (see :func:`kv_budget_bytes`).

    Attributes:
        switch_tokens: Most tokens held in the full state (the predicted switch
            point), in tokens.
        switched_at: ``tokens_seen`` when the switch happened, or ``None``.
    """

    name = "dynamic"

    def __init__(self, model, settings: CacheSettings, reclaimable: int = 0) -> None:
        super().__init__(model, settings)
        check_mask_support(model)
        self.per_token = kv_bytes_per_token(model.config, model_dtype(model))
        self.budget = kv_budget_bytes(settings, self.device, reclaimable)
        self.switch_tokens = self.budget // self.per_token
        self.sinks = settings.sinks
        self.window = max(16, min(settings.window, self.switch_tokens - self.sinks))
        self.layers_count = model.config.get_text_config(decoder=True).num_hidden_layers
        limit = context_limit(model.config)
        self._cap = self.switch_tokens if limit is None else min(limit, self.switch_tokens)
        self.cache = self._fresh_cache()

    def _fresh_cache(self):
        self.book: RingBook | None = None
        self.switched_at: int | None = None
        cap = max(self._cap, 1)
        return make_cache(make_layers(self.model.config, lambda: GrowingLayer(max_tokens=cap)))

    def _keepable(self, common: int) -> int:
        """In the full state any prefix; once switched, only the whole held sequence
        (the new prompt extends it exactly), as in the sliding-window strategy: a fresh
        prefill of a shorter prefix would still be in the full state there."""
        if self.book is None:
            return common
        return common if common == self.tokens_seen else 0

    def _truncate(self, n: int) -> None:
        for layer in attention_layers(self.cache):
            layer.crop(n)

    @property
    def state(self) -> str:
        """``full`` or ``windowed``."""
        return "full" if self.book is None else "windowed"

    def _switch(self, seen: int) -> None:
        book = RingBook(self.sinks, self.window, self.device)
        src, dst = book.load_plan(seen)
        layers = []
        for old in self.cache.layers:
            if not isinstance(old, GrowingLayer):  # a linear-attention state carries on as it is
                layers.append(old)
                continue
            layer = SinkWindowLayer(self.sinks, self.window, book.plan)
            if seen:
                indexer = None if old.indexer_keys is None else old.indexer_keys[:, :seen]
                keys, values = old.kv_buffers()
                layer.load(keys[:, :, :seen], values[:, :, :seen], src, dst, indexer)
            layers.append(layer)
        self.cache = make_cache(layers)
        self.book = book
        self.switched_at = seen

    def _forward(self, input_ids: torch.Tensor, start: int) -> torch.Tensor:
        n = input_ids.shape[1]
        if self.book is None and start + n > self.switch_tokens:
            head = self.switch_tokens - start
            if head > 0:  # fill the full state exactly up to the switch point
                run_model(self.model, self.cache, input_ids[:, :head], start, step=self.decode_step)
                input_ids, start, n = input_ids[:, head:], start + head, n - head
            self._switch(start)
        if self.book is None:
            return run_model(self.model, self.cache, input_ids, start, step=self.decode_step)
        allowed = self.book.prepare(start, n)
        mask = None if allowed is None else mask_for(self.model, allowed)
        return run_model(self.model, self.cache, input_ids, start, mask, step=self.decode_step)

    def stats(self) -> CacheStats:
        if self.cache is None:
            return CacheStats(self.name, self.state, 0, 0, self.tokens_seen, 0)
        size = cache_bytes(self.cache)
        held = attention_layers(self.cache)[0].length if self.book is None else self.book.held
        return CacheStats(self.name, self.state, size, held, self.tokens_seen, self.tokens_seen - held)
