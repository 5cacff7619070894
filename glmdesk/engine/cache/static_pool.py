"""KV buffers owned by the static decode step and reused by every answer (CUDA graphs).

A CUDA graph replays the addresses it was recorded with: a KV buffer at a new address
makes torch's CUDA graph trees record the one-token graph again (``StaticInputIdxMismatch``
in ``torch/_inductor/cudagraph_trees.py``). Every answer's fresh buffers, and every new
bucket, used to have new addresses, so each answer's first token recorded again and the
tree's list of recorded graphs grew with every answer.

Here one :class:`Slab` holds, per decoder layer, one flat storage for keys and one for
values, ``capacity x kv_heads x head_dim`` elements each. A bucket of ``B`` slots is the
storage's first ``B x kv_heads x head_dim`` elements seen as ``[batch, kv_heads, B,
head_dim]`` (a tensor set on the storage, not a view, so its base never changes
Dynamo's guards), so **every bucket of a slab starts at the same address** and its graph
is recorded once per process (per slab capacity: a slab grows, by powers of two, only
when a bucket outgrows it). The sink + window ring is one more bucket of the same slab.

A slab is leased to one cache (its layer objects) from that cache's first static token
until those layer objects die: the strategy is released, its cache is replaced
(:meth:`~glmdesk.engine.cache.base.CacheStrategy.reuse` keeping nothing, the dynamic
strategy's switch) or the strategy is dropped. While a cache holds a slab, no other cache
gets it: a conversation kept for KV reuse keeps its prefix in its own slab, and a second
strategy built while one is alive (a kept conversation, a warm-up, a benchmark) leases
another slab. One idle slab is kept (the largest); the others are freed when returned.

Slots past the held ones are zeroed whenever a cache takes a slab or a bucket: static
shapes attend to every slot with a mask, and a masked slot must still be finite.

An idle slab is real memory: it counts in the KV bytes kept between answers
(:meth:`StaticBufferPool.idle_bytes`, added to the conversations' kept caches by
:class:`~glmdesk.engine.decode.kv_pool.KVPool`), and it is the first memory given back when
an answer or a load runs out (:func:`release_idle_slabs`, every pool of the process).
"""

from __future__ import annotations

import logging
import threading
import weakref

import torch

log = logging.getLogger(__name__)

#: Idle slabs kept for the next answer (the largest first); the others are freed.
IDLE_SLABS = 1

#: Every pool alive in this process (a model's static step owns one; a closed model's goes).
_POOLS: weakref.WeakSet[StaticBufferPool] = weakref.WeakSet()


def _on_storage(storage: torch.Tensor, shape: tuple[int, ...]) -> torch.Tensor:
    """A contiguous ``shape`` tensor on the first elements of flat ``storage`` (same address)."""
    out = storage.new_empty((0,))
    strides = []
    step = 1
    for size in reversed(shape):
        strides.insert(0, step)
        step *= size
    return out.set_(storage.untyped_storage(), 0, shape, tuple(strides))


class Slab:
    """Per-layer key and value storages of ``capacity`` slots, with a view per bucket.

    Args:
        layers: Decoder layers.
        head: ``(batch, kv_heads, head_dim)`` of one layer's buffers.
        dtype: Element type.
        device: Where the storages live.
        capacity: Slots per storage, in tokens.
        static_address: Mark each bucket's tensors with ``torch._dynamo.mark_static_address``
            (CUDA graphs then read them in place).
    """

    def __init__(self, layers: int, head, dtype, device, capacity: int, static_address: bool) -> None:
        self.layers, self.head, self.dtype, self.device = layers, tuple(head), dtype, torch.device(device)
        self.static_address = static_address
        self.capacity = 0
        self.storages: list[tuple[torch.Tensor, torch.Tensor]] = []
        self._buckets: dict[int, list[tuple[torch.Tensor, torch.Tensor]]] = {}
        self.holder: weakref.finalize | None = None
        self.grow(capacity)

    def grow(self, capacity: int) -> None:
        """New storages of ``capacity`` slots (the held content is the caller's to copy)."""
        batch, kv_heads, dim = self.head
        elements = batch * kv_heads * capacity * dim
        with torch.inference_mode():
            self.storages = [
                (
                    torch.zeros(elements, dtype=self.dtype, device=self.device),
                    torch.zeros(elements, dtype=self.dtype, device=self.device),
                )
                for _ in range(self.layers)
            ]
        self.capacity = capacity
        self._buckets = {}

    def bucket(self, size: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """``(keys, values)`` per layer, ``[batch, kv_heads, size, head_dim]`` each, at the
        storages' addresses; the same tensors every time (``size <= capacity``)."""
        if size > self.capacity:
            raise ValueError(f"bucket of {size} slots in a slab of {self.capacity}")
        views = self._buckets.get(size)
        if views is None:
            batch, kv_heads, dim = self.head
            shape = (batch, kv_heads, size, dim)
            with torch.inference_mode():
                views = [(_on_storage(k, shape), _on_storage(v, shape)) for k, v in self.storages]
            for pair in views:
                for tensor in pair:
                    torch._dynamo.mark_dynamic(tensor, 2)
                    if self.static_address:
                        torch._dynamo.mark_static_address(tensor)
            self._buckets[size] = views
        return views

    def nbytes(self) -> int:
        """Bytes of the storages."""
        return sum(k.numel() * k.element_size() * 2 for k, _ in self.storages)

    def data_ptrs(self) -> list[int]:
        """Addresses of the key and value storages, layer by layer (for tests and benchmarks)."""
        return [t.data_ptr() for pair in self.storages for t in pair]

    def fits(self, layers: int, head, dtype, device) -> bool:
        return (layers, tuple(head), dtype, torch.device(device)) == (
            self.layers,
            self.head,
            self.dtype,
            self.device,
        )


class StaticBufferPool:
    """The slabs of one static decode step: leased to caches, returned when they die.

    Args:
        static_address: Mark bucket tensors as static addresses (on CUDA).

    Attributes:
        slabs: Every slab alive, leased or idle.
        allocations: Slabs allocated or grown so far (each one new addresses).
    """

    def __init__(self, static_address: bool = False) -> None:
        self.static_address = static_address
        self.slabs: list[Slab] = []
        self.allocations = 0
        self._owners: dict[int, Slab] = {}  # id(first layer) -> its slab
        # Re-entrant: a collection inside a locked block may finalize a holder (_give_back).
        self._lock = threading.RLock()
        _POOLS.add(self)

    def slab_of(self, layer) -> Slab | None:
        """The slab leased to the cache whose first layer is ``layer``, or ``None``."""
        with self._lock:
            return self._owners.get(id(layer))

    def lease(self, layer, layers: int, head, dtype, device, capacity: int) -> Slab:
        """A slab of at least ``capacity`` slots for the cache whose first layer is ``layer``.

        An idle slab of the same shape is taken first (grown when too small); else a new one.
        It returns to the pool when ``layer`` is garbage-collected.

        Raises:
            torch.OutOfMemoryError: when even after freeing the idle slabs it does not fit.
        """
        with self._lock:
            idle = [s for s in self.slabs if s.holder is None and s.fits(layers, head, dtype, device)]
            slab = max(idle, key=lambda s: s.capacity) if idle else None
            if slab is not None:
                slab.holder = weakref.finalize(layer, self._give_back, id(layer), slab)
                self._owners[id(layer)] = slab
        if slab is None:
            slab = self._allocate(lambda: Slab(layers, head, dtype, device, capacity, self.static_address))
            with self._lock:
                self.slabs.append(slab)
                slab.holder = weakref.finalize(layer, self._give_back, id(layer), slab)
                self._owners[id(layer)] = slab
        elif slab.capacity < capacity:
            self.grow(slab, capacity)
        return slab

    def grow(self, slab: Slab, capacity: int) -> None:
        """Give ``slab`` new storages of ``capacity`` slots (new addresses)."""
        self._allocate(lambda: slab.grow(capacity))

    def _allocate(self, make):
        try:
            result = make()
        except torch.OutOfMemoryError:
            release_idle_slabs()  # this pool's and every other step's
            result = make()
        self.allocations += 1
        return result

    def _give_back(self, owner: int, slab: Slab) -> None:
        with self._lock:
            if self._owners.get(owner) is slab:
                del self._owners[owner]
            slab.holder = None
            idle = sorted((s for s in self.slabs if s.holder is None), key=lambda s: -s.capacity)
            for extra in idle[IDLE_SLABS:]:
                self.slabs.remove(extra)

    def free_idle(self) -> int:
        """Drop every slab no cache holds; returns their bytes (freed once nothing else
        refers to their storages: on CUDA, back to torch's caching allocator)."""
        with self._lock:
            idle = [s for s in self.slabs if s.holder is None]
            self.slabs = [s for s in self.slabs if s.holder is not None]
        return sum(s.nbytes() for s in idle)

    def idle_bytes(self) -> int:
        """Bytes of the slabs no cache holds (kept for the next answer)."""
        with self._lock:
            return sum(s.nbytes() for s in self.slabs if s.holder is None)


def release_idle_slabs() -> int:
    """Give back every idle slab of every static step in this process (out of memory:
    they go before anything in use), then, where CUDA is available, torch's cached blocks
    (``torch.cuda.empty_cache``), so the driver and other processes see the memory free.

    Returns:
        Bytes of the slabs dropped (0 when none was idle), in bytes; logged when not 0.
    """
    freed = sum(pool.free_idle() for pool in list(_POOLS))
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    if freed:
        log.info("out of memory: gave back %.1f MiB of idle static KV slabs", freed / 2**20)
    return freed
