"""The sliding-window strategy: S attention sinks + the last W tokens.

StreamingLLM (Xiao et al. 2023, "Efficient Streaming Language Models with
Attention Sinks", arXiv:2309.17453): keeping the first few tokens, which absorb
attention mass, next to a recent window keeps perplexity close to full attention
at a fixed memory. ``sinks=0`` gives the plain window for comparison.

Semantics, whatever the chunking: the token at position ``p`` attends to the
positions ``k <= p`` with ``k < S`` or ``k > p - W``, keys at their original
rotary positions. A prefill chunk longer than the window is handled with an
explicit mask over held slots + chunk.
"""

from __future__ import annotations

import torch

from glmdesk.core.errors import GlmdeskError
from glmdesk.core.settings import CacheSettings
from glmdesk.engine.cache.base import CacheStrategy, cache_bytes, run_model
from glmdesk.engine.cache.layers import RingPlan, SinkWindowLayer, attention_layers, make_cache, make_layers
from glmdesk.engine.chunk import CacheStats


def slot_of(position: torch.Tensor, sinks: int, window: int) -> torch.Tensor:
    """Ring slot of each position: ``p`` for sinks, else ``S + (p - S) % W``."""
    return torch.where(position < sinks, position, sinks + (position - sinks) % window)


def window_mask(q_pos: torch.Tensor, k_pos: torch.Tensor, sinks: int, window: int) -> torch.Tensor:
    """Which keys each query may attend to, shape ``[len(q_pos), len(k_pos)]`` bool.

    Args:
        q_pos: Query positions, shape ``[q]``.
        k_pos: Key positions, shape ``[k]`` (any order; ``-1`` marks an empty slot).
        sinks: S.
        window: W.
    """
    q = q_pos[:, None]
    k = k_pos[None, :]
    return (k >= 0) & (k <= q) & ((k < sinks) | (k > q - window))


def mask_for(model, allowed: torch.Tensor) -> torch.Tensor:
    """A 4D mask ``[1, 1, q, k]`` in the form the model's attention takes.

    ``eager`` adds the mask to the scores (0 / dtype min); ``sdpa`` and the others
    take booleans.
    """
    allowed = allowed[None, None]
    if getattr(model.config, "_attn_implementation", "sdpa") == "eager":
        dtype = next(model.parameters()).dtype
        return torch.zeros(allowed.shape, dtype=dtype, device=allowed.device).masked_fill(
            ~allowed, torch.finfo(dtype).min
        )
    return allowed


def check_mask_support(model) -> None:
    """Refuse attention kernels that ignore an explicit 4D mask (flash-attention).

    Raises:
        GlmdeskError: ``invalid_setting`` for an attention implementation other than
            ``sdpa`` or ``eager``.
    """
    impl = getattr(model.config, "_attn_implementation", None) or "sdpa"
    if impl not in ("sdpa", "eager"):
        raise GlmdeskError(
            "invalid_setting",
            f"The sliding-window KV cache needs sdpa or eager attention, not {impl}; "
            "load the model with attn_implementation='sdpa'.",
            name="kv_cache",
            value="sliding_window",
            reason=f"attention implementation {impl}",
        )


class RingBook:
    """Which position each ring slot holds, and the plan of the next forward.

    Args:
        sinks: S.
        window: W.
        device: Where the index tensors go (the model's device).
    """

    def __init__(self, sinks: int, window: int, device: torch.device) -> None:
        self.sinks = sinks
        self.window = window
        self.capacity = sinks + window
        self.device = device
        self.slot_pos = torch.full((self.capacity,), -1, dtype=torch.long)
        self.held = 0
        self.plan = RingPlan()

    def prepare(self, start: int, n: int) -> torch.Tensor | None:
        """Set :attr:`plan` for a chunk at positions ``start..start+n-1``; return its mask or None."""
        positions = torch.arange(start, start + n)
        if self.held + n <= self.capacity and start == self.held:
            self.plan.mode = "append"
            self.slot_pos[start : start + n] = positions
            self.held += n
            return None
        if n == 1:
            slot = int(slot_of(positions, self.sinks, self.window))
            self.plan.mode, self.plan.slot = "ring", slot
            self.slot_pos[slot] = start
            return None
        keep = (positions < self.sinks) | (positions >= start + n - self.window)
        kept = positions[keep]
        k_pos = torch.cat([self.slot_pos[: self.held], positions])
        allowed = window_mask(positions, k_pos, self.sinks, self.window)
        self.plan.mode = "spill"
        self.plan.src = (kept - start).to(self.device)
        dst = slot_of(kept, self.sinks, self.window)
        self.plan.dst = dst.to(self.device)
        self.slot_pos[dst] = kept
        self.held = self.capacity
        return allowed.to(self.device)

    def evicted(self, seen: int) -> bool:
        """Whether any of ``seen`` processed positions has left the ring."""
        return seen > self.held

    def truncate(self, n: int) -> None:
        """Forget positions ``n..`` of a ring that has evicted nothing (slot ``p`` holds ``p``)."""
        self.slot_pos[n:] = -1
        self.held = n

    def load_plan(self, seen: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Positions kept from a full cache of ``seen`` tokens and their slots (dynamic switch)."""
        positions = torch.arange(seen)
        kept = positions[(positions < self.sinks) | (positions >= seen - self.window)]
        dst = slot_of(kept, self.sinks, self.window)
        self.slot_pos[dst] = kept
        self.held = kept.numel()
        return kept.to(self.device), dst.to(self.device)


class SlidingWindowStrategy(CacheStrategy):
    """S attention sinks + the last W tokens in a fixed ring buffer.

    Memory stops growing at ``S + W`` tokens: ``(S + W) x kv_bytes_per_token``.
    Buffers grow by doubling up to that capacity and never reallocate after.

    Args:
        model: A transformers causal LM (``sdpa`` or ``eager`` attention: a chunk
            that evicts is run with an explicit 4D mask).
        settings: ``sinks`` (S), ``window`` (W), ``prefill_chunk``.

    Raises:
        GlmdeskError: ``invalid_setting`` for flash-attention kernels (they ignore
            the explicit mask a chunk that evicts needs).
    """

    name = "sliding_window"

    def __init__(self, model, settings: CacheSettings) -> None:
        super().__init__(model, settings)
        check_mask_support(model)
        self.cache = self._fresh_cache()

    def _fresh_cache(self):
        settings = self.settings
        self.book = RingBook(settings.sinks, settings.window, self.device)
        plan = self.book.plan
        return make_cache(
            make_layers(self.model.config, lambda: SinkWindowLayer(settings.sinks, settings.window, plan))
        )

    def _keepable(self, common: int) -> int:
        """Before the ring evicted anything, any prefix; after, only the whole held
        sequence (the new prompt extends it exactly): the window of a shorter prefix's
        next position needs positions whose slots later positions overwrote."""
        if not self.book.evicted(self.tokens_seen):
            return common
        return common if common == self.tokens_seen else 0

    def _truncate(self, n: int) -> None:
        self.book.truncate(n)
        for layer in attention_layers(self.cache):
            layer.crop(n)

    def _forward(self, input_ids: torch.Tensor, start: int) -> torch.Tensor:
        allowed = self.book.prepare(start, input_ids.shape[1])
        mask = None if allowed is None else mask_for(self.model, allowed)
        return run_model(self.model, self.cache, input_ids, start, mask, step=self.decode_step)

    def _visible_keys(self) -> int:
        return min(self.tokens_seen, self.settings.sinks + self.settings.window)

    def held_positions(self) -> list[int]:
        """Positions held in the ring, sorted (for tests and the UI)."""
        return sorted(int(p) for p in self.book.slot_pos if p >= 0)

    def _bytes(self) -> int:
        return cache_bytes(self.cache)

    def stats(self) -> CacheStats:
        if self.cache is None:
            return CacheStats(self.name, "windowed", 0, 0, self.tokens_seen, 0)
        held = self.book.held
        return CacheStats(
            self.name, "windowed", self._bytes(), held, self.tokens_seen, self.tokens_seen - held
        )
