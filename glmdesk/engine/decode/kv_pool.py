"""Kept KV caches: the last few conversations' caches, within a memory budget.

After an answer the conversation's logits source (its KV cache) is put here under
the caller's key (a conversation id; ``glmdesk serve`` uses one key for the
previous request); the next request with that key takes it back, and the source's
``reuse`` keeps the longest prefix of the new prompt it holds exactly, so only the
tokens after it are prefilled (llama.cpp's server keeps its prompt cache the same
way; vLLM's automatic prefix caching shares blocks across requests).

Entries are dropped least recently used first while the total exceeds the budget
(the dynamic strategy's KV budget, :func:`glmdesk.engine.cache.kv_budget_bytes`);
the newest entry is kept even alone over it (its memory was just in use for the
answer, and the next turn would allocate it again). A source put back under other
settings than the ones asked for next is dropped, never reused; a pool is cleared
when its model is unloaded.

KV memory kept between answers outside the entries (the static decode step's idle slabs,
:mod:`glmdesk.engine.cache.static_pool`) is the ``spare`` bytes: :meth:`KVPool.total_bytes`
counts them, so the gauge's KV share shows every byte kept for the next answer.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    from glmdesk.engine.decode.decoding import LogitsSource

#: Most conversations kept at once, whatever the budget.
MAX_ENTRIES = 8


#: What a kept source must match to be reused (the cache settings, hashable).
C = TypeVar("C", bound=Hashable)


@dataclass
class _Entry:
    source: LogitsSource
    compat: Hashable
    kv_bytes: int


def _bytes_of(source) -> int:
    try:
        return int(source.stats().kv_bytes)
    except Exception:  # a source that cannot tell counts as empty
        return 0


class KVPool(Generic[C]):
    """Conversation key -> kept logits source, least recently used dropped first.

    Thread-safe; a source is either in the pool or taken by one answer, never both.

    Args:
        budget: Called with the ``compat`` value of the entry being put and the bytes
            the pool already holds; returns the budget in bytes (e.g. the dynamic
            strategy's budget for those cache settings).
        max_entries: Most conversations kept.
        spare: Optional; returns the KV bytes kept for the next answer outside the
            entries (the static step's idle slabs), in bytes.
    """

    def __init__(
        self,
        budget: Callable[[C, int], int],
        max_entries: int = MAX_ENTRIES,
        spare: Callable[[], int] | None = None,
    ) -> None:
        self._budget = budget
        self._max = max_entries
        self._spare = spare
        self._entries: OrderedDict[Hashable, _Entry] = OrderedDict()
        self._lock = threading.Lock()

    def take(self, key: Hashable, compat: C) -> LogitsSource | None:
        """Remove and return the source kept for ``key``, or ``None``.

        Args:
            key: The conversation's key.
            compat: What the caller's cache must match (its cache settings); a source
                kept under another value is released and ``None`` returned.
        """
        with self._lock:
            entry = self._entries.pop(key, None)
        if entry is None:
            return None
        if entry.compat != compat:
            entry.source.release()
            return None
        return entry.source

    def put(self, key: Hashable, source: LogitsSource, compat: C) -> None:
        """Keep ``source`` for ``key`` (most recently used), then drop the least
        recently used others while over the budget or :attr:`max_entries`.

        Args:
            key: The conversation's key.
            source: A logits source with ``reuse``, ``stats`` and ``release``.
            compat: The settings it was made with (see :meth:`take`).
        """
        dropped = []
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None and old.source is not source:
                dropped.append(old.source)
            size = _bytes_of(source)
            held = sum(e.kv_bytes for e in self._entries.values())
            budget = self._budget(compat, held)
            while self._entries and (held + size > budget or len(self._entries) >= self._max):
                _, oldest = self._entries.popitem(last=False)
                held -= oldest.kv_bytes
                dropped.append(oldest.source)
            self._entries[key] = _Entry(source, compat, size)
        for other in dropped:
            other.release()

    def discard(self, key: Hashable) -> None:
        """Drop the cache kept for ``key`` (e.g. a conversation deleted or cleared)."""
        with self._lock:
            entry = self._entries.pop(key, None)
        if entry is not None:
            entry.source.release()

    def clear(self) -> None:
        """Drop every kept cache (the model is being unloaded)."""
        with self._lock:
            entries, self._entries = list(self._entries.values()), OrderedDict()
        for entry in entries:
            entry.source.release()

    def keys(self) -> list[Hashable]:
        """Keys kept, least recently used first."""
        with self._lock:
            return list(self._entries)

    def total_bytes(self) -> int:
        """KV bytes kept between answers, in bytes: the kept caches (not those taken by an
        answer) and the ``spare`` bytes (idle static slabs)."""
        with self._lock:
            held = sum(e.kv_bytes for e in self._entries.values())
        return held + (self._spare() if self._spare is not None else 0)

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)
