"""The static decode path: one compiled graph for the one-token forward, static KV shapes.

Eager decoding on a GPU is bound by the host: every token launches a few hundred
small kernels. This path runs the fused decode step's layers
(:meth:`~glmdesk.engine.decode.decode_step.FusedDecodeStep.run_layers`) as one
``torch.compile(fullgraph=True)`` graph whose inputs keep their shapes and
addresses from token to token, so that on CUDA the graph is captured once and
replayed (``mode="reduce-overhead"``, CUDA graphs); on the CPU the same graph runs
compiled by Inductor, without CUDA graphs.

- **KV buffers in buckets.** The full cache's buffers are resized outside the graph
  to a bucket of context length (:func:`bucket_tokens`: powers of two from
  :data:`MIN_BUCKET` tokens up to the cache's limit); crossing a bucket copies the
  held slots into the next one. The sink + window ring is one fixed bucket of
  ``sinks + window`` slots. The bucket size is the graph's one symbolic dimension
  (``torch._dynamo.mark_dynamic``), so a new bucket is not a recompile; on CUDA each
  bucket gets its own captured graph (CUDA graph trees record one per shape).
- **Per-step inputs in one static device buffer** ``[token, position, slot, valid]``
  updated with ``copy_``: the token's key and value are written with ``index_copy_``
  at slot ``slot`` (a device tensor), and attention reads every slot of the bucket
  with a mask that shows slots ``0..valid-1``, so the shapes never change.
- **Grouped-query attention without repeating keys**: the query heads that share a
  KV head are laid out as that head's queries (``[1, kv_heads, group, head_dim]``),
  so GLM's 2 KV heads are read once, with any SDPA kernel that takes a mask.
- **Sampling stays outside**: the graph returns the logits; the decode loop samples
  each token with the live parameters and reads it back (one small copy per token).

Every KV strategy's layers run here: the full cache (:class:`GrowingLayer`), the
sink + window ring (:class:`SinkWindowLayer`, appending until full, then writing the
slot the leaving token frees; positions are the ring book's), and the dynamic
strategy, which is one then the other. The quantized cache, chunks of more than one
token and a layer this path does not know go through the eager fused step.

- **KV buffers owned by the step** (:class:`~glmdesk.engine.cache.static_pool.StaticBufferPool`):
  at its first static token a cache leases a slab (per layer, one key and one value
  storage) and every bucket, ring included, is a tensor at the start of those storages.
  A slab outlives the answer and the next answer's cache takes it back, so a bucket's
  graph keeps its addresses: on CUDA it is recorded once per process (per slab size),
  not at every answer's first token. A kept conversation holds its own slab (its prefix
  stays in it); a second strategy alive at the same time leases another one.

On CUDA (written, not yet run on a GPU) the bucket tensors are marked as static
addresses, so replays never copy them. torch 2.13's CUDA graph trees re-record a graph
whose static input moved (without counting it towards
``torch._inductor.config.triton.cudagraph_unexpected_rerecord_limit``), keeping every
recording; :meth:`StaticDecodeStep.recordings` counts them after the warm-up
(:func:`cuda_graphs_recorded`), beside :meth:`StaticDecodeStep.recompiles`.

Costs: a C++ compiler on the CPU (Triton on CUDA); the first compile takes about a
minute on two cores, and Inductor caches the generated code in glmdesk's cache
folder. :func:`recompiles` counts Dynamo compiles after the warm-up (goal 0).

References: transformers' ``StaticCache`` / ``StaticLayer`` (preallocated buffers
marked as static addresses, ``index_copy_`` at a position tensor) and gpt-fast's
``decode_one_token`` (the compiled one-token step, sampling outside the graph).
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from glmdesk.engine.cache.layers import GrowingLayer, SinkWindowLayer
from glmdesk.engine.cache.static_pool import StaticBufferPool
from glmdesk.engine.decode.compile_support import own_function, use_cache_dir
from glmdesk.engine.decode.decode_step import FusedDecodeStep, fuse_projections

log = logging.getLogger(__name__)

#: Smallest KV bucket of the full cache, in tokens.
MIN_BUCKET = 1024
#: Cache layers this path writes itself.
LAYER_TYPES = (GrowingLayer, SinkWindowLayer)


def bucket_tokens(needed: int, limit: int | None) -> int:
    """The bucket that holds ``needed`` slots: the next power of two from
    :data:`MIN_BUCKET`, capped at ``limit`` (the cache's most tokens) when that is
    at least ``needed``. In tokens."""
    size = max(MIN_BUCKET, 1 << max(needed - 1, 0).bit_length())
    if limit is not None and needed <= limit:
        size = min(size, limit)
    return size


def _move(layer, keys: torch.Tensor, values: torch.Tensor) -> None:
    """Make ``keys``/``values`` (``[b, kv_heads, bucket, head_dim]``, a slab's bucket) the
    layer's buffers: its held slots copied in (through a copy when they share the storage,
    whose layout differs per bucket), the slots after them zeroed (masked, but read)."""
    held = layer.length
    for old, new in ((layer.keys, keys), (layer.values, values)):
        kept = old[:, :, :held]
        if old.untyped_storage().data_ptr() == new.untyped_storage().data_ptr():
            kept = kept.clone()
        new[:, :, :held].copy_(kept)
        new[:, :, held:].zero_()
    layer.keys, layer.values = keys, values


class StaticDecodeStep:
    """A :class:`FusedDecodeStep` run as one compiled graph on static KV buffers.

    Args:
        step: The eager fused step (it answers every forward this path does not take).

    Attributes:
        eager: That step.
        failure: Why compiled decoding stopped (``None`` while it runs).
        cuda: Whether the graph is captured as CUDA graphs.
        compile_seconds: Time :func:`build_static_step` spent compiling and warming up, in s.
        pool: The KV slabs every answer's cache decodes in (:mod:`glmdesk.engine.cache.static_pool`).
    """

    def __init__(self, step: FusedDecodeStep) -> None:
        self.eager = step
        self.device = step.embed.weight.device
        self.cuda = self.device.type == "cuda"
        self.failure: str | None = None
        self.compile_seconds = 0.0
        self._warm_graphs: int | None = None
        self._warm_recordings: int | None = None
        self.pool = StaticBufferPool(static_address=self.cuda)
        heads, kv_heads, dim = step.sizes[:3]
        self._group = (kv_heads, heads // kv_heads, dim)
        # [token, position, slot, valid]: the step's one per-token input.
        self._inputs = torch.zeros(4, dtype=torch.long, device=self.device)
        self._function = own_function(self._one_token)
        mode = "reduce-overhead" if self.cuda else None
        self._compiled = torch.compile(self._function, fullgraph=True, mode=mode)

    # -- the graph ---------------------------------------------------------------

    def _one_token(self, inputs: torch.Tensor, keys: list, values: list) -> torch.Tensor:
        """Token ``inputs[0]`` at rotary position ``inputs[1]``: its key and value go
        to slot ``inputs[2]`` of every ``[1, kv_heads, bucket, head_dim]`` buffer and it
        attends to slots ``0..inputs[3]-1``. Returns logits ``[vocab]``, float32."""
        eager = self.eager
        x = eager.embed(inputs[0:1].view(1, 1))
        cos, sin = eager.rotary(x, inputs[1:2].view(1, 1))
        slot = inputs[2:3]
        bucket = keys[0].shape[2]
        visible = (torch.arange(bucket, device=x.device) < inputs[3]).view(1, 1, 1, bucket)
        kv_heads, group, dim = self._group

        def store(index: int, key: torch.Tensor, value: torch.Tensor):
            keys[index].index_copy_(2, slot, key)
            values[index].index_copy_(2, slot, value)
            return keys[index], values[index]

        def attend(q: torch.Tensor, layer_keys: torch.Tensor, layer_values: torch.Tensor) -> torch.Tensor:
            grouped = q.view(1, kv_heads, group, dim)  # a KV head's queries, keys read once
            out = F.scaled_dot_product_attention(
                grouped, layer_keys, layer_values, attn_mask=visible, scale=eager.scaling
            )
            # CUDA's attention kernels may return the heads strided: reshape copies then.
            return out.reshape(1, kv_heads * group, 1, dim)

        return eager.run_layers(x, cos, sin, store, attend)

    # -- per token ----------------------------------------------------------------

    def accepts(self, cache, n_tokens: int, attention_mask) -> bool:
        """As :meth:`FusedDecodeStep.accepts` (the step answers what this path does not take)."""
        return self.eager.accepts(cache, n_tokens, attention_mask)

    def _takes(self, cache) -> bool:
        layers = cache.layers
        kind = type(layers[0])
        if self.failure is not None or kind not in LAYER_TYPES:
            return False
        if not all(type(layer) is kind and layer.is_initialized for layer in layers):
            return False
        first = layers[0]
        if kind is GrowingLayer:
            return first.max_tokens is None or first.length < first.max_tokens
        return first.plan.mode in ("append", "ring")

    def _place(self, layers) -> tuple[int, int]:
        """Point every layer at this token's bucket of the cache's slab (leased from
        :attr:`pool` at its first static token); return ``(slot, valid)``."""
        first = layers[0]
        if type(first) is GrowingLayer:
            held = first.length
            bucket = bucket_tokens(max(held + 1, first.capacity), first.max_tokens)
            slot, valid = held, held + 1
        else:
            bucket = first.max_tokens
            if first.plan.mode == "ring":  # a full ring: the leaving token's slot
                slot, valid = first.plan.slot, first.length
            else:
                slot, valid = first.length, first.length + 1
        slab = self.pool.slab_of(first)
        if slab is None:
            keys, _ = first.kv_buffers()
            batch, kv_heads, _, dim = keys.shape
            slab = self.pool.lease(
                first, len(layers), (batch, kv_heads, dim), keys.dtype, keys.device, bucket
            )
        elif slab.capacity < bucket:  # new storages: copy from the layers' old tensors below
            self.pool.grow(slab, bucket)
        for layer, (keys, values) in zip(layers, slab.bucket(bucket), strict=True):
            if layer.keys is not keys:
                _move(layer, keys, values)
        return slot, valid

    def __call__(self, cache, input_ids: torch.Tensor, position: int) -> torch.Tensor:
        """As :meth:`FusedDecodeStep.__call__`: append one token, return logits ``[vocab]``, float32."""
        if not self._takes(cache):
            return self.eager(cache, input_ids, position)
        layers = cache.layers
        slot, valid = self._place(layers)
        self._inputs[0:1].copy_(input_ids.view(1))
        self._inputs[1:].copy_(torch.tensor((position, slot, valid)))
        try:
            if self.cuda:
                torch.compiler.cudagraph_mark_step_begin()
            logits = self._compiled(self._inputs, [la.keys for la in layers], [la.values for la in layers])
        except Exception as exc:  # a compile error: decode eagerly from now on
            self.failure = f"{exc.__class__.__name__}: {exc}"
            log.warning("static decode step failed, decoding eagerly: %s", self.failure)
            return self.eager(cache, input_ids, position)
        for layer in layers:
            if type(layer) is GrowingLayer or layer.plan.mode == "append":
                layer.length += 1
        # A captured graph's output is overwritten by its next replay: hand out a copy.
        return logits.clone() if self.cuda else logits

    # -- accounting ---------------------------------------------------------------

    def compiled_graphs(self) -> int:
        """Graphs Dynamo holds for this step (compiles so far, warm-up included)."""
        from torch._dynamo.eval_frame import _debug_get_cache_entry_list

        return len(_debug_get_cache_entry_list(self._function.__func__.__code__))

    def recompiles(self) -> int:
        """Compiles of this step since its warm-up ended (0 when nothing was recompiled)."""
        if self._warm_graphs is None:
            return 0
        return self.compiled_graphs() - self._warm_graphs

    def graphs_recorded(self) -> int:
        """CUDA graphs recorded on this step's device so far (:func:`cuda_graphs_recorded`;
        0 on the CPU)."""
        return cuda_graphs_recorded(self.device) if self.cuda else 0

    def recordings(self) -> int:
        """CUDA graphs recorded since the warm-up ended: one per bucket (and slab size)
        first used after it, none for an answer whose buckets were used before."""
        if self._warm_recordings is None:
            return 0
        return self.graphs_recorded() - self._warm_recordings


def cuda_graphs_recorded(device: torch.device) -> int:
    """CUDA graphs torch's CUDA graph trees hold for ``device``: every recording, each a
    node of ``torch._inductor.cudagraph_trees``' tree (re-recordings after an address
    change included; warm-up runs are not graphs). 0 before any, or off CUDA."""
    if device.type != "cuda":
        return 0
    from torch._inductor import cudagraph_trees

    index = device.index if device.index is not None else torch.cuda.current_device()
    manager = cudagraph_trees.get_manager(index, create_if_none_exists=False)
    if manager is None or manager.roots is None:
        return 0
    nodes, count = list(manager.get_roots()), 0
    while nodes:
        node = nodes.pop()
        count += 1
        for children in node.children.values():
            nodes.extend(children)
    return count


def recompiles(step) -> int:
    """Dynamo compiles of ``step`` after its warm-up (0 for a step that is not static)."""
    return step.recompiles() if isinstance(step, StaticDecodeStep) else 0


def recordings(step) -> int:
    """CUDA graphs recorded for ``step`` after its warm-up (0 for a step that is not static)."""
    return step.recordings() if isinstance(step, StaticDecodeStep) else 0


def warm_up(step: StaticDecodeStep, model, report=None) -> None:
    """Compile ``step`` now: a 3-token prefill and two tokens in the smallest bucket
    (the second reuses the graph), then a ring of 20 slots (the same graph: bucket
    sizes are symbolic). Sets :attr:`StaticDecodeStep.compile_seconds`.

    Args:
        step: The step to compile.
        model: Its model.
        report: Optional ``report("compiling", done, 2)`` after each of the two.

    Raises:
        RuntimeError: when compiling fails (the eager step stays usable).
    """
    from glmdesk.core.settings import CacheSettings
    from glmdesk.engine.cache import FullCacheStrategy, SlidingWindowStrategy

    started = time.perf_counter()
    makers = (
        lambda: FullCacheStrategy(model, CacheSettings(), initial_tokens=16),
        lambda: SlidingWindowStrategy(model, CacheSettings("sliding_window", window=16, sinks=4)),
    )
    for done, make in enumerate(makers, 1):  # one at a time: both decode in the same slab
        strategy = make()
        try:
            strategy.decode_step = step
            strategy.prefill(torch.zeros((1, 3), dtype=torch.long, device=model.device))
            for _ in range(2):
                strategy.step(0)
        finally:
            strategy.release()
        if report is not None:
            report("compiling", done, len(makers))
    if step.failure is not None:
        raise RuntimeError(step.failure)
    step._warm_graphs = step.compiled_graphs()
    step._warm_recordings = step.graphs_recorded()
    step.compile_seconds = time.perf_counter() - started


def build_static_step(model, cache_dir: Path | None = None, report=None) -> StaticDecodeStep:
    """The static decode path for ``model``, compiled and warmed up now.

    Args:
        model: A Llama- or GLM-architecture transformers causal LM on the CPU or a CUDA
            device, with plain linear projections (fused here in place unless they are;
            glmdesk's loader fuses, then quantizes weight-only, then calls this).
        cache_dir: Where Inductor keeps generated code across runs
            (``TORCHINDUCTOR_CACHE_DIR`` unless the user set it); ``None`` leaves it.
        report: Optional ``report(stage, done, total)``; called with ``"compiling"``
            (0 of 2 before, then after each warm-up cache).

    Returns:
        The step; pass it to :func:`~glmdesk.engine.cache.make_cache_strategy`.

    Raises:
        ValueError: for a model the fused step cannot run.
        RuntimeError: when compiling fails.
    """
    from glmdesk.engine.decode.decode_step import ProjectionSlice, _text_model

    inner = _text_model(model)
    if inner is None or not isinstance(inner.layers[0].self_attn.q_proj, ProjectionSlice):
        fuse_projections(model, any_device=True)
    if cache_dir is not None:
        use_cache_dir(cache_dir)
    if report is not None:
        report("compiling", 0, 2)
    step = StaticDecodeStep(FusedDecodeStep(model))
    warm_up(step, model, report)
    return step
