"""llama.cpp contexts and the KV-cache strategies on llama.cpp's own cache.

A :class:`LlamaContext` is one ``llama_context`` (its KV cache sized ``n_ctx`` cells
of ``type_k``/``type_v``) plus the ids it holds in order. The strategies are
:class:`~glmdesk.engine.decoding.LogitsSource` implementations over it, so
glmdesk's decode loop (processors, live sampling, Stop) runs on llama.cpp's logits:

- ``full``: every token kept, up to the context's ``n_ctx``.
- ``sliding_window``: S attention sinks + the last W tokens (StreamingLLM, Xiao et
  al. 2023, arXiv:2309.17453). The oldest non-sink positions are removed with
  ``llama_memory_seq_rm`` and the rest shifted down with ``llama_memory_seq_add``,
  which re-rotates the keys (llama.cpp's own context shift in ``tools/main``); the
  context is sized S + W cells, so memory stays flat.
- ``dynamic``: full while the held tokens fit the memory budget (the context is
  sized to the budget), then the window.
- ``quantized``: full, with the cache stored as ``q8_0`` or ``q4_0`` (llama.cpp's
  ``type_k``/``type_v``; a quantized V cache needs flash attention, turned on here).

The accounting (:class:`~glmdesk.engine.chunk.CacheStats`) is read from llama.cpp:
``llama_state_seq_get_size`` (bytes of the sequence's KV cells) and the positions
held (``llama_memory_seq_pos_min/max``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from glmdesk.core.errors import GlmdeskError
from glmdesk.core.settings import CacheSettings
from glmdesk.engine.chunk import CacheStats

#: ggml type codes of the KV cache (ggml.h ``enum ggml_type``).
KV_TYPES = {"f16": 1, "q4_0": 2, "q8_0": 8}
#: Bytes per element of each KV type (ggml's block sizes: q8_0 34 bytes / 32, q4_0 18 / 32).
KV_TYPE_BYTES = {"f16": 2.0, "q8_0": 34 / 32, "q4_0": 18 / 32}
#: Budget of the dynamic strategy on the CPU when none is given, in MiB (as transformers').
CPU_BUDGET_MIB = 1024.0


@dataclass(frozen=True)
class ContextConfig:
    """How a llama.cpp context is made.

    Attributes:
        n_ctx: KV cells, in tokens.
        kv_type: ``f16``, ``q8_0`` or ``q4_0`` (both K and V).
        n_batch: Prompt tokens per ``llama_decode`` call (prefill batch), in tokens.
        threads: CPU threads for decode and prefill.
    """

    n_ctx: int
    kv_type: str = "f16"
    n_batch: int = 512
    threads: int = 1


class LlamaContext:
    """One ``llama_context`` with its batch, and the ids its KV cache holds.

    Args:
        lib: The ``llama_cpp`` module.
        model: The ``llama_model`` pointer.
        config: How to make it.

    Raises:
        GlmdeskError: ``invalid_setting`` when llama.cpp refuses the configuration
            (e.g. a quantized V cache where flash attention cannot run), with its log.
    """

    def __init__(self, lib, model, config: ContextConfig, n_vocab: int, last_log) -> None:
        self.lib, self.config, self.n_vocab = lib, config, n_vocab
        params = lib.llama_context_default_params()
        params.n_ctx = config.n_ctx
        params.n_batch = params.n_ubatch = config.n_batch
        params.n_seq_max = 1
        params.n_threads = params.n_threads_batch = config.threads
        params.type_k = params.type_v = KV_TYPES[config.kv_type]
        params.no_perf = True
        if config.kv_type != "f16":
            params.flash_attn_type = lib.LLAMA_FLASH_ATTN_TYPE_ENABLED
        self.ctx = lib.llama_init_from_model(model, params)
        if not self.ctx:
            raise GlmdeskError(
                "invalid_setting",
                f"llama.cpp cannot make a {config.kv_type} KV cache of {config.n_ctx} tokens here "
                f"({last_log() or 'no reason given'}).",
                name="kv_cache",
                value=config.kv_type,
                reason=last_log() or "llama_init_from_model failed",
            )
        self.mem = lib.llama_get_memory(self.ctx)
        self.n_ctx = int(lib.llama_n_ctx(self.ctx))
        self.batch = lib.llama_batch_init(config.n_batch, 0, 1)
        #: Ids whose keys/values the cache holds, in position order (sinks first).
        self.ids: list[int] = []
        self.empty_bytes = int(lib.llama_state_seq_get_size(self.ctx, 0))

    @property
    def can_shift(self) -> bool:
        """Whether positions can be shifted (needed by the window strategies)."""
        return bool(self.lib.llama_memory_can_shift(self.mem))

    def clear(self) -> None:
        """Forget every held token (metadata only: the buffer stays allocated and is
        not rewritten, so its untouched pages stay unmapped on the CPU)."""
        self.lib.llama_memory_clear(self.mem, False)
        self.ids.clear()

    def eval(self, ids: Sequence[int], all_logits: bool = False) -> torch.Tensor:
        """Append ``ids`` (at most ``n_batch``) at the next positions; return logits.

        Returns:
            ``[vocab]`` float32 logits of the last id, or ``[len(ids), vocab]`` with
            ``all_logits``.

        Raises:
            RuntimeError: when ``llama_decode`` fails (no free cell, aborted).
        """
        n = len(ids)
        batch, start = self.batch, len(self.ids)
        for i, token in enumerate(ids):
            batch.token[i] = token
            batch.pos[i] = start + i
            batch.n_seq_id[i] = 1
            batch.seq_id[i][0] = 0
            batch.logits[i] = all_logits or i == n - 1
        batch.n_tokens = n
        rc = self.lib.llama_decode(self.ctx, batch)
        if rc != 0:
            raise RuntimeError(f"llama_decode returned {rc} with {len(self.ids)} of {self.n_ctx} cells held")
        self.ids.extend(ids)
        if all_logits:
            ptr = self.lib.llama_get_logits(self.ctx)
            return torch.from_numpy(np.ctypeslib.as_array(ptr, shape=(n, self.n_vocab)).copy())
        ptr = self.lib.llama_get_logits_ith(self.ctx, -1)
        return torch.from_numpy(np.ctypeslib.as_array(ptr, shape=(self.n_vocab,)).copy())

    def evict(self, start: int, count: int) -> None:
        """Remove positions ``[start, start + count)`` and shift the later ones down by
        ``count`` (llama.cpp re-rotates their keys at the next decode)."""
        if count <= 0:
            return
        self.lib.llama_memory_seq_rm(self.mem, 0, start, start + count)
        self.lib.llama_memory_seq_add(self.mem, 0, start + count, -1, -count)
        del self.ids[start : start + count]

    def held(self) -> int:
        """Positions the cache holds, read from llama.cpp, in tokens."""
        hi = int(self.lib.llama_memory_seq_pos_max(self.mem, 0))
        lo = int(self.lib.llama_memory_seq_pos_min(self.mem, 0))
        return 0 if hi < 0 else hi - lo + 1

    def kv_bytes(self) -> int:
        """Bytes of the sequence's KV cells (``llama_state_seq_get_size`` minus its empty header)."""
        return max(0, int(self.lib.llama_state_seq_get_size(self.ctx, 0)) - self.empty_bytes)

    def allocated_bytes(self) -> int:
        """Bytes of the whole KV buffer (every cell), from the per-cell size measured
        by llama.cpp after the first token; 0 before."""
        held = len(self.ids)
        return 0 if not held else self.kv_bytes() * self.n_ctx // held

    def close(self) -> None:
        """Free the context and its batch. Idempotent."""
        if self.ctx:
            self.lib.llama_batch_free(self.batch)
            self.lib.llama_free(self.ctx)
            self.ctx = None


class LlamaCacheSource:
    """A :class:`~glmdesk.engine.decoding.LogitsSource` over a :class:`LlamaContext`.

    Args:
        context: The context (cleared here; its ids list stays for reuse later).
        cache: The strategy's settings.
        capacity: Cells this strategy may fill before evicting, in tokens
            (``None``: the context's ``n_ctx``, no eviction).
        name: The strategy's name.

    Attributes:
        bounded: True for the window and dynamic strategies (answers may run past
            the context).
    """

    device = "cpu"

    def __init__(self, context: LlamaContext, cache: CacheSettings, name: str, capacity: int | None) -> None:
        self.context, self.cache, self.name = context, cache, name
        self.bounded = capacity is not None
        self.capacity = capacity if capacity is not None else context.n_ctx
        self.sinks = cache.sinks
        self.windowed = name == "sliding_window"
        self.evicted = 0
        self.seen = 0
        context.clear()

    def _make_room(self, n: int) -> None:
        """Evict the oldest non-sink tokens so that ``n`` more fit the capacity."""
        ctx = self.context
        if len(ctx.ids) + n <= self.capacity:
            return
        if not self.bounded:
            raise GlmdeskError(
                "prompt_too_long",
                f"The conversation needs more than the {self.capacity} tokens of the context.",
                tokens=len(ctx.ids) + n,
                limit=self.capacity,
            )
        if not self.windowed:  # dynamic: the budget is reached, switch to the window
            self.windowed = True
            self.capacity = min(self.capacity, self.cache.sinks + self.cache.window)
        excess = len(ctx.ids) + n - self.capacity
        ctx.evict(self.sinks, excess)
        self.evicted += excess

    def _chunk(self) -> int:
        size = self.context.config.n_batch
        if self.bounded:  # a chunk must fit beside the sinks and some window
            size = min(size, max(1, self.capacity - self.sinks - 1))
        return size

    def prefill(self, input_ids: torch.Tensor) -> torch.Tensor:
        """Run the prompt ``[1, n]`` in batches of ``n_batch``; return the last logits ``[vocab]``."""
        ids = [int(i) for i in input_ids.reshape(-1).tolist()]
        size, logits = self._chunk(), None
        for at in range(0, len(ids), size):
            part = ids[at : at + size]
            self._make_room(len(part))
            logits = self.context.eval(part)
        self.seen += len(ids)
        return logits

    def step(self, token_id: int) -> torch.Tensor:
        """Append one token; return the next-token logits ``[vocab]`` float32."""
        self._make_room(1)
        self.seen += 1
        return self.context.eval([token_id])

    def step_all(self, ids: Sequence[int]) -> torch.Tensor:
        """Append ``ids`` one batch at a time; logits of every position ``[n, vocab]``
        (for perplexity)."""
        out = []
        for at in range(0, len(ids), self._chunk()):
            part = list(ids[at : at + self._chunk()])
            self._make_room(len(part))
            out.append(self.context.eval(part, all_logits=True))
        self.seen += len(ids)
        return torch.cat(out)

    def stats(self) -> CacheStats:
        """Bytes and tokens held, read from llama.cpp."""
        return CacheStats(
            strategy=self.name,
            state="windowed" if self.windowed else "full",
            kv_bytes=self.context.kv_bytes(),
            tokens_held=self.context.held(),
            tokens_seen=self.seen,
            evicted=self.evicted,
        )

    def release(self) -> None:
        """Nothing to free: the context's buffer is allocated once and reused (its ids
        stay, so a later answer could keep the common prefix)."""


def kv_bytes_per_token(header, kv_type: str) -> float:
    """Projected KV bytes per token from the GGUF metadata:
    layers x kv heads x (key length + value length) x bytes per element (DESIGN.md)."""
    layers = int(header.get("{arch}.block_count", 0) or 0)
    heads = int(header.get("{arch}.attention.head_count", 1) or 1)
    kv_heads = header.get("{arch}.attention.head_count_kv", heads)
    kv_heads = int(kv_heads if isinstance(kv_heads, int) else max(kv_heads or [heads]))
    embd = int(header.get("{arch}.embedding_length", 0) or 0)
    k_len = int(header.get("{arch}.attention.key_length", embd // heads) or 0)
    v_len = int(header.get("{arch}.attention.value_length", embd // heads) or 0)
    return layers * kv_heads * (k_len + v_len) * KV_TYPE_BYTES[kv_type]


def plan(cache: CacheSettings, n_ctx: int, per_token_f16: float, kv_bits: int) -> tuple[str, int, int | None]:
    """The context a strategy needs: ``(kv_type, n_ctx, capacity)``.

    ``capacity`` is the cells filled before evicting (``None``: never evict).

    Raises:
        GlmdeskError: ``invalid_setting`` when the window does not fit the context.
    """
    if cache.strategy == "quantized":
        return ("q4_0" if kv_bits == 4 else "q8_0"), n_ctx, None
    if cache.strategy == "full":
        return "f16", n_ctx, None
    window = cache.sinks + cache.window
    if window > n_ctx:
        raise GlmdeskError(
            "invalid_setting",
            f"The window ({window} tokens with its sinks) is larger than the context ({n_ctx} tokens).",
            name="kv_cache",
            value=cache.strategy,
            reason=f"window {window} > context {n_ctx}",
        )
    if cache.strategy == "sliding_window":
        return "f16", window, window
    budget = (cache.budget_mib or CPU_BUDGET_MIB) * 2**20
    fits = int(budget // per_token_f16) if per_token_f16 else n_ctx
    capacity = max(window, min(n_ctx, fits))
    return "f16", capacity, capacity


__all__ = ["ContextConfig", "LlamaCacheSource", "LlamaContext", "kv_bytes_per_token", "plan"]
