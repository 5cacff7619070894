"""KV-cache strategies behind one interface, chosen in :func:`make_cache_strategy`.

Every use of transformers' cache classes stays inside this package: their names
changed often across transformers 4.4x-5.x.

Strategies: ``full`` (:class:`FullCacheStrategy`), ``sliding_window``
(:class:`SlidingWindowStrategy`, attention sinks + recent window, StreamingLLM,
arXiv:2309.17453), ``dynamic`` (:class:`DynamicCacheStrategy`) and ``quantized``
(:class:`QuantizedCacheStrategy`).
"""

from __future__ import annotations

from glmdesk.core.errors import GlmdeskError
from glmdesk.core.settings import CacheSettings
from glmdesk.engine.cache.base import CacheStrategy, kv_bytes_per_token, kv_shape
from glmdesk.engine.cache.dynamic import DynamicCacheStrategy, kv_budget_bytes
from glmdesk.engine.cache.full import FullCacheStrategy
from glmdesk.engine.cache.quantized import QuantizedCacheStrategy
from glmdesk.engine.cache.window import SlidingWindowStrategy

__all__ = [
    "CacheStrategy",
    "DynamicCacheStrategy",
    "FullCacheStrategy",
    "QuantizedCacheStrategy",
    "SlidingWindowStrategy",
    "kv_budget_bytes",
    "kv_bytes_per_token",
    "kv_shape",
    "make_cache_strategy",
]

_STRATEGIES = {
    "full": FullCacheStrategy,
    "sliding_window": SlidingWindowStrategy,
    "dynamic": DynamicCacheStrategy,
    "quantized": QuantizedCacheStrategy,
}


def make_cache_strategy(model, settings: CacheSettings, step=None) -> CacheStrategy:
    """Return a fresh strategy for one answer.

    Args:
        model: A transformers causal LM (``GlmForCausalLM``, ``LlamaForCausalLM``...).
        settings: The user's cache settings.
        step: The decode step the load chose for single tokens (fused or compiled;
            ``None``: transformers' forward). The strategies are storage; they receive it.

    Raises:
        GlmdeskError: ``invalid_setting`` when the strategy cannot run here (its
            sentence says why, e.g. which package to install).
    """
    cls = _STRATEGIES.get(settings.strategy)
    if cls is None:
        raise GlmdeskError(
            "invalid_setting",
            f"The KV-cache strategy {settings.strategy!r} is not available in this build.",
            name="kv_cache",
            value=settings.strategy,
            reason="not available",
        )
    if cls is DynamicCacheStrategy:  # its GPU budget counts the step's idle slabs as free
        pool = getattr(step, "pool", None)
        strategy = cls(model, settings, reclaimable=0 if pool is None else pool.idle_bytes())
    else:
        strategy = cls(model, settings)
    strategy.decode_step = step
    return strategy
