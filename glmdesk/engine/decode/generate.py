"""The text layer of the decode loop: prompt fitting, detokenizing, timings, errors.

Not ``model.generate``: token generation (:func:`glmdesk.engine.decode.decoding.generate_tokens`)
reads the *current* sampling parameters from a :class:`~glmdesk.core.settings.ParamsBox`
before every token and checks a stop :class:`threading.Event`; this layer turns its
ids into :class:`GenerationChunk` values of whole characters (mlx-lm splits
``generate_step`` from ``stream_generate`` the same way). Any backend that offers a
:class:`TextModel` (a prompt format, a detokenizer and a logits source) streams
through :func:`stream_answer`.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Hashable, Iterator, Sequence
from typing import Protocol

import torch

from glmdesk.core.errors import ErrorInfo, GlmdeskError
from glmdesk.core.messages import ChatMessage
from glmdesk.core.parts import ReasoningPart, ReplyPart, ToolCallPart, merged
from glmdesk.core.settings import CacheSettings, ParamsBox, SamplingParams
from glmdesk.core.tools import ToolSet
from glmdesk.engine.chunk import CacheStats, GenerationChunk
from glmdesk.engine.decode.answer_clock import AnswerClock
from glmdesk.engine.decode.context import (
    FittedPrompt,
    answer_budget,
    fit_prompt,
    min_reply_tokens,
    reply_limit,
)
from glmdesk.engine.decode.decoding import LogitsSource, Sampler, answer_seed, generate_tokens
from glmdesk.engine.decode.detokenizer import IncrementalDetokenizer
from glmdesk.engine.decode.out_of_memory import answer_error, give_back_memory
from glmdesk.engine.decode.thinking_budget import thinking_budget
from glmdesk.engine.families.parser import ReplyParser, reply_parser
from glmdesk.engine.formats.prompt import (
    PromptFormat,
    ReplyFilter,
    continued,
    encodable,
    forced_call,
    thinking_for,
)

#: Builds the prompt for an answer from the prompt limit (context minus answer budget,
#: in tokens); raises ``GlmdeskError("prompt_too_long")`` when it cannot fit.
#: ``prompt(limit, fallback) -> FittedPrompt``: the prompt fitted into ``limit`` tokens (or
#: ``fallback`` with a shorter reply), see :func:`glmdesk.engine.decode.context.fit_prompt`.
PromptBuilder = Callable[[int, int], FittedPrompt]


class TextModel(Protocol):
    """What :func:`stream_answer` needs from a loaded model.

    Attributes:
        prompt_format: How conversations become ids; its ``stop_ids`` end replies.
        context_length: The context window, in tokens.
        device: ``cpu`` or ``cuda:N`` (named in out-of-memory sentences).
        lock: Held for the whole answer: one answer at a time per model.
        kv_pool: Optional :class:`~glmdesk.engine.decode.kv_pool.KVPool` keeping each
            conversation's logits source between answers (a model without one never
            reuses a cache).
    """

    prompt_format: PromptFormat
    lock: threading.Lock

    @property
    def context_length(self) -> int: ...

    @property
    def device(self) -> str: ...

    def decode(self, ids: Sequence[int]) -> str:
        """Ids to text, special tokens skipped."""
        ...

    def open_source(self, cache: CacheSettings) -> LogitsSource:
        """A logits source with a fresh KV cache of the chosen strategy.

        Raises:
            GlmdeskError: ``invalid_setting`` when the strategy cannot run here.
        """
        ...

    def logits_processors(self) -> Sequence[Callable]:
        """Fresh constraints for one answer, applied before the user's sampling chain
        on every token (see :class:`~glmdesk.engine.decode.decoding.Sampler`)."""
        ...


def offered_tools(messages: Sequence[ChatMessage]) -> ToolSet | None:
    """The tools the conversation's system messages offer (the last set wins), or ``None``."""
    found = [m.tools for m in messages if m.role == "system" and m.tools]
    return found[-1] if found else None


def tool_notice(reason: str, unreadable=()) -> ErrorInfo:
    """The note shown when a call-like reply is shown as text (``reason`` in English).

    Args:
        reason: Why (English, a sentence's end).
        unreadable: The calls not run because their text could not be read
            (:class:`~glmdesk.engine.formats.xml_call_filter.UnreadableCallText`): their
            ``observation()`` texts go in the param ``unreadable``, for a tool loop to tell
            the model.
    """
    params: dict = {"reason": reason}
    if unreadable:
        params["unreadable"] = tuple(u.observation() for u in unreadable)
        params["unreadable_names"] = tuple(u.name for u in unreadable)
    return ErrorInfo(
        "tool_call_invalid",
        f"The model wrote a tool call that glmdesk did not run, so it is shown as text: {reason}.",
        params,
    )


class _Answer:
    """The text side of one answer: detokenizer, reply filter, timings, chunk building."""

    def __init__(self, model: TextModel, cache: CacheSettings, shown: ReplyParser) -> None:
        self.clock = AnswerClock()
        self.pool = getattr(model, "kv_pool", None)
        self.reused = 0
        self.detok = IncrementalDetokenizer(model.decode)
        self.shown = shown
        self.stats = CacheStats(cache.strategy)
        self.n_prompt = 0
        self.dropped: tuple[int, ...] = ()
        self.n_generated = 0
        self.reply_limit = 0
        self.thought = False  # reasoning was seen
        self.reasoning_tokens = 0

    def push(self, token: int) -> list[ReplyPart]:
        """The parts a new token completes."""
        self.n_generated += 1
        before = self.shown.see_token(token)
        return before + self.shown.feed(self.detok.push(token))

    def tail(self, cut_off: bool = True) -> list[ReplyPart]:
        """Parts still held by the detokenizer and the reply parser at the end.

        ``cut_off``: the answer ends before the model finished it (length, Stop, error),
        so a character left incomplete is dropped rather than shown as U+FFFD.
        """
        return self.shown.feed(self.detok.flush(drop_incomplete=cut_off)) + self.shown.finish(cut_off)

    def safe_tail(self) -> list[ReplyPart]:
        try:
            return self.tail()
        except Exception:  # the error path must always yield its final chunk
            return []

    def chunk(self, parts=(), ids: tuple[int, ...] = (), finish: str | None = None, error=None):
        calls = self.shown.tool_calls if finish is not None else ()
        if calls and finish == "stop":
            finish = "tool_calls"
        elif finish is not None:
            calls = ()  # a call cut off by length, Stop or an error is not run
            parts = [p for p in parts if not (isinstance(p, ToolCallPart) and p.done)]
        note = self.shown.notice if finish is not None else None
        pending = self.shown.pending if finish is None else None
        if pending is not None and not any(isinstance(p, ToolCallPart) and not p.done for p in parts):
            # a step that added nothing shown (a character held back) still carries the
            # call being written: a chunk's parts say all there is to show
            parts = [*parts, ToolCallPart(pending, self.shown.call_text)]
        parts = merged(parts)
        self._time_answer(parts)
        return GenerationChunk(
            token_ids=ids,
            prompt_tokens=self.n_prompt,
            n_generated=self.n_generated,
            ttft_s=self.clock.ttft_s,
            tokens_per_s=self.clock.tokens_per_s(self.n_generated),
            finish_reason=finish,
            error=error,
            cache=self.stats,
            dropped_messages=self.dropped,
            tool_call=calls[0] if calls else None,
            tool_calls=calls,
            notice=None if note is None else tool_notice(note, self.shown.unreadable),
            reused_tokens=self.reused,
            kept_kv_bytes=0 if self.pool is None else self.pool.total_bytes(),
            reply_limit=self.reply_limit,
            parts=parts,
            answer_ttft_s=self.clock.answer_ttft_s,
            reasoning_tokens=self.reasoning_tokens,
        )

    def _time_answer(self, parts) -> None:
        """Note when the answer after a reasoning block begins, and the tokens before it."""
        if self.clock.answer_ttft_s or not parts:
            return
        self.thought = self.thought or any(isinstance(p, ReasoningPart) for p in parts)
        if self.thought and not isinstance(parts[-1], ReasoningPart):
            self.clock.answer_began()
            self.reasoning_tokens = max(self.n_generated - 1, 0)


#: Prompt ids a continued answer's detokenizer starts after (its leading-space context).
RESUME_CONTEXT_TOKENS = 4


def stream_answer(
    model: TextModel,
    messages: Sequence[ChatMessage],
    params: ParamsBox,
    cache: CacheSettings | None = None,
    stop: threading.Event | None = None,
    conversation: Hashable | None = None,
) -> Iterator[GenerationChunk]:
    """Stream one answer to ``messages``.

    Args:
        model: The loaded model (a :class:`TextModel`).
        messages: System messages, then turns ending with the user message to answer,
            or with an assistant message to continue (Continue after the length limit:
            the new text follows that message's text; chunks carry only the new text).
            Tools go on a system message (``ChatMessage.tools``); when they force a
            function (``ToolSet.forced``) and the format has tool calls, the prompt ends
            with that function's metadata line and the answer is its call: finish
            ``tool_calls`` when the arguments parse, else the text with a notice.
        params: Read before every token; replace its value to change sampling
            mid-answer (applies from the next token). ``seed`` and ``enable_thinking``
            (the format's thinking switch for this answer) are read once.
        cache: KV-cache strategy for this answer (default: full).
        stop: When set, the answer ends before the next token with finish reason
            ``cancelled``; the text so far is kept.
        conversation: Key of the conversation (any hashable: a conversation id;
            ``glmdesk serve`` passes one key for all requests). With a key, the KV
            cache is kept after the answer in ``model.kv_pool`` and the next request
            with that key prefills only the prompt tokens after the longest common
            token prefix the cache holds exactly (``chunk.reused_tokens``); an edited,
            regenerated or stopped turn or a changed system prompt cuts it back to
            that prefix; other cache settings, or an answer that failed, start afresh.
            ``None``: a fresh cache, released after the answer.

    Yields:
        One :class:`GenerationChunk` per generated token, then a final chunk with
        ``finish_reason`` set (``stop``, ``length``, ``cancelled`` or ``error``).
        Never raises: errors end the stream with ``finish_reason="error"`` and
        ``chunk.error`` (an :class:`~glmdesk.core.errors.ErrorInfo`).
    """
    cache = cache or CacheSettings()
    stop = stop or threading.Event()
    messages = encodable(messages)
    asked = params.get()
    with (
        model.lock,
        thinking_for(model.prompt_format, asked.enable_thinking, asked.template_kwargs),
    ):  # one at a time
        yield from _stream(
            model,
            lambda limit, fallback: fit_prompt(model.prompt_format, encodable(messages), limit, fallback),
            reply_parser(model.prompt_format, offered_tools(messages), continued(messages)),
            params,
            cache,
            stop,
            conversation,
            resume=continued(messages) or _opens_call(model.prompt_format, messages),
        )


def _opens_call(fmt: PromptFormat, messages: Sequence[ChatMessage]) -> bool:
    """Whether the prompt ends inside a forced call's turn (its metadata line written):
    the reply's text then continues the prompt's, as after Continue."""
    return fmt.tool_calls and fmt.opens_forced_call and forced_call(messages) is not None


def reuse_compat(cache: CacheSettings) -> CacheSettings:
    """The settings a kept cache must match to be reused: all but the prefill chunk
    (which changes how a prompt is run, not what the cache holds)."""
    return dataclasses.replace(cache, prefill_chunk=CacheSettings().prefill_chunk)


def stream_prompt_ids(
    model: TextModel,
    prompt_ids: Sequence[int],
    params: ParamsBox,
    cache: CacheSettings | None = None,
    stop: threading.Event | None = None,
) -> Iterator[GenerationChunk]:
    """Stream the continuation of raw prompt ids (a completion, no chat format).

    Same contract as :func:`stream_answer` (live ``params``, ``stop``, chunks, never
    raises); the model's stop ids still end the answer, the prompt format's reply
    filter does not apply, and nothing is dropped to fit: a prompt longer than the
    context minus the answer budget ends at once with ``prompt_too_long``.

    Args:
        prompt_ids: Prompt token ids, shape ``[n_prompt]``, ``n_prompt >= 1``.
    """
    cache = cache or CacheSettings()
    stop = stop or threading.Event()
    ids = list(prompt_ids)

    def prompt(limit: int, _fallback: int) -> FittedPrompt:
        if not ids:
            raise GlmdeskError(
                "invalid_setting", "The prompt is empty.", name="prompt", value="", reason="it is empty"
            )
        if len(ids) > limit:
            raise GlmdeskError(
                "prompt_too_long",
                f"The prompt is {len(ids)} tokens long and at most {limit} fit (context window minus "
                "max new tokens). Shorten it or lower max new tokens.",
                tokens=len(ids),
                limit=limit,
            )
        return FittedPrompt(ids, (), ())

    with model.lock:  # one answer at a time per model
        yield from _stream(model, prompt, ReplyParser(ReplyFilter()), params, cache, stop)


def _stream(
    model: TextModel,
    prompt: PromptBuilder,
    shown: ReplyParser,
    params: ParamsBox,
    cache: CacheSettings,
    stop: threading.Event,
    conversation: Hashable | None = None,
    resume: bool = False,
) -> Iterator[GenerationChunk]:
    answer = _Answer(model, cache, shown)
    pool = answer.pool if conversation is not None else None
    source = None
    keep = pool is not None
    try:
        sampler, fitted = _fit(answer, model, prompt, params.get(), cache, resume)
        if stop.is_set():
            yield answer.chunk(finish="cancelled")
            return
        source = _open(model, cache, pool, conversation)
        reuse = getattr(source, "reuse", None)
        answer.reused = reuse(fitted.ids) if reuse is not None else 0
        steps = generate_tokens(
            source,
            fitted.ids,
            params,
            model.prompt_format.stop_ids,
            stop,
            model.context_length,
            sampler,
            reused=answer.reused,
        )
        yield from _chunks(answer, source, steps)
    except GlmdeskError as exc:
        keep = False
        yield answer.chunk(answer.safe_tail(), finish="error", error=exc.info)
    except torch.OutOfMemoryError:
        keep = False
        freed = give_back_memory(source, answer.pool)
        source = None
        yield answer.chunk(answer.safe_tail(), finish="error", error=answer_error(model.device, freed).info)
    except Exception as exc:  # never leave the caller waiting
        keep = False
        err = GlmdeskError(
            "generation_failed",
            f"The answer failed: {exc.__class__.__name__}: {exc}",
            detail=f"{exc.__class__.__name__}: {exc}",
        )
        yield answer.chunk(answer.safe_tail(), finish="error", error=err.info)
    finally:
        if source is not None:
            if keep and pool is not None:  # keep starts as "a pool is there"
                pool.put(conversation, source, reuse_compat(cache))
            else:
                source.release()


def _fit(
    answer: _Answer,
    model: TextModel,
    prompt: PromptBuilder,
    p: SamplingParams,
    cache: CacheSettings,
    resume: bool,
) -> tuple[Sampler, FittedPrompt]:
    """The answer's sampler and its prompt fitted to the context window (``answer``'s
    prompt length, dropped messages and reply limit set; a resumed answer's tail given
    to the detokenizer as left context; the thinking budget last among the processors).

    Raises:
        GlmdeskError: from ``prompt`` (``prompt_too_long``, ``system_prompt_too_long``,
            an empty prompt).
    """
    sampler = Sampler(torch.Generator().manual_seed(answer_seed(p)), model.logits_processors())
    limit = model.context_length - answer_budget(p, model.context_length)
    fallback = model.context_length - min_reply_tokens(p)
    fitted = prompt(limit, fallback)
    answer.n_prompt, answer.dropped = len(fitted.ids), fitted.dropped
    if resume:  # the answer's tail in the prompt is the new text's left context
        answer.detok.add_context(fitted.ids[-RESUME_CONTEXT_TOKENS:])
    answer.reply_limit = reply_limit(p, model.context_length, answer.n_prompt, cache)
    budget = None if resume else thinking_budget(model.prompt_format, p.thinking_budget)
    if budget is not None:  # after the other constraints: it overrides them when it closes
        sampler.extra += (budget,)
    return sampler, fitted


def _open(model: TextModel, cache: CacheSettings, pool, conversation: Hashable | None) -> LogitsSource:
    """The conversation's kept source when its settings match, else a fresh one."""
    source = pool.take(conversation, reuse_compat(cache)) if pool is not None else None
    return source if source is not None else model.open_source(cache)


def _chunks(answer: _Answer, source: LogitsSource, steps) -> Iterator[GenerationChunk]:
    """Chunks of whole characters for each token step; ends after the final chunk."""
    for step in steps:
        if step.first:
            answer.clock.first_token()
        answer.stats = source.stats()
        if step.token is None:
            yield answer.chunk(answer.tail(cut_off=step.finish_reason != "stop"), finish=step.finish_reason)
            return
        parts = answer.push(step.token)
        ids = (step.token,)
        if step.finish_reason is not None:
            yield answer.chunk(parts + answer.tail(), ids, finish=step.finish_reason)
            return
        if answer.shown.stopped:  # the format saw its end marker in the text
            yield answer.chunk(parts + answer.tail(), ids, finish="stop")
            return
        yield answer.chunk(parts, ids)


def stream_chat(
    loaded: TextModel,
    messages: Sequence[ChatMessage],
    params: ParamsBox,
    cache: CacheSettings | None = None,
    stop: threading.Event | None = None,
    conversation: Hashable | None = None,
) -> Iterator[GenerationChunk]:
    """:func:`stream_answer` under its older name (the CLI, benchmarks and tests use it)."""
    return stream_answer(loaded, messages, params, cache, stop, conversation)
