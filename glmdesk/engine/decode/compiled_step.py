"""The fused decode step compiled with ``torch.compile`` (opt-in, CPU, full KV cache).

Eager PyTorch spends about as long dispatching the fused step's small operations
(norms, rotary, casts, residual adds; ~30 per layer) as the matrix kernels take.
``torch.compile`` (TorchInductor) fuses those into generated C++ loops and calls
the matrix and attention kernels directly, so one token is one compiled call.
Costs: a C++ compiler must be installed, and the first compile of a model takes
one to two minutes on two cores (tracing alone ~30 s on later starts; the generated
code is cached in glmdesk's cache folder, ``TORCHINDUCTOR_CACHE_DIR``).

Only the full cache's growing buffers (:class:`~glmdesk.engine.cache.layers.GrowingLayer`)
take the compiled path: the token's key and value are written into the buffer in
the compiled graph, and attention reads the held slots. Every other cache layer,
and any token the compiled call fails on, goes through the eager
:class:`~glmdesk.engine.decode.decode_step.FusedDecodeStep`.

Reference: PyTorch's "torch.compile" tutorial and gpt-fast's compiled decode
step (``decode_one_token``), which this follows with dynamic shapes instead of a
static cache.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
import types
from pathlib import Path

import torch

from glmdesk.engine.cache.layers import GrowingLayer
from glmdesk.engine.decode.decode_step import FusedDecodeStep

log = logging.getLogger(__name__)


def _own_function(method):
    """``method`` bound to a copy of its function with its own code object.

    TorchDynamo keeps compiled graphs, and counts recompiles (8 at most), per code
    object: with a copy per step, a model's graphs are freed with its step and a
    session that loads many models never reaches the limit (past it, Dynamo would
    silently run the step uncompiled).
    """
    func = method.__func__
    copy = types.FunctionType(
        func.__code__.replace(), func.__globals__, func.__name__, func.__defaults__, func.__closure__
    )
    return types.MethodType(copy, method.__self__)


class CompiledDecodeStep:
    """A :class:`FusedDecodeStep` whose layer loop runs under ``torch.compile``.

    Args:
        step: The eager fused step (Llama layout; GLM models keep the eager step).

    Raises:
        ValueError: for a step that rotates with the model's own function (GLM).
    """

    def __init__(self, step: FusedDecodeStep) -> None:
        if step.apply_rotary is not None:
            raise ValueError("the compiled decode step supports the Llama rotary layout only")
        self.eager = step
        self.failure: str | None = None
        self._compiled = torch.compile(_own_function(self._layers), dynamic=True, fullgraph=True)

    def accepts(self, cache, n_tokens: int, attention_mask) -> bool:
        """As :meth:`FusedDecodeStep.accepts`."""
        return self.eager.accepts(cache, n_tokens, attention_mask)

    def _layers(self, x, cos, sin, keys: list, values: list, position: int) -> torch.Tensor:
        """:meth:`FusedDecodeStep.run_layers` with the full cache's buffers: the token's key
        and value go to slot ``position`` of each ``[1, kv_heads, capacity, head_dim]``
        buffer, and attention reads slots ``0..position``. Returns logits ``[vocab]``.
        Only ``position`` and the buffer capacity are dynamic in the graph.
        """

        def store(index: int, key: torch.Tensor, value: torch.Tensor):
            layer_keys, layer_values = keys[index], values[index]
            layer_keys.narrow(2, position, 1).copy_(key)
            layer_values.narrow(2, position, 1).copy_(value)
            return layer_keys.narrow(2, 0, position + 1), layer_values.narrow(2, 0, position + 1)

        return self.eager.run_layers(x, cos, sin, store)

    def _compilable(self, cache) -> bool:
        layers = cache.layers
        return (
            self.failure is None
            and all(type(layer) is GrowingLayer and layer.is_initialized for layer in layers)
            # Sizes 0 and 1 would be specialised into the graph (a second compile).
            and layers[0].length >= 2
        )

    def __call__(self, cache, input_ids: torch.Tensor, position: int) -> torch.Tensor:
        """As :meth:`FusedDecodeStep.__call__` (logits ``[vocab]``, float32)."""
        if not self._compilable(cache):
            return self.eager(cache, input_ids, position)
        layers = cache.layers
        buffers = [layer.slot_buffers(1) for layer in layers]
        held = buffers[0][2]
        x = self.eager.embed(input_ids)
        cos, sin = self.eager.rotary(x, torch.tensor([[position]], device=input_ids.device))
        try:
            logits = self._compiled(x, cos, sin, [b[0] for b in buffers], [b[1] for b in buffers], held)
        except Exception as exc:  # a compile error: decode eagerly from now on
            self.failure = f"{exc.__class__.__name__}: {exc}"
            log.warning("compiled decode step failed, decoding eagerly: %s", self.failure)
            return self.eager(cache, input_ids, position)
        for layer in layers:
            layer.commit(1)
        return logits


#: C++ compilers TorchInductor's CPU backend can call (``CXX`` overrides).
COMPILERS = ("g++", "c++", "clang++", "cl")


def compiler_missing_reason() -> str | None:
    """Why ``torch.compile`` cannot build code on this machine (``None`` when it can).

    Checked before compiling, so a load does not spend a minute tracing to fail at
    the first C++ build: the packaged app (PyInstaller) lacks Python's build tools,
    and Inductor needs a C++ compiler on ``PATH`` (or named by ``CXX``).
    """
    if getattr(sys, "frozen", False):
        return "the packaged app cannot compile (no Python build tools)"
    if not (os.environ.get("CXX") or any(shutil.which(name) for name in COMPILERS)):
        return "no C++ compiler was found (g++, clang++ or cl)"
    return None


def compile_unsupported_reason(model, step) -> str | None:
    """Why ``step`` (the load's decode step for ``model``) cannot be compiled (``None`` when it can)."""
    if step is None:
        return "the fused decode step is off"
    if isinstance(step, CompiledDecodeStep):
        return None
    if step.apply_rotary is not None:
        return f"{model.config.model_type} models decode with the eager fused step"
    return None


def _use_cache_dir(cache_dir: Path) -> None:
    """Point Inductor's code cache at ``cache_dir`` unless the user chose one.

    Importing transformers already sets ``TORCHINDUCTOR_CACHE_DIR`` to torch's default
    (a folder under the temporary directory, emptied on reboot), so a value equal to
    that default is replaced; any other value was set by the user and is kept.
    """
    from torch._inductor.runtime.cache_dir_utils import default_cache_dir

    current = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    if current is None or os.path.abspath(current) == os.path.abspath(default_cache_dir()):
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(cache_dir)


def compile_decode_step(model, step, cache_dir: Path | None = None) -> CompiledDecodeStep:
    """Wrap ``model``'s fused step for ``torch.compile`` and compile it now, on a short warm-up.

    Args:
        model: A model whose projections were fused (:func:`~glmdesk.engine.decode.decode_step.fuse_projections`).
        step: Its :class:`~glmdesk.engine.decode.decode_step.FusedDecodeStep` (or a compiled one).
        cache_dir: Where TorchInductor keeps generated code across runs (sets
            ``TORCHINDUCTOR_CACHE_DIR`` unless the user set it; see :func:`_use_cache_dir`).

    Returns:
        The compiled step; the caller uses it in place of the eager one.

    Raises:
        ValueError: when the model's step cannot be compiled (see
            :func:`compile_unsupported_reason`).
        RuntimeError: when compiling fails (no C++ compiler, an unsupported operation);
            the eager step stays usable.
    """
    from glmdesk.core.settings import CacheSettings
    from glmdesk.engine.cache import FullCacheStrategy

    reason = compile_unsupported_reason(model, step)
    if reason is not None:
        raise ValueError(f"cannot compile the decode step: {reason}")
    if cache_dir is not None:
        _use_cache_dir(cache_dir)
    compiled = step if isinstance(step, CompiledDecodeStep) else CompiledDecodeStep(step)
    warm_up = FullCacheStrategy(model, CacheSettings(), initial_tokens=16)
    try:
        with torch.inference_mode():
            warm_up.prefill(torch.zeros((1, 3), dtype=torch.long, device=model.device))
            for _ in range(2):  # the second call checks that the graph is reused
                compiled(warm_up.cache, torch.zeros((1, 1), dtype=torch.long), warm_up.tokens_seen)
                warm_up.tokens_seen += 1
    finally:
        warm_up.release()
    if compiled.failure is not None:
        raise RuntimeError(compiled.failure)
    return compiled
