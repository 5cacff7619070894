"""KV storage layers that never re-copy what they hold (transformers ``CacheLayerMixin``).

transformers' ``DynamicLayer`` appends with ``torch.cat``: every token re-copies
the whole cache (about 0.4 GB per token for the embedded model at 8K tokens).
:class:`GrowingLayer` writes into a preallocated buffer that doubles when full
(amortised O(1) copies per token); :class:`SinkWindowLayer` keeps S attention
sinks and the last W tokens in a fixed ring buffer of ``S + W`` slots that never
reallocates once full (StreamingLLM, Xiao et al. 2023, arXiv:2309.17453).

Both store keys after the rotary embedding, so a held key keeps the position it
was computed at. Buffers have shape ``[batch, kv_heads, capacity, head_dim]``.

DeepSeek-style sparse attention (DSA: GLM-5's ``GlmMoeDsaForCausalLM``, the indexed
layers of GLM-5.3-Flash) also caches one *indexer key* per token, ``[batch, capacity,
index_head_dim]``, that scores which keys each query attends to. Every layer here
keeps those beside its keys in the same slots (:meth:`_BufferLayer.update_indexer`,
the call transformers' ``Cache.update_indexer`` makes), so the indexer's scores line up
with the keys and the mask whatever the strategy. Linear-attention layers (the KDA
layers of GLM-5.3-Flash) keep a fixed-size recurrent state instead of per-token keys:
:func:`make_layers` gives them transformers' ``LinearAttentionLayer``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from transformers.cache_utils import Cache, CacheLayerMixin, LinearAttentionLayer

#: ``layer_types`` entries whose layers hold a fixed-size state, not per-token keys.
LINEAR_LAYER_TYPES = frozenset({"linear_attention", "conv"})


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
        #: DSA indexer keys, ``[batch, capacity, index_head_dim]`` (``None`` until the
        #: model writes one; models without an indexer never do).
        self.indexer_keys: torch.Tensor | None = None
        self.indexer_length = 0

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        self.device = key_states.device
        self.keys = key_states.new_zeros((*key_states.shape[:2], 0, key_states.shape[-1]))
        self.values = value_states.new_zeros((*value_states.shape[:2], 0, value_states.shape[-1]))
        self.is_initialized = True

    @property
    def capacity(self) -> int:
        """Slots allocated, in tokens."""
        return 0 if self.keys is None else self.keys.shape[-2]

    def kv_buffers(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The key and value buffers, ``[b, kv_heads, capacity, head_dim]``.

        Raises:
            RuntimeError: before the first update made them (or after :meth:`reset`).
        """
        if self.keys is None or self.values is None:
            raise RuntimeError("this KV-cache layer holds no buffers before its first update")
        return self.keys, self.values

    def _size(self) -> int:
        """``max_tokens`` of a layer that has one (a static or ring layer).

        Raises:
            RuntimeError: for a layer without a bound.
        """
        if self.max_tokens is None:
            raise RuntimeError("this KV-cache layer has no max_tokens")
        return self.max_tokens

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
        old_keys, old_values = self.kv_buffers()
        alloc = old_keys.new_zeros if zero else old_keys.new_empty
        keys = alloc((*old_keys.shape[:2], size, old_keys.shape[-1]))
        values = alloc((*old_values.shape[:2], size, old_values.shape[-1]))
        keys[:, :, : self.length].copy_(old_keys[:, :, : self.length])
        values[:, :, : self.length].copy_(old_values[:, :, : self.length])
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
        return (*self.kv_buffers(), self.length)

    def commit(self, tokens: int) -> None:
        """Count ``tokens`` slots written after the held ones (see :meth:`slot_buffers`)."""
        self.length += tokens

    def _append(self, key_states: torch.Tensor, value_states: torch.Tensor) -> int:
        """Copy ``[b, h, n, d]`` states into the slots after the held ones (room already
        reserved); return the new length."""
        end = self.length + key_states.shape[-2]
        keys, values = self.kv_buffers()
        keys[:, :, self.length : end].copy_(key_states)
        values[:, :, self.length : end].copy_(value_states)
        self.length = end
        return end

    def _indexer_room(self, states: torch.Tensor, tokens: int, exact: int | None = None) -> torch.Tensor:
        """Grow the indexer buffer to hold ``tokens`` slots (doubling as the keys do), or
        to exactly ``exact`` slots; keeps the held ones.

        Args:
            states: New indexer keys ``[batch, n, index_head_dim]`` (dtype, device, width).
            tokens: Slots needed.
            exact: Capacity to allocate instead of the doubling rule.

        Returns:
            The indexer buffer, ``[batch, capacity, index_head_dim]``.
        """
        held = 0 if self.indexer_keys is None else self.indexer_keys.shape[1]
        if self.indexer_keys is not None and (tokens <= held if exact is None else exact == held):
            return self.indexer_keys
        size = exact if exact is not None else max(tokens, 2 * held, self.initial_tokens)
        if exact is None and self.max_tokens is not None:
            size = min(size, max(self.max_tokens, tokens))
        grown = states.new_zeros((states.shape[0], size, states.shape[-1]))
        if self.indexer_keys is not None and self.indexer_length:
            grown[:, : self.indexer_length].copy_(self.indexer_keys[:, : self.indexer_length])
        self.indexer_keys = grown
        return grown

    def _append_indexer(self, states: torch.Tensor) -> torch.Tensor:
        """Copy ``[b, n, d]`` indexer keys after the held ones; return the held ones."""
        end = self.indexer_length + states.shape[1]
        buffer = self._indexer_room(states, end)
        buffer[:, self.indexer_length : end].copy_(states)
        self.indexer_length = end
        return buffer[:, :end]

    def update_indexer(self, indexer_key_states: torch.Tensor) -> torch.Tensor:
        """Store a chunk's DSA indexer keys after the held ones (transformers'
        ``Cache.update_indexer`` calls this).

        Args:
            indexer_key_states: ``[batch, n, index_head_dim]``.

        Returns:
            The indexer keys the chunk scores, ``[batch, t, index_head_dim]``, in the
            same slot order as the keys :meth:`update` returns.
        """
        return self._append_indexer(indexer_key_states)

    def crop(self, max_length: int) -> None:
        """Keep the first ``max_length`` held slots (transformers' ``crop``); buffers stay allocated."""
        self.length = min(self.length, max(0, max_length))
        self.indexer_length = min(self.indexer_length, max(0, max_length))

    def get_seq_length(self) -> int:
        return self.length

    def get_max_length(self) -> int:
        return -1 if self.max_tokens is None else self.max_tokens

    def reset(self) -> None:
        self.keys = self.values = None
        self.is_initialized = False
        self.length = 0
        self.indexer_keys = None
        self.indexer_length = 0


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
                self.reserve(self._size())
        end = self.length + key_states.shape[-2]
        if end > self.capacity:
            if self.static:
                raise RuntimeError(f"static KV cache full: {end} tokens > {self.capacity}")
            self.reserve(end)
        self._append(key_states, value_states)
        keys, values = self.kv_buffers()
        if self.static:
            return keys, values
        return keys[:, :, :end], values[:, :, :end]

    def update_indexer(self, indexer_key_states: torch.Tensor) -> torch.Tensor:
        """As :meth:`_BufferLayer.update_indexer`; a static layer returns its whole
        ``max_tokens`` buffer (zeros past the held slots, hidden by the mask)."""
        size = self.max_tokens
        if not self.static or size is None:
            return super().update_indexer(indexer_key_states)
        buffer = self._indexer_room(indexer_key_states, size, exact=size)
        end = self.indexer_length + indexer_key_states.shape[1]
        if end > size:
            raise RuntimeError(f"static KV cache full: {end} tokens > {size}")
        self._append_indexer(indexer_key_states)
        return buffer

    def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
        """``(kv_length, kv_offset)``: every held token plus the query chunk, causal."""
        if self.static:
            return self._size(), 0
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
            held_keys, held_values = self.kv_buffers()
            return held_keys[:, :, :end], held_values[:, :, :end]
        held_keys, held_values = self.kv_buffers()
        if plan.mode == "ring":
            held_keys[:, :, plan.slot : plan.slot + 1].copy_(key_states)
            held_values[:, :, plan.slot : plan.slot + 1].copy_(value_states)
            return held_keys, held_values
        if plan.src is None or plan.dst is None:
            raise RuntimeError("a spilling chunk needs the plan's kept positions and their slots")
        # spill: attend over held + chunk (the mask applies the window), then keep survivors.
        keys = torch.cat([held_keys[:, :, : self.length], key_states], dim=-2)
        values = torch.cat([held_values[:, :, : self.length], value_states], dim=-2)
        self.reserve(self._size())
        held_keys, held_values = self.kv_buffers()  # reserve may have grown them
        held_keys.index_copy_(2, plan.dst, key_states.index_select(2, plan.src))
        held_values.index_copy_(2, plan.dst, value_states.index_select(2, plan.src))
        self.length = self._size()
        return keys, values

    def update_indexer(self, indexer_key_states: torch.Tensor) -> torch.Tensor:
        """Store a chunk's DSA indexer keys in the slots :attr:`plan` gives its keys;
        return the indexer keys the chunk scores, slot for slot as :meth:`update`
        returns the keys (``[batch, t, index_head_dim]``)."""
        plan, slots = self.plan, self.sinks + self.window
        if plan.mode == "append":
            return super().update_indexer(indexer_key_states)
        if plan.mode == "ring":
            buffer = self._indexer_room(indexer_key_states, slots, exact=slots)
            buffer[:, plan.slot : plan.slot + 1].copy_(indexer_key_states)
            return buffer
        if plan.src is None or plan.dst is None:
            raise RuntimeError("a spilling chunk needs the plan's kept positions and their slots")
        held = indexer_key_states
        if self.indexer_keys is not None and self.indexer_length:
            held = torch.cat([self.indexer_keys[:, : self.indexer_length], indexer_key_states], dim=1)
        buffer = self._indexer_room(indexer_key_states, slots, exact=slots)
        buffer.index_copy_(1, plan.dst, indexer_key_states.index_select(1, plan.src))
        self.indexer_length = slots
        return held

    def load(
        self,
        keys: torch.Tensor,
        values: torch.Tensor,
        src: torch.Tensor,
        dst: torch.Tensor,
        indexer_keys: torch.Tensor | None = None,
    ) -> None:
        """Fill the ring from a full cache's ``[b, h, n, d]`` states (dynamic switch).

        Args:
            keys: Full-cache keys, position ``i`` at index ``i``.
            values: Full-cache values.
            src: Positions kept.
            dst: Their slots.
            indexer_keys: The full cache's DSA indexer keys ``[b, n, index_head_dim]``,
                position ``i`` at index ``i`` (``None``: the model has no indexer).
        """
        self.lazy_initialization(keys, values)
        self.reserve(min(self._size(), keys.shape[-2]))
        held_keys, held_values = self.kv_buffers()
        held_keys.index_copy_(2, dst, keys.index_select(2, src))
        held_values.index_copy_(2, dst, values.index_select(2, src))
        self.length = src.numel()
        if indexer_keys is not None:
            buffer = self._indexer_room(indexer_keys, self.capacity, exact=self.capacity)
            buffer.index_copy_(1, dst, indexer_keys.index_select(1, src))
            self.indexer_length = src.numel()

    def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
        """``(kv_length, kv_offset)``; in ``ring`` mode the whole buffer, all visible."""
        if self.plan.mode == "ring":
            return self._size(), 0
        return self.length + query_length, 0


def layer_types(config) -> list[str]:
    """The decoder's per-layer cache kinds (``config.layer_types`` where the model has
    them, e.g. GLM-5.3-Flash's ``linear_attention`` / ``indexed_attention``; else
    ``full_attention`` for every layer)."""
    text = config.get_text_config(decoder=True)
    kinds = getattr(text, "layer_types", None)
    return list(kinds) if kinds else ["full_attention"] * int(text.num_hidden_layers)


def is_hybrid(config) -> bool:
    """Whether some layers keep a fixed-size linear-attention state (it cannot be rewound
    to a shorter prefix, and it does not grow with the context)."""
    return any(kind in LINEAR_LAYER_TYPES for kind in layer_types(config))


def make_layers(config, attention_layer: Callable[[], CacheLayerMixin]) -> list:
    """One cache layer per decoder layer: ``attention_layer()`` where the layer keeps
    per-token keys, transformers' ``LinearAttentionLayer`` (fixed-size conv and
    recurrent state) where it is linear attention."""
    return [
        LinearAttentionLayer() if kind in LINEAR_LAYER_TYPES else attention_layer()
        for kind in layer_types(config)
    ]


def attention_layers(cache: Cache) -> list[_BufferLayer]:
    """The cache's layers that hold per-token keys (what the KV strategies size)."""
    return [layer for layer in cache.layers if isinstance(layer, _BufferLayer)]


def make_cache(layers: list) -> Cache:
    """A transformers ``Cache`` over our layers (one per decoder layer)."""
    return Cache(layers=layers)
