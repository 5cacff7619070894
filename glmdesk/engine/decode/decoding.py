"""Token generation: sampling, limits and stop ids over any source of logits.

This is the lower half of the decode loop (mlx-lm's ``generate_step``): it knows
token ids and logits only. The text layer above it (:mod:`glmdesk.engine.decode.generate`,
mlx-lm's ``stream_generate``) fits the prompt, detokenizes, times and words errors.
Every backend that can hand over next-token logits (transformers' forward through
a KV-cache strategy, llama.cpp's evaluation) runs this same loop, so the sidebar's
live controls behave the same on each.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

import torch

from glmdesk.core.settings import ParamsBox, SamplingParams
from glmdesk.engine.chunk import CacheStats
from glmdesk.engine.decode.repetition import RepetitionGuard
from glmdesk.engine.decode.sampling import build_processors

#: Token slots reserved for the answer at first, in tokens (the buffer doubles after).
INITIAL_ANSWER_SLOTS = 4096


class LogitsSource(Protocol):
    """Anything that turns ids into next-token logits while holding a KV cache.

    :class:`glmdesk.engine.cache.CacheStrategy` is one (transformers' forward);
    the llama.cpp backend's context is another.

    Attributes:
        name: The KV-cache strategy's name (``full``, ``sliding_window``...).
        device: Where its logits live (``cpu``, ``cuda:0``).
        bounded: True when the cache keeps a bounded window, so the answer may run
            past the model's context length.
    """

    name: str

    def prefill(self, input_ids: torch.Tensor) -> torch.Tensor:
        """Run the prompt ``[1, n]``; return the last position's logits ``[vocab]``."""
        ...

    def step(self, token_id: int) -> torch.Tensor:
        """Append one token; return the next-token logits ``[vocab]``, float32."""
        ...

    def stats(self) -> CacheStats:
        """What the cache holds now."""
        ...

    def release(self) -> None:
        """Drop the cache's tensors."""


class ReusableSource(LogitsSource, Protocol):
    """A logits source whose KV cache can be kept for the conversation's next prompt.

    :class:`glmdesk.engine.cache.CacheStrategy` is one; a llama.cpp context can be
    another. :class:`glmdesk.engine.decode.kv_pool.KVPool` keeps them between answers.

    Attributes:
        ids: The id processed at each position the cache has seen, in order.
    """

    ids: Sequence[int]

    def reuse(self, prompt_ids: Sequence[int]) -> int:
        """Keep the longest prefix of ``prompt_ids`` held exactly (at most
        ``len(prompt_ids) - 1``), drop the rest, return its length in tokens; the next
        :meth:`prefill` takes the ids after it."""
        ...


class Sampler:
    """Chooses tokens with transformers' processors; the chain is rebuilt only when
    the :class:`SamplingParams` value changes (a slider moved), not per token.

    Args:
        generator: The answer's seeded CPU random generator.
        extra: Constraints applied on every token before the user's chain (e.g. the
            guard that keeps byte-level output valid UTF-8), each
            ``(ids [1, n], scores [1, vocab]) -> scores`` setting what may not come
            to ``-inf``. Before the chain, so top-k / top-p / min-p choose among the
            allowed tokens and can never be left with none.
    """

    def __init__(self, generator: torch.Generator, extra: Sequence[Callable] = ()) -> None:
        self.generator = generator
        self.extra = tuple(extra)
        self._params: SamplingParams | None = None
        self._chain = None

    def __call__(self, logits: torch.Tensor, seen_ids: torch.Tensor, params: SamplingParams) -> int:
        """Choose one id from ``logits`` ``[vocab]`` after ``seen_ids`` ``[1, n]``."""
        chain = self._chain
        if params is not self._params or chain is None:
            chain = build_processors(params)
            self._params, self._chain = params, chain
        scores = logits.unsqueeze(0).float()
        for processor in self.extra:
            scores = processor(seen_ids, scores)
        # transformers annotates the ids as torch.LongTensor, a class no int64 tensor is typed as.
        scores = chain(seen_ids, scores)  # pyright: ignore[reportArgumentType]
        if params.greedy:
            return int(torch.argmax(scores, dim=-1))
        probs = torch.softmax(scores, dim=-1).cpu()
        return int(torch.multinomial(probs, 1, generator=self.generator))


def answer_seed(params: SamplingParams) -> int:
    """The answer's seed: ``params.seed``, or a fresh random one."""
    return params.seed if params.seed is not None else int.from_bytes(os.urandom(8), "little") >> 1


@dataclass(frozen=True)
class TokenStep:
    """One step of :func:`generate_tokens`.

    Attributes:
        token: The generated id (``None`` on a final step without a new token).
        finish_reason: ``None`` while generating; ``stop`` (a stop id, not included
            in ``token``), ``length`` (max new tokens or the context), ``repetition``
            (the answer is stuck repeating itself:
            :class:`~glmdesk.engine.decode.repetition.RepetitionGuard`) or ``cancelled``.
        first: True for the step that produced the answer's first token decision
            (time to first token is measured there).
    """

    token: int | None
    finish_reason: str | None = None
    first: bool = False


def generate_tokens(
    source: LogitsSource,
    prompt_ids: Sequence[int],
    params: ParamsBox,
    stop_ids: frozenset[int],
    stop: threading.Event,
    context_length: int,
    sampler: Sampler,
    reused: int = 0,
) -> Iterator[TokenStep]:
    """Prefill ``prompt_ids[reused:]`` and yield one :class:`TokenStep` per decode step.

    Reads ``params.get()`` before every token, so a changed value applies from the
    next token; ``max_new_tokens`` is read live too. ``stop`` is checked before
    every token. A full (unbounded) cache ends with ``length`` at ``context_length``.

    Args:
        source: The logits source (owns the KV cache); not released here.
        prompt_ids: Prompt token ids, ``n_prompt >= 1``.
        params: The live sampling parameters.
        stop_ids: Ids that end the answer (never yielded as tokens).
        stop: Cancels the answer before the next token.
        context_length: The model's context window, in tokens.
        sampler: The answer's :class:`Sampler`.
        reused: Leading prompt tokens the source's cache holds already (from
            :meth:`ReusableSource.reuse`), ``0 <= reused < n_prompt``; only the rest is
            prefilled. Processors still see the whole prompt.

    Yields:
        Steps; the last one has ``finish_reason`` set.

    Raises:
        Whatever the source raises (out of memory, a failed forward); the text layer
        turns it into a final chunk.
    """
    n_prompt = len(prompt_ids)
    p = params.get()
    capacity = n_prompt + min(max(p.max_new_tokens, 1), INITIAL_ANSWER_SLOTS) + 1
    device = getattr(source, "device", "cpu")
    seen = torch.empty((1, capacity), dtype=torch.long, device=device)
    seen[0, :n_prompt] = torch.tensor(list(prompt_ids), dtype=torch.long)
    bounded = getattr(source, "bounded", source.name != "full")
    if stop.is_set():
        yield TokenStep(None, "cancelled")
        return
    if not 0 <= reused < n_prompt:
        raise ValueError(f"reused tokens must be in 0..{n_prompt - 1}, not {reused}")
    logits = source.prefill(seen[:, reused:n_prompt])
    limit = None if bounded else context_length
    yield from _decode(source, logits, seen, n_prompt, params, stop_ids, stop, limit, sampler)


def _decode(
    source: LogitsSource,
    logits: torch.Tensor,
    seen: torch.Tensor,
    n_seen: int,
    params: ParamsBox,
    stop_ids: frozenset[int],
    stop: threading.Event,
    context_limit: int | None,
    sampler: Sampler,
) -> Iterator[TokenStep]:
    """The decode loop of :func:`generate_tokens` after the prefill: sample from
    ``logits`` (``(1, vocab)``), step the source, until a stop id, ``stop``, a run of
    repeated tokens (:mod:`~glmdesk.engine.decode.repetition`), max new tokens or
    ``context_limit`` (``None`` for a bounded cache).

    ``seen`` is ``(1, capacity)`` long ids whose first ``n_seen`` are the prompt; it
    doubles when ``max_new_tokens`` is raised past its capacity mid-answer.
    """
    capacity = seen.shape[1]
    n_generated = 0
    repetition = RepetitionGuard()
    while True:
        if stop.is_set():
            yield TokenStep(None, "cancelled")
            return
        p = params.get()
        if n_seen >= capacity:  # max_new_tokens raised mid-answer: grow
            grown = torch.empty((1, capacity * 2), dtype=torch.long, device=seen.device)
            grown[:, :capacity] = seen
            seen, capacity = grown, capacity * 2
        token = sampler(logits, seen[:, :n_seen], p)
        first = n_generated == 0
        if token in stop_ids:
            yield TokenStep(None, "stop", first)
            return
        n_generated += 1
        seen[0, n_seen] = token
        n_seen += 1
        if repetition.push(token):
            yield TokenStep(token, "repetition", first)
            return
        if n_generated >= p.max_new_tokens or (context_limit is not None and n_seen >= context_limit):
            yield TokenStep(token, "length", first)
            return
        yield TokenStep(token, None, first)
        logits = source.step(token)
