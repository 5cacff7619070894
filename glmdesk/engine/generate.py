"""Our decode loop: prefill once, then one token per step with the KV cache.

Not ``model.generate``: every step reads the *current* sampling parameters from
a :class:`~glmdesk.core.settings.ParamsBox`, checks a stop
:class:`threading.Event`, and yields a :class:`GenerationChunk` of whole
characters (mlx-lm ``stream_generate`` is the model for this shape).
"""

from __future__ import annotations

import gc
import os
import threading
import time
from collections.abc import Iterator, Sequence

import torch

from glmdesk.core.errors import GlmdeskError
from glmdesk.core.messages import ChatMessage
from glmdesk.core.settings import CacheSettings, ParamsBox, SamplingParams
from glmdesk.engine.cache import make_cache_strategy
from glmdesk.engine.chunk import CacheStats, GenerationChunk
from glmdesk.engine.context import fit_prompt
from glmdesk.engine.detokenizer import IncrementalDetokenizer
from glmdesk.engine.loader import LoadedModel
from glmdesk.engine.prompt import encodable
from glmdesk.engine.sampling import next_token

#: Token slots reserved for the answer at first, in tokens (the buffer doubles after).
INITIAL_ANSWER_SLOTS = 4096


def answer_budget(params: SamplingParams, context_length: int) -> int:
    """Tokens reserved for the answer when fitting the prompt: ``max_new_tokens``,
    but never more than half the context window, in tokens."""
    return min(params.max_new_tokens, context_length // 2)


def _memory_mib(device: str) -> float:
    if device.startswith("cuda"):
        return torch.cuda.memory_allocated(device) / 2**20
    try:
        import psutil

        return psutil.Process().memory_info().rss / 2**20
    except Exception:  # psutil is a dependency; never fail a chunk for it
        return 0.0


def _oom_error(device: str) -> GlmdeskError:
    return GlmdeskError(
        "out_of_memory",
        f"{device} ran out of memory while answering. The answer so far is kept. Try a shorter "
        "context (new chat), the sliding-window KV cache, or 4-bit quantization.",
        device=device,
        stage="generation",
    )


def stream_chat(
    loaded: LoadedModel,
    messages: Sequence[ChatMessage],
    params: ParamsBox,
    cache: CacheSettings | None = None,
    stop: threading.Event | None = None,
) -> Iterator[GenerationChunk]:
    """Stream one answer to ``messages``.

    Args:
        loaded: The model, tokenizer and prompt format.
        messages: System messages, then turns ending with the user message to answer.
        params: Read before every token; replace its value to change sampling
            mid-answer (applies from the next token). ``seed`` is read once.
        cache: KV-cache strategy for this answer (default: full).
        stop: When set, the answer ends before the next token with finish reason
            ``cancelled``; the text so far is kept.

    Yields:
        One :class:`GenerationChunk` per generated token, then a final chunk with
        ``finish_reason`` set (``stop``, ``length``, ``cancelled`` or ``error``).
        Never raises: errors end the stream with ``finish_reason="error"`` and
        ``chunk.error`` (an :class:`~glmdesk.core.errors.ErrorInfo`).
    """
    cache = cache or CacheSettings()
    stop = stop or threading.Event()
    with loaded._lock:  # one answer at a time per model
        yield from _stream(loaded, list(messages), params, cache, stop)


def _stream(
    loaded: LoadedModel,
    messages: list[ChatMessage],
    params: ParamsBox,
    cache_settings: CacheSettings,
    stop: threading.Event,
) -> Iterator[GenerationChunk]:
    info = loaded.info
    start = time.perf_counter()
    n_prompt = 0
    dropped: tuple[int, ...] = ()
    generated: list[int] = []
    ttft = 0.0
    first_at = 0.0
    strategy = None
    detok = IncrementalDetokenizer(loaded.decode)
    shown = loaded.prompt_format.reply_filter()
    stats = CacheStats(cache_settings.strategy)

    def tail(cut_off: bool = True) -> str:
        """Text still held by the detokenizer and the reply filter at the end.

        ``cut_off``: the answer ends before the model finished it (length, Stop, error),
        so a character left incomplete is dropped rather than shown as U+FFFD.
        """
        text = shown(detok.flush(drop_incomplete=cut_off))
        return text + getattr(shown, "flush", lambda: "")()

    def safe_tail() -> str:
        try:
            return tail()
        except Exception:  # the error path must always yield its final chunk
            return ""

    def chunk(text: str = "", ids: tuple[int, ...] = (), finish: str | None = None, error=None):
        rate = 0.0
        if len(generated) > 1:
            rate = (len(generated) - 1) / max(time.perf_counter() - first_at, 1e-9)
        return GenerationChunk(
            text=text,
            token_ids=ids,
            prompt_tokens=n_prompt,
            n_generated=len(generated),
            ttft_s=ttft,
            tokens_per_s=rate,
            finish_reason=finish,
            error=error,
            cache=stats,
            dropped_messages=dropped,
            memory_mib=_memory_mib(info.device),
        )

    try:
        p = params.get()
        seed = p.seed if p.seed is not None else int.from_bytes(os.urandom(8), "little") >> 1
        generator = torch.Generator().manual_seed(seed)
        limit = info.context_length - answer_budget(p, info.context_length)
        fitted = fit_prompt(loaded.prompt_format, encodable(messages), limit)
        n_prompt, dropped = len(fitted.ids), fitted.dropped
        if stop.is_set():
            yield chunk(finish="cancelled")
            return
        device = loaded.model.device
        strategy = make_cache_strategy(loaded.model, cache_settings)
        # Room for the answer, grown by doubling below: a huge max_new_tokens must not
        # allocate its whole buffer up front.
        capacity = n_prompt + min(max(p.max_new_tokens, 1), INITIAL_ANSWER_SLOTS) + 1
        seen = torch.empty((1, capacity), dtype=torch.long, device=device)
        seen[0, :n_prompt] = torch.tensor(fitted.ids, dtype=torch.long)
        n_seen = n_prompt
        logits = strategy.prefill(seen[:, :n_prompt])
        stats = strategy.stats()
        while True:
            if stop.is_set():
                yield chunk(tail(), finish="cancelled")
                return
            p = params.get()
            if n_seen >= capacity:  # max_new_tokens raised mid-answer: grow
                grown = torch.empty((1, capacity * 2), dtype=torch.long, device=device)
                grown[:, :capacity] = seen
                seen, capacity = grown, capacity * 2
            token = next_token(logits, seen[:, :n_seen], p, generator)
            if not generated:
                first_at = time.perf_counter()
                ttft = first_at - start
            if token in loaded.prompt_format.stop_ids:
                yield chunk(tail(cut_off=False), finish="stop")
                return
            generated.append(token)
            seen[0, n_seen] = token
            n_seen += 1
            text = shown(detok.push(token))
            if len(generated) >= p.max_new_tokens or (
                strategy.name == "full" and n_seen >= info.context_length
            ):
                yield chunk(text + tail(), (token,), finish="length")
                return
            if getattr(shown, "stopped", False):  # the format saw its end marker in text
                yield chunk(text + tail(), (token,), finish="stop")
                return
            yield chunk(text, (token,))
            logits = strategy.step(token)
            stats = strategy.stats()
    except GlmdeskError as exc:
        yield chunk(safe_tail(), finish="error", error=exc.info)
    except torch.OutOfMemoryError:
        if strategy is not None:
            strategy.release()
        strategy = None
        gc.collect()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
        yield chunk(safe_tail(), finish="error", error=_oom_error(info.device).info)
    except Exception as exc:  # never leave the caller waiting
        err = GlmdeskError(
            "generation_failed",
            f"The answer failed: {exc.__class__.__name__}: {exc}",
            detail=f"{exc.__class__.__name__}: {exc}",
        )
        yield chunk(safe_tail(), finish="error", error=err.info)
    finally:
        if strategy is not None:
            strategy.release()
