"""What glmdesk gives back when torch runs out of memory, and the sentences that say so.

An answer or a load that raises ``torch.OutOfMemoryError`` first gives back memory that
nothing in use needs: the static decode step's idle KV slabs of every model in the
process (:func:`~glmdesk.engine.cache.static_pool.release_idle_slabs`, then torch's
cached CUDA blocks). An answer also drops its own cache and the conversations' kept
caches (as before); a load then tries once more. The error's sentence says how much was
given back (``freed_mib``), so the user knows it was not simply full.
"""

from __future__ import annotations

import gc

from glmdesk.core.errors import GlmdeskError
from glmdesk.engine.cache.static_pool import release_idle_slabs


def give_back_memory(source=None, kept=None) -> int:
    """After an out-of-memory error: release ``source`` (the answer's logits source) and
    clear ``kept`` (a :class:`~glmdesk.engine.decode.kv_pool.KVPool`), collect, then give
    back every idle static KV slab (theirs among them) and torch's cached CUDA blocks.

    Returns:
        Bytes of idle slabs given back, in bytes.
    """
    if source is not None:
        source.release()
    if kept is not None:
        kept.clear()
    gc.collect()
    return release_idle_slabs()


def given_back(freed: int) -> tuple[str, dict]:
    """``(English sentence, error params)`` for ``freed`` bytes given back: a leading-space
    sentence and ``{"freed_mib": MiB}``, or ``("", {})`` when nothing was."""
    if freed <= 0:
        return "", {}
    mib = round(freed / 2**20, 1)
    return f" glmdesk gave back {mib:.1f} MiB of idle KV buffers first.", {"freed_mib": mib}


def answer_error(device: str, freed: int) -> GlmdeskError:
    """The ``out_of_memory`` error of an answer on ``device`` (stage ``generation``);
    ``freed``: bytes given back by :func:`give_back_memory`."""
    sentence, params = given_back(freed)
    return GlmdeskError(
        "out_of_memory",
        f"{device} ran out of memory while answering. The answer so far is kept. Try a shorter "
        f"context (new chat), the sliding-window KV cache, or 4-bit quantization.{sentence}",
        device=device,
        stage="generation",
        **params,
    )
