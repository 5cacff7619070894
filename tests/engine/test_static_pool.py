"""The static decode step's KV slabs: one address per slab for every bucket, leased to
one cache at a time, back in the pool when that cache's layers die."""

from __future__ import annotations

import gc

import torch

from glmdesk.engine.cache.static_pool import IDLE_SLABS, StaticBufferPool

HEAD = (1, 2, 8)  # batch, KV heads, head dim


class Layer:
    """Stands for a cache's first layer object (what a lease is tied to)."""


def lease(pool, layer, capacity=64, layers=3):
    return pool.lease(layer, layers, HEAD, torch.float32, "cpu", capacity)


def test_every_bucket_of_a_slab_starts_at_the_same_address():
    pool = StaticBufferPool()
    slab = lease(pool, Layer(), capacity=64)
    small, large = slab.bucket(16), slab.bucket(64)
    for (k16, v16), (k64, v64) in zip(small, large, strict=True):
        assert k16.shape == (1, 2, 16, 8) and k64.shape == (1, 2, 64, 8)
        assert k16.data_ptr() == k64.data_ptr() and v16.data_ptr() == v64.data_ptr()
        assert k16.is_contiguous() and k16._base is None and not k16.any()
    assert slab.bucket(16) is small  # the same tensors every time
    assert len({k.data_ptr() for k, _ in large}) == 3  # one storage per layer


def test_a_slab_returns_when_its_cache_dies_and_the_next_cache_gets_it():
    pool = StaticBufferPool()
    first = Layer()
    slab = lease(pool, first)
    pointers = slab.data_ptrs()
    assert pool.slab_of(first) is slab and pool.idle_bytes() == 0
    del first
    gc.collect()
    assert pool.idle_bytes() == slab.nbytes() == 3 * 2 * 64 * 2 * 8 * 4
    again = lease(pool, Layer())
    assert again is slab and again.data_ptrs() == pointers and pool.allocations == 1


def test_a_second_cache_alive_at_the_same_time_gets_other_buffers():
    pool = StaticBufferPool()
    kept, other = Layer(), Layer()
    a, b = lease(pool, kept), lease(pool, other)
    assert a is not b and not set(a.data_ptrs()) & set(b.data_ptrs())
    with torch.inference_mode():  # as every write of a decode step
        a.bucket(64)[0][0].fill_(1.0)
    assert not b.bucket(64)[0][0].any()  # writing one never touches the other
    del kept, other
    gc.collect()
    assert sum(s.holder is None for s in pool.slabs) == IDLE_SLABS == len(pool.slabs)


def test_a_slab_grows_for_a_larger_bucket_and_another_shape_gets_its_own():
    pool = StaticBufferPool()
    layer = Layer()
    slab = lease(pool, layer, capacity=64)
    pool.grow(slab, 256)
    assert slab.capacity == 256 and slab.bucket(256)[0][0].shape[2] == 256
    other = pool.lease(Layer(), 3, (1, 4, 8), torch.float32, "cpu", 64)
    assert other is not slab and pool.allocations == 3


def slab_bytes(slab) -> int:
    return sum(t.numel() * t.element_size() for pair in slab.storages for t in pair)


def test_an_idle_slab_counts_in_the_kv_bytes_kept_between_answers():
    """The gauge's KV share (the kept caches' ``total_bytes``) grows by the slab's bytes
    when its cache dies, and goes back when the next cache leases it."""
    from glmdesk.engine.decode.kv_pool import KVPool
    from glmdesk.engine.memory import MIB, MemoryProbe

    pool = StaticBufferPool()
    kept = KVPool(lambda compat, held: 1 << 40, spare=pool.idle_bytes)
    layer = Layer()
    slab = lease(pool, layer, capacity=128)
    assert kept.total_bytes() == 0  # leased: the answer's cache counts it, not the kept bytes
    del layer
    gc.collect()
    assert kept.total_bytes() == slab_bytes(slab) == 3 * 2 * (1 * 2 * 128 * 8) * 4
    reading = MemoryProbe(nvml=None).read(0, kept.total_bytes())
    assert reading.kv_mib == slab_bytes(slab) / MIB
    again = Layer()
    assert lease(pool, again) is slab and kept.total_bytes() == 0


def test_out_of_memory_gives_back_every_idle_slab_and_keeps_the_leased_ones():
    import weakref

    from glmdesk.engine.cache.static_pool import release_idle_slabs

    pools = [StaticBufferPool(), StaticBufferPool()]
    held = Layer()
    leased = lease(pools[0], held)
    idle = []
    for pool in pools:  # fill: a slab of each pool's own, then its cache dies
        layer = Layer()
        idle.append(lease(pool, layer, capacity=256))
        del layer
    gc.collect()
    storages = [weakref.ref(k) for slab in idle for k, _ in slab.storages]
    expected = sum(slab_bytes(slab) for slab in idle)
    assert sum(p.idle_bytes() for p in pools) == expected
    idle.clear()
    assert release_idle_slabs() >= expected  # other tests' idle pools may give back too
    assert all(p.idle_bytes() == 0 for p in pools)
    assert pools[0].slabs == [leased] and pools[1].slabs == []
    gc.collect()
    assert all(ref() is None for ref in storages)  # the memory itself is gone
    assert pools[0].slab_of(held) is leased and release_idle_slabs() == 0
