"""KV storage layers that never re-copy what they hold (transformers ``CacheLayerMixin``).

transformers' ``DynamicLayer`` appends with ``torch.cat``: every token re-copies
the whole cache (about 0.4 GB per token for the embedded model at 8K tokens).
:class:`GrowingLayer` writes into a preallocated buffer that doubles when full
(amortised O(1) copies per token); :class:`SinkWindowLayer` keeps S attention
sinks and the last W tokens in a fixed ring buffer of ``S + W`` slots that never
reallocates once full (StreamingLLM, Xiao et al. 2023, arXiv:2309.17453).

Both store keys after the rotary embedding, so a held key keeps the position it
was computed at. Buffers have shape ``[batch, kv_heads, capacity, head_dim]``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from transformers.cache_utils import Cache, CacheLayerMixin


class _BufferLayer(CacheLayerMixin):
    """A layer whose keys/values live in buffers grown by doubling up to ``max_tokens``.

    Args:
        max_tokens: Capacity never exceeded by growth (``None``: unbounded), in tokens.
        initial_tokens: Smallest allocation, in tokens.
    """

    is_sliding = False
    is_compileable = False
    zero_fill = False

    def __init__(self, max_tokens: int | None = None, initial_tokens: int = 256) -> None:
        super().__init__()
        self.max_tokens = max_tokens
        self.initial_tokens = initial_tokens
        self.length = 0
        self.reallocations = 0

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        self.device = key_states.device
        self.keys = key_states.new_zeros((*key_states.shape[:2], 0, key_states.shape[-1]))
        self.values = value_states.new_zeros((*value_states.shape[:2], 0, value_states.shape[-1]))
        self.is_initialized = True

    @property
    def capacity(self) -> int:
        """Slots allocated, in tokens."""
        return 0 if self.keys is None else self.keys.shape[-2]

    def reserve(self, tokens: int) -> None:
        """Make room for ``tokens`` slots, doubling (capped at ``max_tokens``); keeps the content."""
        if tokens <= self.capacity:
            return
        size = max(tokens, 2 * self.capacity, self.initial_tokens)
        if self.max_tokens is not None:
            size = min(size, max(self.max_tokens, tokens))
        self.reallocate(size, zero=self.zero_fill)

    def reallocate(self, size: int, zero: bool = False) -> None:
        """Move the held slots into new buffers of exactly ``size`` slots (``>= length``).

        Args:
            size: New capacity, in tokens.
            zero: Zero the slots past ``length``. They are never read unless the whole
                buffer is attended to (static shapes), where a mask hides them: they
                must then be finite (a masked NaN still poisons the weighted sum).
        """
        alloc = self.keys.new_zeros if zero else self.keys.new_empty
        keys = alloc((*self.keys.shape[:2], size, self.keys.shape[-1]))
        values = alloc((*self.values.shape[:2], size, self.values.shape[-1]))
        keys[:, :, : self.length].copy_(self.keys[:, :, : self.length])
        values[:, :, : self.length].copy_(self.values[:, :, : self.length])
        self.keys, self.values = keys, values
        self.reallocations += 1

    def slot_buffers(self, tokens: int) -> tuple[torch.Tensor, torch.Tensor, int]:
        """Room for ``tokens`` more slots, for a step that writes them itself.

        Returns:
            ``(keys, values, held)``: the whole buffers, ``[b, kv_heads, capacity,
            head_dim]``, and the number of slots held now; the caller writes slots
            ``held..held+tokens-1`` and then calls :meth:`commit`.
        """
        self.reserve(self.length + tokens)
        return self.keys, self.values, self.length

    def commit(self, tokens: int) -> None:
        """Count ``tokens`` slots written after the held ones (see :meth:`slot_buffers`)."""
        self.length += tokens

    def _append(self, key_states: torch.Tensor, value_states: torch.Tensor) -> int:
        """Copy ``[b, h, n, d]`` states into the slots after the held ones (room already
        reserved); return the new length."""
        end = self.length + key_states.shape[-2]
        self.keys[:, :, self.length : end].copy_(key_states)
        self.values[:, :, self.length : end].copy_(value_states)
        self.length = end
        return end

    def crop(self, max_length: int) -> None:
        """Keep the first ``max_length`` held slots (transformers' ``crop``); buffers stay allocated."""
        self.length = min(self.length, max(0, max_length))

    def get_seq_length(self) -> int:
        return self.length

    def get_max_length(self) -> int:
        return -1 if self.max_tokens is None else self.max_tokens

    def reset(self) -> None:
        self.keys = self.values = None
        self.is_initialized = False
        self.length = 0


class GrowingLayer(_BufferLayer):
    """Full attention over every token, in a buffer that doubles when full.

    Args:
        max_tokens: Upper bound on the allocation (the context window, or the
            token count a memory budget allows), in tokens.
        initial_tokens: First allocation, in tokens.
        static: Preallocate ``max_tokens`` and always return the whole buffer, so the
            decode step has static shapes (CUDA graphs); the causal mask hides the
            unused tail. Requires ``max_tokens``.
    """

    def __init__(
        self, max_tokens: int | None = None, initial_tokens: int = 256, static: bool = False
    ) -> None:
        if static and max_tokens is None:
            raise ValueError("a static layer needs max_tokens")
        super().__init__(max_tokens, initial_tokens)
        self.static = static
        self.is_compileable = static
        self.zero_fill = static

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        """Write ``[b, h, n, d]`` states after the held ones; return the keys/values to attend."""
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
            if self.static:
                self.reserve(self.max_tokens)
        end = self.length + key_states.shape[-2]
        if end > self.capacity:
            if self.static:
                raise RuntimeError(f"static KV cache full: {end} tokens > {self.capacity}")
            self.reserve(end)
        self._append(key_states, value_states)
        if self.static:
            return self.keys, self.values
        return self.keys[:, :, :end], self.values[:, :, :end]

    def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
        """``(kv_length, kv_offset)``: every held token plus the query chunk, causal."""
        if self.static:
            return self.max_tokens, 0
        return self.length + query_length, 0


@dataclass
class RingPlan:
    """How the next forward's chunk enters the ring (shared by all layers).

    Attributes:
        mode: ``append`` (fits after the held slots, in position order), ``ring``
            (one token overwrites the oldest window slot; the whole buffer is
            returned) or ``spill`` (a chunk that evicts: held slots + chunk are
            returned with an explicit mask, then the survivors are written).
        slot: Slot written in ``ring`` mode.
        src: Indices into the chunk of the tokens kept, ``spill`` mode.
        dst: Their slots, ``spill`` mode.
    """

    mode: str = "append"
    slot: int = 0
    src: torch.Tensor | None = None
    dst: torch.Tensor | None = None


class SinkWindowLayer(_BufferLayer):
    """S attention sinks + the last W tokens in a ring of ``S + W`` slots.

    Position ``p < S`` lives in slot ``p``; position ``p >= S`` in slot
    ``S + (p - S) % W``, so a new token overwrites exactly the token leaving the
    window. Slot order does not matter to attention because keys carry their
    rotary positions already and every held slot is visible to the query.

    Args:
        sinks: S, initial tokens always kept.
        window: W, most recent tokens kept (the query included).
        plan: The :class:`RingPlan` the strategy sets before each forward.
    """

    is_sliding = True

    def __init__(self, sinks: int, window: int, plan: RingPlan) -> None:
        super().__init__(max_tokens=sinks + window, initial_tokens=min(256, sinks + window))
        self.sinks = sinks
        self.window = window
        self.plan = plan

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        """Store a chunk per :attr:`plan`; return the keys/values the chunk attends to."""
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        plan = self.plan
        if plan.mode == "append":
            self.reserve(self.length + key_states.shape[-2])
            end = self._append(key_states, value_states)
            return self.keys[:, :, :end], self.values[:, :, :end]
        if plan.mode == "ring":
            self.keys[:, :, plan.slot : plan.slot + 1].copy_(key_states)
            self.values[:, :, plan.slot : plan.slot + 1].copy_(value_states)
            return self.keys, self.values
        # spill: attend over held + chunk (the mask applies the window), then keep survivors.
        keys = torch.cat([self.keys[:, :, : self.length], key_states], dim=-2)
        values = torch.cat([self.values[:, :, : self.length], value_states], dim=-2)
        self.reserve(self.max_tokens)
        self.keys.index_copy_(2, plan.dst, key_states.index_select(2, plan.src))
        self.values.index_copy_(2, plan.dst, value_states.index_select(2, plan.src))
        self.length = self.max_tokens
        return keys, values

    def load(self, keys: torch.Tensor, values: torch.Tensor, src: torch.Tensor, dst: torch.Tensor) -> None:
        """Fill the ring from a full cache's ``[b, h, n, d]`` states (dynamic switch).

        Args:
            keys: Full-cache keys, position ``i`` at index ``i``.
            values: Full-cache values.
            src: Positions kept.
            dst: Their slots.
        """
        self.lazy_initialization(keys, values)
        self.reserve(min(self.max_tokens, keys.shape[-2]))
        self.keys.index_copy_(2, dst, keys.index_select(2, src))
        self.values.index_copy_(2, dst, values.index_select(2, src))
        self.length = src.numel()

    def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
        """``(kv_length, kv_offset)``; in ``ring`` mode the whole buffer, all visible."""
        if self.plan.mode == "ring":
            return self.max_tokens, 0
        return self.length + query_length, 0


def make_cache(layers: list[CacheLayerMixin]) -> Cache:
    """A transformers ``Cache`` over our layers (one per decoder layer)."""
    return Cache(layers=layers)
