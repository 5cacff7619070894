"""Chunks in, events out: the one place where the engine's stream becomes typed events.

:class:`ChunkReader` reads one reply's :class:`~glmdesk.engine.chunk.GenerationChunk`
values in order and returns the :mod:`~glmdesk.chat.events` each adds, and keeps the
reply's parts accumulated (:class:`~glmdesk.core.parts.PartsSoFar`), so every front end
reads the same parts, gathered once on the thread that runs the answer.

A call is numbered in the order written (GLM-4.5 writes several in one reply): a
pending :class:`~glmdesk.core.parts.ToolCallPart` opens the next index (a ``done`` part
that was never pending opens and closes one), a ``done`` part closes it, answer text after a pending part means the call did not parse (it was
released as text: :class:`~glmdesk.chat.events.ToolCallDropped`). The calls of a reply
that ends with ``tool_calls`` take the indices of the calls still standing, in order; a
call the backend never showed pending gets its :class:`~glmdesk.chat.events.ToolCallStarted`
just before its :class:`~glmdesk.chat.events.ToolCallComplete`.
"""

from __future__ import annotations

from collections.abc import Iterable

from glmdesk.chat.events import (
    AnswerDone,
    AnswerFailed,
    AnswerFigures,
    ChatEvent,
    ReasoningDelta,
    StepFigures,
    TextDelta,
    ToolCallComplete,
    ToolCallDropped,
    ToolCallGrowing,
    ToolCallParsed,
    ToolCallStarted,
)
from glmdesk.core.errors import ErrorInfo
from glmdesk.core.parts import MessagePart, PartsSoFar, ReasoningPart, ReplyPart, TextPart, ToolCallPart
from glmdesk.core.tools import ToolCall
from glmdesk.engine.chunk import GenerationChunk


def calls_of(chunk: GenerationChunk) -> tuple[ToolCall, ...]:
    """The calls a final chunk ends its reply with, in the order written (``()`` unless
    ``finish_reason == "tool_calls"``)."""
    if chunk.finish_reason != "tool_calls":
        return ()
    return chunk.tool_calls or ((chunk.tool_call,) if chunk.tool_call is not None else ())


class ChunkReader:
    """The events of one reply's chunks (see the module docstring). Not thread-safe: one
    per reply, used on the thread that runs it.

    Args:
        parts: Parts the reply starts from (Continue: the answer so far).
    """

    def __init__(self, parts: Iterable[MessagePart] = ()) -> None:
        self._parts = PartsSoFar(parts)
        self._standing: list[tuple[int, str]] = []  # (index, name) of calls not dropped
        self._count = 0  # indices handed out
        self._open: tuple[int, str] | None = None
        self._sent = ""  # the open call's text as last sent
        self._parsed: list[tuple[str, str]] = []  # (name, arguments) of the calls parsed
        self._echoed = 0  # of those, how many a later done part repeated
        self.figures = AnswerFigures()
        #: The event that ended the reply (``None`` while it runs).
        self.last: AnswerDone | AnswerFailed | None = None

    def parts(self) -> tuple[MessagePart, ...]:
        """The reply's parts so far, neighbouring pieces joined."""
        return self._parts.parts()

    def read(self, chunk: GenerationChunk) -> list[ChatEvent]:
        """The events ``chunk`` adds: its :class:`StepFigures` first, then its deltas in
        reply order; the last chunk (``finish_reason`` set) then adds the calls that
        parsed and :class:`AnswerDone` or :class:`AnswerFailed`."""
        self.figures = AnswerFigures.of(chunk)
        events: list[ChatEvent] = [StepFigures(self.figures)]
        for part in chunk.parts:
            self._part(part, events)
        self._parts.add(chunk.parts)
        if chunk.finish_reason is None:
            return events
        calls = calls_of(chunk)
        if not calls and self._open is not None:  # cut off (length, Stop, error): not run
            events.append(ToolCallDropped(self._open[0]))
            self._open = None
        events += self._complete(calls)
        if chunk.finish_reason == "error":
            error = chunk.error or ErrorInfo("generation_failed", "The answer failed.")
            self.last = AnswerFailed(error, self.figures, self.parts())
        else:
            self.last = AnswerDone(chunk.finish_reason, self.figures, self.parts(), calls, chunk.notice)
        events.append(self.last)
        return events

    @property
    def ended(self) -> bool:
        """True once the reply's last chunk was read."""
        return self.last is not None

    def _part(self, part, events: list[ChatEvent]) -> None:
        if isinstance(part, TextPart):
            if not part.text:
                return
            if self._open is not None:  # the call did not parse: released as text
                events.append(ToolCallDropped(self._open[0]))
                self._standing.remove(self._open)
                self._open = None
            events.append(TextDelta(part.text))
        elif isinstance(part, ReasoningPart):
            if part.text:
                events.append(ReasoningDelta(part.text))
        elif isinstance(part, ToolCallPart):
            closes = self._open is not None and self._open[1] == part.name
            if part.done and not closes and self._echoes(part):
                return
            current = self._open
            opened = current is None or current[1] != part.name
            if current is None or opened:
                current = self._open = (self._count, part.name)
                self._count += 1
                self._standing.append(current)
                events.append(ToolCallStarted(*current))
            index = current[0]
            if part.done:  # parsed: a later pending part is the next call
                self._open = None
                self._parsed.append((part.name, part.arguments_so_far))
                events.append(ToolCallParsed(index, part.name, part.arguments_so_far))
            elif opened or part.arguments_so_far != self._sent:
                self._sent = part.arguments_so_far
                events.append(ToolCallGrowing(index, part.name, part.arguments_so_far))

    def _echoes(self, part: ToolCallPart) -> bool:
        """True when a done part repeats the next call parsed earlier in the reply (a
        backend whose last chunk lists every call again); it opens no new call."""
        if self._echoed < len(self._parsed) and self._parsed[self._echoed] == (
            part.name,
            part.arguments_so_far,
        ):
            self._echoed += 1
            return True
        return False

    def _complete(self, calls: tuple[ToolCall, ...]) -> list[ChatEvent]:
        events: list[ChatEvent] = []
        self._open = None
        for k, call in enumerate(calls):
            if k < len(self._standing):
                index = self._standing[k][0]
            else:  # never shown pending (a backend that does not say)
                index = self._count
                self._count += 1
                self._standing.append((index, call.name))
                events.append(ToolCallStarted(index, call.name))
            events.append(ToolCallComplete(index, call))
        return events


def parts_of(events: Iterable[ChatEvent]) -> tuple[ReplyPart, ...]:
    """The parts a step's ``events`` show, in reply order (what the engine's parser made:
    text, reasoning, a call's text so far, a parsed call), for a view that binds to parts
    (:class:`~glmdesk.core.parts.PartsSoFar`)."""
    out: list[ReplyPart] = []
    for event in events:
        if isinstance(event, TextDelta):
            out.append(TextPart(event.text))
        elif isinstance(event, ReasoningDelta):
            out.append(ReasoningPart(event.text))
        elif isinstance(event, ToolCallGrowing):
            out.append(ToolCallPart(event.name, event.arguments_so_far))
        elif isinstance(event, ToolCallParsed):
            out.append(ToolCallPart(event.name, event.arguments, done=True))
    return tuple(out)
