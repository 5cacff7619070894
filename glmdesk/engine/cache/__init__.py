"""KV-cache strategies behind one interface, chosen in :func:`make_cache_strategy`.

Every use of transformers' cache classes stays inside this package: their names
changed often across transformers 4.4x-5.x.
"""

from __future__ import annotations

from glmdesk.core.settings import CacheSettings
from glmdesk.engine.cache.base import CacheStrategy, FullCacheStrategy

__all__ = ["CacheStrategy", "FullCacheStrategy", "make_cache_strategy"]


def make_cache_strategy(model, settings: CacheSettings) -> CacheStrategy:
    """Return a fresh strategy for one answer.

    Args:
        model: A transformers causal LM (``GlmForCausalLM``, ``LlamaForCausalLM``...).
        settings: The user's cache settings.

    Raises:
        GlmdeskError: ``invalid_setting`` when the strategy cannot run here (its
            sentence says why).
    """
    if settings.strategy == "full":
        return FullCacheStrategy(model, settings)
    from glmdesk.core.errors import GlmdeskError

    raise GlmdeskError(
        "invalid_setting",
        f"The KV-cache strategy {settings.strategy!r} is not available in this build.",
        name="kv_cache",
        value=settings.strategy,
        reason="not available",
    )
