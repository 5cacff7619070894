"""One user message answered with up to N tool rounds.

:func:`answer_with_tools` streams an answer; when it ends with a tool call
(``finish_reason == "tool_calls"``) it asks ``handle(call)`` for each call's result
(GLM-4.5 may write several calls in one reply: in order), appends the calls and their
observations to the conversation and streams the continuation,
until an answer ends without a call, or ``max_rounds`` calls were answered: a
further call is then not run and the answer ends with a ``tool_rounds_exceeded``
note. Plain values in and out, no Qt: the window's session runs it on its worker
thread, where ``handle`` waits for the user's result or Run click; the terminal
chat and the tests run it directly.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace

from glmdesk.core.errors import ErrorInfo
from glmdesk.core.messages import ChatMessage
from glmdesk.core.parts import reasoning_of
from glmdesk.core.settings import CacheSettings, ParamsBox
from glmdesk.core.tools import ToolCall, calls_since_user
from glmdesk.engine.chunk import GenerationChunk

#: Observation text when the user declines a call.
DECLINED = "The user declined to run this tool call."


@dataclass(frozen=True)
class ToolResult:
    """What a tool returned (or that the user declined it).

    Attributes:
        content: The observation as the model reads it.
        images: PNG images to show and keep with it (bytes of each file).
        declined: True when the user declined the call (``content`` says so).
    """

    content: str
    images: tuple[bytes, ...] = ()
    declined: bool = False


@dataclass(frozen=True)
class ToolRound:
    """The answered calls of one reply, yielded between the answer's chunks.

    Attributes:
        calls: The calls the model made in that reply, in the order written (GLM-4.5
            may write several in one turn; the earlier formats one).
        results: What came back for each, in the same order.
        messages: The messages appended to the conversation, as the template reads
            them: each call as an assistant message (the first with the text shown
            before it and the reply's reasoning, the others empty), then each observation in the same order.
    """

    calls: tuple[ToolCall, ...]
    results: tuple[ToolResult, ...]
    messages: tuple[ChatMessage, ...]

    @property
    def call(self) -> ToolCall:
        """The first call."""
        return self.calls[0]

    @property
    def result(self) -> ToolResult:
        """The first call's result."""
        return self.results[0]


StreamFn = Callable[
    [Sequence[ChatMessage], ParamsBox, CacheSettings | None, threading.Event | None], Iterator
]


def rounds_exceeded(max_rounds: int) -> ErrorInfo:
    """The note that ends an answer after ``max_rounds`` tool calls."""
    return ErrorInfo(
        "tool_rounds_exceeded",
        f"The answer was ended after {max_rounds} tool calls (the limit per message); "
        "the last call was not run.",
        {"rounds": max_rounds},
    )


def _unforced(messages: Sequence[ChatMessage]) -> list[ChatMessage]:
    """``messages`` with no function forced (``ToolSet.forced``): after the forced call's
    result, the model chooses whether to call again (a client does the same with OpenAI's
    ``tool_choice``, else every answer would be that call)."""
    return [
        replace(m, tools=replace(m.tools, forced=None)) if m.tools is not None and m.tools.forced else m
        for m in messages
    ]


def _round(
    calls: tuple[ToolCall, ...], results: tuple[ToolResult, ...], shown: str, thought: str
) -> ToolRound:
    """The round of a reply's ``calls`` and their ``results``: one assistant message per
    call (the reply's text ``shown`` and reasoning ``thought`` on the first: GLM-4.7's
    template keeps reasoning across tool turns), then one observation per result."""
    asked = [
        ChatMessage("assistant", shown if k == 0 else "", tool_call=c, reasoning=thought if k == 0 else "")
        for k, c in enumerate(calls)
    ]
    answered = [
        ChatMessage("observation", r.content, name=c.name) for c, r in zip(calls, results, strict=True)
    ]
    return ToolRound(calls, results, (*asked, *answered))


def _segment(chunks: Iterator[GenerationChunk]):
    """Yield one reply's chunks but its final one; return ``(final chunk or None, the
    reply's text, its reasoning)``."""
    shown, thought = "", ""
    final: GenerationChunk | None = None
    for chunk in chunks:
        shown += chunk.text
        thought += reasoning_of(chunk.parts)
        if chunk.finish_reason is None:
            yield chunk
        else:
            final = chunk
    return final, shown, thought


def answer_with_tools(
    stream: StreamFn,
    messages: Sequence[ChatMessage],
    params: ParamsBox,
    handle: Callable[[ToolCall], ToolResult],
    max_rounds: int = 5,
    cache: CacheSettings | None = None,
    stop: threading.Event | None = None,
) -> Iterator[GenerationChunk | ToolRound]:
    """Stream an answer, running tool calls through ``handle`` (see the module docstring).

    Args:
        stream: ``Backend.stream`` (or :func:`~glmdesk.engine.decode.generate.stream_answer`
            bound to a model).
        messages: The conversation ending with the user message (or an observation).
            A function forced by its tools (``ToolSet.forced``) is forced in the first
            answer only; the answers after its result choose freely.
        params: Live sampling parameters.
        handle: Returns the result of a call (blocking is fine; it runs on the
            caller's thread); a declined call returns ``ToolResult(DECLINED,
            declined=True)``.
        max_rounds: Calls answered after the newest user message, at most.
        cache: KV-cache strategy.
        stop: Ends the answer (and the rounds) when set.

    Yields:
        Every :class:`GenerationChunk` of each segment, a :class:`ToolRound` after each
        reply's calls were answered (all of them, in order, through ``handle``; a reply
        whose calls would pass ``max_rounds`` runs none of them). Only the very last chunk's ``finish_reason`` ends the answer;
        earlier ``tool_calls`` chunks are followed by a round.
    """
    stop = stop or threading.Event()
    history = list(messages)
    while True:
        final, shown, thought = yield from _segment(stream(history, params, cache, stop))
        calls = (final.tool_calls or (final.tool_call,)) if final is not None else ()
        if final is None or final.finish_reason != "tool_calls" or final.tool_call is None:
            if final is not None:
                yield final
            return
        if calls_since_user(history) + len(calls) > max_rounds:
            yield replace(
                final, finish_reason="stop", tool_call=None, tool_calls=(), notice=rounds_exceeded(max_rounds)
            )
            return
        yield final
        if stop.is_set():
            return
        results = tuple(handle(call) for call in calls)  # in the order written
        answered = _round(calls, results, shown, thought)
        history = [*_unforced(history), *answered.messages]
        yield answered
        if stop.is_set():
            return


def run_interpreter(interpreter, call: ToolCall, family: str) -> ToolResult:
    """Run an interpreter call and word its result for ``family``.

    Args:
        interpreter: A :class:`~glmdesk.engine.tools.interpreter.CodeInterpreter`.
        call: A call of kind ``interpreter``.
        family: ``chatglm3`` (result fenced as ``result``) or ``glm4``.

    Raises:
        GlmdeskError: ``interpreter_failed`` when the kernel cannot start.
    """
    from glmdesk.engine.formats.chatglm_tools import interpreter_observation

    result = interpreter.run(call.code)
    return ToolResult(interpreter_observation(family, result.observation()), result.images)
