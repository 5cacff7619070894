"""OpenAI response bodies and the server-sent event stream of one answer.

Shapes follow OpenAI's chat completion, chat completion chunk and completion objects
(vLLM returns the same): a stream sends the role first (chat), one delta per text
piece, a tool call as ``delta.tool_calls`` deltas while it is written (id and name
first, then the arguments; :mod:`glmdesk.server.tool_stream`), reasoning (GLM-Z1's
``<think>`` block, the engine's reasoning parts) as ``delta.reasoning_content`` (and
``message.reasoning_content``), the field vLLM's reasoning parsers use, a completion's prompt first when it asks for ``echo``, a last chunk with
``finish_reason``, optionally a usage chunk (``stream_options.include_usage``), then
``data: [DONE]``.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field

from glmdesk.chat.events import (
    AnswerDone,
    AnswerFailed,
    AnswerFigures,
    ChatEvent,
    ReasoningDelta,
    StepFigures,
    TextDelta,
)
from glmdesk.core.errors import ErrorInfo
from glmdesk.core.parts import ReasoningPart
from glmdesk.core.tools import ToolCall
from glmdesk.engine.tools.openai_tools import tool_call_to_openai
from glmdesk.server.answer import ServedAnswer, StopStrings
from glmdesk.server.errors import from_engine
from glmdesk.server.tool_stream import ToolCallStream


@dataclass
class Reply:
    """What one response says about itself.

    Attributes:
        id: ``chatcmpl-...`` (chat) or ``cmpl-...`` (completion).
        model: The model id.
        chat: A chat completion (else a raw completion).
        usage_chunk: Add a usage chunk at the end of a stream.
        echo: A completion's text starts with its prompt (a stream sends it first, in a
            chunk of its own, as vLLM does).
        created: Unix time, in s.
    """

    id: str
    model: str
    chat: bool
    usage_chunk: bool = False
    echo: str = ""
    created: int = field(default_factory=lambda: int(time.time()))

    def _head(self, stream: bool) -> dict:
        kind = ("chat.completion.chunk" if stream else "chat.completion") if self.chat else "text_completion"
        return {"id": self.id, "object": kind, "created": self.created, "model": self.model}

    def piece(
        self,
        text: str | None = None,
        finish: str | None = None,
        role: bool = False,
        tool_call: dict | None = None,
        reasoning: str = "",
    ) -> dict:
        """A stream chunk with one text piece, one ``delta.tool_calls`` entry, a reasoning
        piece and/or the finish reason."""
        if self.chat:
            delta: dict = {"role": "assistant", "content": ""} if role else {}
            if text:
                delta["content"] = text
            if reasoning:
                delta["reasoning_content"] = reasoning
            if tool_call is not None:
                delta["tool_calls"] = [tool_call]
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        else:
            choice = {"index": 0, "text": text or "", "logprobs": None, "finish_reason": finish}
        body = self._head(stream=True) | {"choices": [choice]}
        if self.usage_chunk:
            body["usage"] = None
        return body

    def usage_only(self, last: AnswerFigures) -> dict:
        """The usage chunk (no choices)."""
        return self._head(stream=True) | {"choices": [], "usage": usage(last)}

    def whole(
        self,
        text: str,
        finish: str,
        last: AnswerFigures,
        calls: Sequence[ToolCall] = (),
        reasoning: str = "",
    ) -> dict:
        """The non-stream response (``message.tool_calls`` when the answer is a call, one
        entry per call in the order written; ``content`` is then the text shown before
        them, or ``null``; the reasoning as ``message.reasoning_content`` when the model
        wrote some)."""
        if self.chat:
            message: dict = {"role": "assistant", "content": text}
            if calls:
                message = {
                    "role": "assistant",
                    "content": text or None,
                    "tool_calls": [tool_call_to_openai(c) for c in calls],
                }
            if reasoning:
                message["reasoning_content"] = reasoning
            choice = {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": finish,
            }
        else:
            choice = {"index": 0, "text": self.echo + text, "logprobs": None, "finish_reason": finish}
        return self._head(stream=False) | {"choices": [choice], "usage": usage(last)}


def usage(last: AnswerFigures) -> dict:
    """OpenAI's ``usage`` from an answer's figures, in tokens."""
    return {
        "prompt_tokens": last.prompt_tokens,
        "completion_tokens": last.n_generated,
        "total_tokens": last.prompt_tokens + last.n_generated,
    }


def finish_reason(engine_reason: str | None) -> str:
    """OpenAI's finish reason: ``length`` and ``tool_calls`` stay; everything else that
    ends an answer without an error (a stop id, a stop string, Stop) is ``stop``."""
    return engine_reason if engine_reason in ("length", "tool_calls") else "stop"


def event(body: dict | str) -> str:
    """One server-sent event (``data: ...`` and a blank line)."""
    data = body if isinstance(body, str) else json.dumps(body, ensure_ascii=False, separators=(",", ":"))
    return f"data: {data}\n\n"


@dataclass
class Outcome:
    """How an answer's text ended: its pieces so far, its reasoning pieces, its figures,
    the error that ended it (if any), and the tool calls it ended with
    (``finish == "tool_calls"``; in order)."""

    text: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    figures: AnswerFigures = AnswerFigures()
    error: ErrorInfo | None = None
    ended: bool = False
    finish: str = "stop"
    calls: tuple[ToolCall, ...] = ()


async def pieces(
    run: ServedAnswer,
    first: list[ChatEvent],
    stops: StopStrings,
    out: Outcome,
    calls: ToolCallStream | None = None,
) -> AsyncIterator[str | dict | ReasoningPart]:
    """The shown text pieces of ``run``'s events, ``stop`` strings cut out; fills ``out``.

    With ``calls`` (a stream), a tool call being written also yields its
    ``delta.tool_calls`` entries (dicts) as they come (see :mod:`glmdesk.server.tool_stream`),
    and reasoning its :class:`~glmdesk.core.parts.ReasoningPart` pieces; without, the
    reasoning is only collected in ``out.reasoning``.
    A stop string sets the run's stop event (the answer's thread ends within one token)
    and ends the pieces with finish reason ``stop``.
    """
    events: list[ChatEvent] | None = first
    while events is not None:
        for event in events:
            if isinstance(event, StepFigures):
                out.figures = event.figures
            elif isinstance(event, ReasoningDelta):
                out.reasoning.append(event.text)
                if calls is not None:
                    yield ReasoningPart(event.text)
            elif isinstance(event, TextDelta):
                shown = stops.push(event.text)
                if shown:
                    yield shown
                if stops.stopped:
                    run.stop.set()
                    out.finish, out.ended = "stop", True
                    return
            elif isinstance(event, (AnswerDone, AnswerFailed)):
                out.figures, out.ended = event.figures, True
                if isinstance(event, AnswerFailed):
                    out.error, out.finish = event.error, "error"
                    return
                shown = stops.flush()
                if shown:
                    yield shown
                out.finish = finish_reason(event.finish_reason)
                if out.finish == "tool_calls":
                    out.calls = event.calls
                for delta in calls.update(events) if calls is not None else ():
                    yield delta  # the rest of each call's arguments, once parsed
                return
        for delta in calls.update(events) if calls is not None else ():
            yield delta
        events = await run.next()


async def sse(
    run: ServedAnswer, first: list[ChatEvent], stops: StopStrings, reply: Reply
) -> AsyncIterator[str]:
    """The event stream of one answer. Leaving early (the client went away) sets the
    run's stop event, so the answer ends within one token."""
    out = Outcome()
    calls = ToolCallStream() if reply.chat else None
    try:
        if reply.chat:
            yield event(reply.piece(role=True))
        elif reply.echo:
            yield event(reply.piece(reply.echo))
        async for item in pieces(run, first, stops, out, calls):
            if isinstance(item, dict):
                yield event(reply.piece(tool_call=item))
            elif isinstance(item, ReasoningPart):
                yield event(reply.piece(reasoning=item.text))
            else:
                yield event(reply.piece(item))
        if out.error is not None:
            yield event(from_engine(out.error).body())
        else:
            yield event(reply.piece(finish=out.finish))
            if reply.usage_chunk and out.ended:
                yield event(reply.usage_only(out.figures))
        yield event("[DONE]")
    finally:
        run.stop.set()
