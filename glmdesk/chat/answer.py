"""One answer run: the engine's stream read into events, and the one tool loop.

:func:`run_answer` streams a reply (``Backend.stream``) and yields its
:mod:`~glmdesk.chat.events`. When the reply ends with tool calls
(``finish_reason == "tool_calls"``) and the run was given :class:`Tools`, each call (in
the order written) goes through the approval hook and, when allowed, its runner; the
calls and their results are appended to the conversation
(:class:`~glmdesk.chat.events.ToolsAnswered`) and the next reply is streamed from them,
until a reply ends without a call, Stop is set, or ``max_rounds`` calls were answered
since the newest user message: a further reply's calls then do not run and the answer
ends with a ``tool_rounds_exceeded`` notice. A reply whose calls could not be read
(a ``tool_call_invalid`` notice: nothing ran, the user sees them as written with the
reason) is fed back with one observation per call saying why, so the model can write
them again, at most ``max_rounds`` times. Without tools (``glmdesk serve``, which
returns calls to its client) the run ends with the calls.

Plain values in and out, no Qt: the window's worker runs it on its thread and relays
the events, ``glmdesk chat`` prints them, ``glmdesk serve`` turns them into OpenAI
chunks, and the tests drive it with a scripted stream.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace

from glmdesk.chat.events import (
    AnswerDone,
    AnswerFailed,
    ChatEvent,
    ToolResult,
    ToolResultReady,
    ToolsAnswered,
)
from glmdesk.chat.reader import ChunkReader, calls_of
from glmdesk.chat.tools import (
    ApprovalHook,
    ToolRunner,
    decide,
    declined,
    rounds_exceeded,
    unreadable_observations,
)
from glmdesk.core.errors import ErrorInfo
from glmdesk.core.messages import ChatMessage
from glmdesk.core.parts import MessagePart, reasoning_of, text_of
from glmdesk.core.settings import CacheSettings, ParamsBox
from glmdesk.core.tools import ToolCall, calls_since_user
from glmdesk.engine.chunk import GenerationChunk

#: ``stream(messages, params, cache, stop) -> Iterator[GenerationChunk]``: a backend's
#: ``stream`` with its conversation key bound.
StreamFn = Callable[
    [Sequence[ChatMessage], ParamsBox, "CacheSettings | None", threading.Event], Iterator[GenerationChunk]
]


@dataclass(frozen=True)
class Tools:
    """How a run answers tool calls.

    Attributes:
        approve: The approval hook (:mod:`glmdesk.chat.tools`): allow, or deny with a reason.
        run: Returns an allowed call's result.
        max_rounds: Calls answered after the newest user message, at most.
    """

    approve: ApprovalHook
    run: ToolRunner
    max_rounds: int = 5


def run_answer(
    stream: StreamFn,
    messages: Sequence[ChatMessage],
    params: ParamsBox,
    cache: CacheSettings | None = None,
    stop: threading.Event | None = None,
    tools: Tools | None = None,
    resumed: Sequence[MessagePart] = (),
) -> Iterator[ChatEvent]:
    """The events of one answer (see the module docstring).

    Args:
        stream: The backend's stream.
        messages: The conversation ending with the user message (or an observation).
            A function forced by its tools (``ToolSet.forced``) is forced in the first
            reply only; the replies after its result choose freely.
        params: Live sampling parameters (read by the engine before every token).
        cache: KV-cache strategy.
        stop: Ends the answer (and the rounds) when set; the text so far is kept.
        tools: How calls are answered; ``None``: a reply's calls end the run.
        resumed: Parts the first reply continues (Continue: the answer so far).

    Yields:
        The events of each reply, a :class:`ToolResultReady` per answered call and a
        :class:`ToolsAnswered` between replies. Exactly one :class:`AnswerDone` or
        :class:`AnswerFailed` without a following reply ends it; a backend that raises
        ends it with ``AnswerFailed`` of kind ``generation_failed``. Stop pressed while
        a call waits or runs ends the run after that call's ``ToolResultReady``.
    """
    for step in answer_steps(stream, messages, params, cache, stop, tools, resumed):
        yield from step


def answer_steps(
    stream: StreamFn,
    messages: Sequence[ChatMessage],
    params: ParamsBox,
    cache: CacheSettings | None = None,
    stop: threading.Event | None = None,
    tools: Tools | None = None,
    resumed: Sequence[MessagePart] = (),
) -> Iterator[list[ChatEvent]]:
    """:func:`run_answer`'s events grouped by step: one list per engine chunk (as
    :func:`reply_events`), one per answered call (its :class:`ToolResultReady`) and one
    per :class:`ToolsAnswered`, for a front end that hands each step on at once (the
    window's worker: one queued signal per step, not per event)."""
    stop = stop or threading.Event()
    history = list(messages)
    reader = ChunkReader(resumed)
    told = 0  # replies whose unreadable calls the model was told about
    while True:
        chunks = _started(stream, history, params, cache, stop)
        final = yield from _reply(chunks, reader, history, tools, stop)
        if final is None:
            retold = _retold(reader.last, tools, stop, told)
            if not retold:
                return
            told += 1
            history = [*_unforced(history), *retold]
            yield [ToolsAnswered(retold)]
            reader = ChunkReader()
            continue
        calls = final.calls
        assert tools is not None  # _reply returns calls to answer only with tools
        results = []
        for index, call in enumerate(calls):  # in the order written
            if stop.is_set():
                return
            results.append(_answer_call(tools, call))
            yield [ToolResultReady(index, call, results[-1])]
        if stop.is_set():
            return
        answered = ToolsAnswered(fed_back(calls, results, final.parts))
        history = [*_unforced(history), *answered.messages]
        yield [answered]
        reader = ChunkReader()


def _retold(last, tools: Tools | None, stop: threading.Event, told: int) -> tuple[ChatMessage, ...]:
    """The messages that tell the model its reply's calls could not be read (the reply as
    written, then one observation per call), when the run answers tools, Stop is not set
    and fewer than ``max_rounds`` replies were told so; else ``()``: the answer ends."""
    if tools is None or stop.is_set() or told >= tools.max_rounds or not isinstance(last, AnswerDone):
        return ()
    observations = unreadable_observations(last.notice)
    if not observations:
        return ()
    written = ChatMessage("assistant", text_of(last.parts), reasoning=reasoning_of(last.parts))
    return (written, *observations)


def _started(stream: StreamFn, *args) -> Iterator[GenerationChunk]:
    """``stream(*args)``, called on the first ``next``: a backend that raises while
    starting fails the reply like one that raises while streaming."""
    yield from stream(*args)


def _reply(chunks: Iterator[GenerationChunk], reader: ChunkReader, history, tools: Tools | None, stop):
    """Yield one reply's events (a list per chunk); return its :class:`AnswerDone` when its calls are to be
    answered (the run goes on), else ``None``."""
    limited = (_within_limit(c, history, tools) if c.finish_reason is not None else c for c in chunks)
    yield from reply_events(limited, reader, stop)
    last = reader.last
    return last if tools is not None and isinstance(last, AnswerDone) and last.calls else None


def reply_events(
    chunks: Iterator[GenerationChunk], reader: ChunkReader | None = None, stop: threading.Event | None = None
) -> Iterator[list[ChatEvent]]:
    """The events of one reply, one list per chunk (:meth:`ChunkReader.read`), for a front
    end that answers no tools (``glmdesk serve``) and hands each step on at once.

    The last list ends with :class:`AnswerDone` or :class:`AnswerFailed`, also when the
    backend raises (``generation_failed``) or its stream ends without a final chunk
    (``cancelled`` when ``stop`` is set, else ``stop``).
    """
    reader = reader or ChunkReader()
    try:
        for chunk in chunks:
            yield reader.read(chunk)
            if reader.ended:
                return
    except Exception as exc:  # backends never raise; a safety net all the same
        detail = f"{exc.__class__.__name__}: {exc}"
        error = ErrorInfo("generation_failed", f"The answer failed: {detail}", {"detail": detail})
        reader.last = AnswerFailed(error, reader.figures, reader.parts())
        yield [reader.last]
        return
    f = reader.figures  # the stream ended without a final chunk
    reason = "cancelled" if stop is not None and stop.is_set() else "stop"
    end = GenerationChunk(
        finish_reason=reason,
        prompt_tokens=f.prompt_tokens,
        n_generated=f.n_generated,
        ttft_s=f.ttft_s,
        tokens_per_s=f.tokens_per_s,
        cache=f.cache,
    )
    yield reader.read(end)


def _within_limit(chunk: GenerationChunk, history, tools: Tools | None) -> GenerationChunk:
    """The final chunk, its calls taken away with a notice when answering them would pass
    the tools' ``max_rounds``."""
    calls = calls_of(chunk)
    if tools is None or not exceeds_rounds(history, calls, tools.max_rounds):
        return chunk
    notice = rounds_exceeded(tools.max_rounds)
    return replace(chunk, finish_reason="stop", tool_call=None, tool_calls=(), notice=notice)


def _answer_call(tools: Tools, call: ToolCall) -> ToolResult:
    approval = decide(tools.approve, call)
    if not approval.allowed:
        return declined(approval.reason)
    return tools.run(call)


def exceeds_rounds(history: Sequence[ChatMessage], calls: Sequence[ToolCall], max_rounds: int) -> bool:
    """True when answering ``calls`` would pass ``max_rounds`` calls since the newest user
    message of ``history`` (the answer then ends with :func:`~glmdesk.chat.tools.rounds_exceeded`)."""
    return bool(calls) and calls_since_user(history) + len(calls) > max_rounds


def call_messages(calls: Sequence[ToolCall], shown: str, thought: str) -> tuple[ChatMessage, ...]:
    """A reply's ``calls`` as the conversation keeps them: one assistant message per call,
    the reply's text ``shown`` and reasoning ``thought`` on the first (GLM-4.7's template
    keeps reasoning across tool turns), the others empty, as templates read several calls
    of one turn."""
    return tuple(
        ChatMessage("assistant", shown if k == 0 else "", tool_call=c, reasoning=thought if k == 0 else "")
        for k, c in enumerate(calls)
    )


def fed_back(
    calls: Sequence[ToolCall], results: Sequence[ToolResult], parts: Sequence[MessagePart]
) -> tuple[ChatMessage, ...]:
    """The messages that feed a reply's ``calls`` and their ``results`` back: the calls
    (:func:`call_messages`, with the text and reasoning of ``parts``), then one
    observation per result, in the same order."""
    asked = call_messages(calls, text_of(parts), reasoning_of(parts))
    answered = [
        ChatMessage("observation", r.content, name=c.name, images=r.images)
        for c, r in zip(calls, results, strict=True)
    ]
    return (*asked, *answered)


def _unforced(messages: Sequence[ChatMessage]) -> list[ChatMessage]:
    """``messages`` with no function forced (``ToolSet.forced``): after the forced call's
    result, the model chooses whether to call again (a client does the same with OpenAI's
    ``tool_choice``, else every answer would be that call)."""
    return [
        replace(m, tools=replace(m.tools, forced=None)) if m.tools is not None and m.tools.forced else m
        for m in messages
    ]
