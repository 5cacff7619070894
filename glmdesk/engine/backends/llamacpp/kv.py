"""llama.cpp contexts and the KV-cache strategies on llama.cpp's own cache.

A :class:`LlamaContext` is one ``llama_context`` (its KV cache sized ``n_ctx`` cells
of ``type_k``/``type_v``) plus the ids it holds in order. The strategies are
:class:`~glmdesk.engine.decode.decoding.LogitsSource` implementations over it, so
glmdesk's decode loop (processors, live sampling, Stop) runs on llama.cpp's logits:

- ``full``: every token kept, up to the context's ``n_ctx``.
- ``sliding_window``: S attention sinks + the last W tokens (StreamingLLM, Xiao et
  al. 2023, arXiv:2309.17453). The oldest non-sink positions are removed with
  ``llama_memory_seq_rm`` and the rest shifted down with ``llama_memory_seq_add``,
  which re-rotates the keys (llama.cpp's own context shift in ``tools/main``); the
  context is sized S + W cells, so memory stays flat. Eviction goes in blocks of
  :func:`evict_block` tokens at fixed positions of the sequence (see
  :meth:`LlamaCacheSource.evicted_before`), so what each token attends to depends on
  its position only, never on how the prompt was cut into batches: a cache kept
  from the last answer and extended equals a fresh prefill of the whole
  conversation, and the model always sees the sinks and at least W - block of the
  last tokens.
- ``dynamic``: full while the held tokens fit the memory budget (the context is
  sized to the budget), then the window.
- ``quantized``: full, with the cache stored as ``q8_0`` or ``q4_0`` (llama.cpp's
  ``type_k``/``type_v``; a quantized V cache needs flash attention, turned on here).
  Each token's rows are quantized on their own, so cutting the cache back is exact.

A source is kept between answers (:meth:`LlamaCacheSource.reuse`): the next prompt
prefills only the tokens after the longest common token prefix the cache holds
exactly. The accounting (:class:`~glmdesk.engine.chunk.CacheStats`) is read from
llama.cpp: ``llama_state_seq_get_size`` (bytes of the sequence's KV cells) and the
positions held (``llama_memory_seq_pos_min/max``).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from glmdesk.core.errors import GlmdeskError
from glmdesk.core.settings import CacheSettings
from glmdesk.engine.cache.base import common_prefix
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
        #: Tokens given to ``llama_decode`` since the context was made (prefill and
        #: decode steps together), in tokens: what reuse saves shows here.
        self.n_decoded = 0
        #: The :class:`LlamaCacheSource` whose tokens the cache holds (``None``: nobody's).
        self.owner: object | None = None
        self._guard = threading.Lock()

    def own(self, source: object) -> None:
        """Clear the cache and hand it to ``source`` (a new answer's or a fresh prefill's)."""
        with self._guard:
            self.clear()
            self.owner = source

    def disown(self, source: object) -> None:
        """Clear the cache if ``source`` still owns it (a kept source dropped later must
        not clear another conversation's tokens)."""
        with self._guard:
            if self.owner is source:
                self.clear()
                self.owner = None

    def truncate(self, n: int) -> None:
        """Keep the first ``n`` held positions, remove the rest (``llama_memory_seq_rm``)."""
        self.lib.llama_memory_seq_rm(self.mem, 0, n, -1)
        del self.ids[n:]

    @property
    def can_shift(self) -> bool:
        """Whether positions can be shifted (needed by the window strategies)."""
        return bool(self.lib.llama_memory_can_shift(self.mem))

    def clear(self) -> None:
        """Forget every held token (metadata only: the buffer stays allocated and is
        not rewritten, so its untouched pages stay unmapped on the CPU)."""
        if self.ctx:
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
        self.n_decoded += n
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


def evict_block(window: int, n_batch: int) -> int:
    """Tokens evicted at once by the window strategies: a quarter of the window, at
    most one prefill batch, at least 1, in tokens.

    Larger blocks mean fewer context shifts (each re-rotates every held key) and
    longer prefill batches once the window is full; the model then sees between
    ``window - block + 1`` and ``window`` recent tokens besides the sinks.
    """
    return max(1, min(n_batch, window // 4))


class LlamaCacheSource:
    """A :class:`~glmdesk.engine.decode.decoding.LogitsSource` over a :class:`LlamaContext`,
    reusable across answers (a :class:`~glmdesk.engine.decode.decoding.ReusableSource`).

    Args:
        context: The context (cleared here and owned by this source).
        cache: The strategy's settings.
        name: The strategy's name.
        capacity: Cells this strategy may fill before evicting, in tokens
            (``None``: the context's ``n_ctx``, no eviction).

    Attributes:
        bounded: True for the window and dynamic strategies (answers may run past
            the context).
        ids: The id processed at each position of the sequence, evicted ones
            included (every answer of the conversation the source was kept for).
    """

    device = "cpu"

    def __init__(self, context: LlamaContext, cache: CacheSettings, name: str, capacity: int | None) -> None:
        self.context, self.cache, self.name = context, cache, name
        self.bounded = capacity is not None
        self.capacity = capacity if capacity is not None else context.n_ctx
        self.sinks = cache.sinks
        self.span = cache.sinks + cache.window
        self.block = evict_block(cache.window, context.config.n_batch)
        self.ids: list[int] = []
        self._exact = True
        context.own(self)

    def evicted_before(self, q: int) -> int:
        """Tokens evicted when position ``q`` (0-based, of the whole sequence) is
        processed, in tokens: none while ``q`` fits the capacity, then whole blocks
        so that ``q`` and the tokens held fit sinks + window. A function of ``q`` only,
        so every batching of a sequence leaves the same tokens held."""
        if not self.bounded or q < self.capacity:
            return 0
        over = q + 1 - self.span
        return -(-over // self.block) * self.block

    def _batch_size(self, n_left: int) -> int:
        """Tokens of the next batch: at most ``n_batch``, and never across a position
        where the eviction count changes (each token of a batch sees the same held
        tokens before it)."""
        q = len(self.ids)
        size = min(self.context.config.n_batch, n_left)
        if not self.bounded:
            return size
        limit = self.capacity if q < self.capacity else self.span + self.evicted_before(q)
        return min(size, limit - q)

    def _run(self, ids: list[int], all_logits: bool = False) -> torch.Tensor:
        """Evict what position ``len(self.ids) + len(ids) - 1`` needs, then evaluate."""
        ctx = self.context
        if not self.bounded and len(ctx.ids) + len(ids) > self.capacity:
            raise GlmdeskError(
                "prompt_too_long",
                f"The conversation needs more than the {self.capacity} tokens of the context.",
                tokens=len(ctx.ids) + len(ids),
                limit=self.capacity,
            )
        self._exact = False  # a failed decode leaves the cache in an unknown state
        want = self.evicted_before(len(self.ids) + len(ids) - 1)
        have = len(self.ids) - len(ctx.ids)
        ctx.evict(self.sinks, want - have)
        logits = ctx.eval(ids, all_logits)
        self.ids.extend(ids)
        self._exact = True
        return logits

    def _batches(self, ids: list[int], all_logits: bool = False) -> list[torch.Tensor]:
        out, at = [], 0
        while at < len(ids):
            size = self._batch_size(len(ids) - at)
            out.append(self._run(ids[at : at + size], all_logits))
            at += size
        return out

    def prefill(self, input_ids: torch.Tensor) -> torch.Tensor:
        """Run the prompt ``[1, n]`` in batches (see :meth:`_batch_size`) after the
        held sequence; return the last logits ``[vocab]``."""
        return self._batches([int(i) for i in input_ids.reshape(-1).tolist()])[-1]

    def step(self, token_id: int) -> torch.Tensor:
        """Append one token; return the next-token logits ``[vocab]`` float32."""
        return self._run([int(token_id)])

    def step_all(self, ids: Sequence[int]) -> torch.Tensor:
        """Append ``ids`` one batch at a time; logits of every position ``[n, vocab]``
        (for perplexity)."""
        return torch.cat(self._batches([int(i) for i in ids], all_logits=True))

    def reuse(self, prompt_ids: Sequence[int]) -> int:
        """Keep the longest prefix of ``prompt_ids`` the cache holds exactly; drop the rest.

        The common prefix of :attr:`ids` and ``prompt_ids`` (ids compared, not text),
        at most ``len(prompt_ids) - 1`` (the last prompt token is always run: its
        logits start the answer). The window strategies keep it only when no block
        was evicted after it (:meth:`evicted_before` gives the same count at its end
        as now), since evicted tokens cannot come back; otherwise, or when the cache
        was left unfinished by an error or taken by another source, nothing is kept
        and the cache is cleared (a fresh prefill, the same answer).

        Args:
            prompt_ids: The new prompt, shape ``[n_prompt]``.

        Returns:
            Tokens reused; the caller prefills ``prompt_ids[returned:]`` next.
        """
        ctx, seen = self.context, len(self.ids)
        common = min(common_prefix(self.ids, prompt_ids), len(prompt_ids) - 1)
        exact = self._exact and ctx.owner is self and bool(ctx.ctx)
        keep = 0
        if exact and common > 0 and self.evicted_before(common - 1) == self.evicted_before(seen - 1):
            keep = common
        if keep == 0:
            ctx.own(self)
        elif keep < seen:
            ctx.truncate(keep - self.evicted_before(seen - 1))
        del self.ids[keep:]
        self._exact = True
        return keep

    def stats(self) -> CacheStats:
        """Bytes and tokens held, read from llama.cpp."""
        seen = len(self.ids)
        windowed = self.name == "sliding_window" or (self.bounded and seen > self.capacity)
        return CacheStats(
            strategy=self.name,
            state="windowed" if windowed else "full",
            kv_bytes=self.context.kv_bytes() if self.context.owner is self else 0,
            tokens_held=self.context.held() if self.context.owner is self else 0,
            tokens_seen=seen,
            evicted=self.evicted_before(seen - 1) if seen else 0,
        )

    def release(self) -> None:
        """Forget the tokens (the context is cleared if this source still owns it; its
        buffer stays allocated for the next answer)."""
        self.context.disown(self)
        self.ids = []
        self._exact = False


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


__all__ = ["ContextConfig", "LlamaCacheSource", "LlamaContext", "evict_block", "kv_bytes_per_token", "plan"]
