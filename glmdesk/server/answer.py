"""One answer of the server: the backend's stream read into the answer run's events on
its own thread (:func:`glmdesk.chat.answer.reply_events`), each step's events handed to
the event loop, ``stop`` strings cut out of the text."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from glmdesk.chat.answer import reply_events
from glmdesk.chat.events import AnswerDone, AnswerFailed, ChatEvent, StepFigures
from glmdesk.core.text import held_length
from glmdesk.engine.chunk import GenerationChunk


class StopStrings:
    """Cuts the answer at the first of its ``stop`` strings (not included, as OpenAI does).

    Text that could be the start of a stop string is held back until the next piece
    shows whether it is; :meth:`flush` returns it at the end.

    Args:
        stops: The stop strings (non-empty).
    """

    def __init__(self, stops: tuple[str, ...]) -> None:
        self.stops = stops
        self.held = ""
        self.stopped = False

    def push(self, text: str) -> str:
        """The part of ``held + text`` that can be shown now."""
        if self.stopped:
            return ""
        if not self.stops:
            return text
        buf = self.held + text
        hits = [at for at in (buf.find(s) for s in self.stops) if at >= 0]
        if hits:
            self.stopped, self.held = True, ""
            return buf[: min(hits)]
        keep = held_length(buf, self.stops)
        self.held = buf[len(buf) - keep :] if keep else ""
        return buf[: len(buf) - keep]

    def flush(self) -> str:
        """The text held back (the answer ended without a stop string)."""
        out, self.held = ("" if self.stopped else self.held), ""
        return out


@dataclass
class RequestRecord:
    """What the server did for one request (for the request counter and tests).

    Attributes:
        id: The response id (``chatcmpl-...`` or ``cmpl-...``).
        started: ``time.perf_counter()`` when the answer got the model, in s.
        ended: When its thread finished, in s (0 while running).
        n_generated: Tokens generated, in tokens.
        finish_reason: The engine's finish reason (``cancelled`` when the client left).
        kv_tokens: Positions the KV cache holds now (while it runs), in tokens.
        prompt_tokens: The prompt's length once answered, in tokens.
    """

    id: str
    started: float = 0.0
    ended: float = 0.0
    n_generated: int = 0
    finish_reason: str | None = None
    kv_tokens: int = 0
    prompt_tokens: int = 0


class ServedAnswer:
    """Runs ``make_stream(stop)`` on a thread and reads it into events there; each step's
    events arrive on :attr:`queue` as one list (``None`` after the last). ``on_done``
    runs on the loop once the thread ends, so the next request gets the model only when
    this answer has let go of it.

    Args:
        loop: The server's event loop.
        make_stream: Starts the backend's stream with the given stop event.
        record: Filled in as the answer runs.
        on_done: Called on ``loop`` when the thread has finished.
    """

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        make_stream: Callable[[threading.Event], Iterator[GenerationChunk]],
        record: RequestRecord,
        on_done: Callable[[], None],
    ) -> None:
        self.loop = loop
        self.stop = threading.Event()
        self.queue: asyncio.Queue[list[ChatEvent] | None] = asyncio.Queue()
        self.record = record
        self._make_stream = make_stream
        self._on_done = on_done
        self._thread = threading.Thread(target=self._run, name=f"glmdesk-serve-{record.id}", daemon=True)

    def start(self) -> None:
        """Start the answer's thread."""
        self.record.started = time.perf_counter()
        self._thread.start()

    def _put(self, item) -> None:
        try:
            self.loop.call_soon_threadsafe(self.queue.put_nowait, item)
        except RuntimeError:  # the loop closed: the server is shutting down
            self.stop.set()

    def _run(self) -> None:
        try:
            for events in reply_events(self._safe_stream(), stop=self.stop):
                for event in events:
                    if isinstance(event, StepFigures):
                        self.record.kv_tokens = event.figures.cache.tokens_held
                    elif isinstance(event, (AnswerDone, AnswerFailed)):
                        self._record_end(event)  # before the client can see the end
                self._put(events)
        finally:
            self.record.ended = time.perf_counter()
            self.record.kv_tokens = 0
            self._put(None)
            try:
                self.loop.call_soon_threadsafe(self._on_done)
            except RuntimeError:
                pass

    def _safe_stream(self) -> Iterator[GenerationChunk]:
        yield from self._make_stream(self.stop)  # starting the stream may raise too

    def _record_end(self, last: AnswerDone | AnswerFailed) -> None:
        self.record.n_generated = last.figures.n_generated
        self.record.finish_reason = last.finish_reason if isinstance(last, AnswerDone) else "error"
        self.record.prompt_tokens = last.figures.prompt_tokens

    async def next(self) -> list[ChatEvent] | None:
        """The next step's events (``None`` once the answer has ended)."""
        return await self.queue.get()
