"""One streamed answer from an OpenAI-compatible server, as :class:`GenerationChunk` values.

The ``openai`` stream is read on its own thread and handed over through a queue, so
Stop ends the answer at once even while the server is silent (a long prefill); the
reader closes the HTTP stream at its next event, which makes vLLM abort the request.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator

from glmdesk.core.errors import ErrorInfo, GlmdeskError
from glmdesk.core.parts import ReasoningPart, ReplyPart, TextPart, ToolCallPart, merged
from glmdesk.core.tools import ToolSet
from glmdesk.engine.backends.remote import errors as remote_errors
from glmdesk.engine.backends.remote.tools import RemoteCalls
from glmdesk.engine.chunk import GenerationChunk
from glmdesk.engine.decode.answer_clock import AnswerClock
from glmdesk.engine.families import ModelFamily
from glmdesk.engine.families.parser import ThinkSplitter
from glmdesk.engine.formats.answer_markers import AnswerMarkerFilter

_POLL_S = 0.05  # how often the waiting side checks Stop, in s
_END = object()


class RemoteAnswer:
    """The client side of one answer: timings measured here, counts from ``usage``.

    Args:
        url: The server's base URL (named in sentences).
        model: The model id.
        stall_s: The stream's read timeout (no byte for this long: ``server_stalled``), in s.
        chat: A chat completion (deltas) or a raw completion (text).
        tools: The tools the request offered (their calls end the answer with
            ``tool_calls``, as the local backends' do).
        families: GLM formats to parse call text with when the server returns no
            ``tool_calls`` (see :class:`~glmdesk.engine.backends.remote.tools.RemoteCalls`).
        family: The served model's family (from its id): when it writes a think block
            (GLM-Z1), one in the text becomes reasoning parts, as the local backends'
            do, unless the server sends the reasoning apart (``reasoning_content``).
    """

    def __init__(
        self,
        url: str,
        model: str,
        stall_s: float,
        chat: bool,
        tools: ToolSet | None = None,
        families: tuple[str, ...] = ("glm4", "chatglm3"),
        family: ModelFamily | None = None,
    ) -> None:
        self.url, self.model, self.stall_s, self.chat = url, model, stall_s, chat
        self.think = None
        reasoning = None if family is None else family.reasoning
        inside = family is not None and family.opens_reasoning
        self.calls = RemoteCalls(tools or ToolSet(), families, reasoning, inside)
        if family is not None and family.reasoning is not None:
            self.think = ThinkSplitter(family.reasoning, inside=family.opens_reasoning)
        self.hide = None  # leaves out the family's answer markers (GLM-4.1V's <answer>)
        if family is not None and family.answer_markers:
            self.hide = AnswerMarkerFilter(family.answer_markers)
        self.clock = AnswerClock()
        self.n_generated = 0
        self.prompt_tokens = 0
        self.pieces = 0

    def split(self, text: str) -> list[ReplyPart]:
        """The parts of answer text the server sent: reasoning and answer when the served
        model's family writes a think block (a server without a reasoning parser)."""
        if self.hide is not None:
            text = self.hide(text)
        return self._parts(text)

    def _parts(self, text: str) -> list[ReplyPart]:
        if not text:
            return []
        return self.think(text) if self.think is not None else [TextPart(text)]

    def chunk(self, parts=(), finish: str | None = None, error=None, **more) -> GenerationChunk:
        """A chunk of ``parts`` (a string: answer text) with the client's timings
        (tokens/s after the first token); ``more``: further :class:`GenerationChunk`
        fields (tool call, notice)."""
        given: list[ReplyPart] = [TextPart(parts)] if isinstance(parts, str) else list(parts)
        if finish is None and self.calls.pending is not None:
            given.append(ToolCallPart(self.calls.pending, self.calls.call_text))
        for call in more.get("tool_calls") or ((more["tool_call"],) if more.get("tool_call") else ()):
            given.append(ToolCallPart(call.name, call.arguments_json(), done=True))
        return GenerationChunk(
            parts=merged(given),
            prompt_tokens=self.prompt_tokens,
            n_generated=self.n_generated,
            ttft_s=self.clock.ttft_s,
            tokens_per_s=self.clock.tokens_per_s(self.n_generated),
            finish_reason=finish,
            error=error,
            **more,
        )

    def _read(self, open_stream: Callable, out: queue.Queue, stop: threading.Event) -> None:
        """The reader thread: ``("open", None)``, then ``("event", e)``..., then
        ``("error", exc)`` or ``("end", None)``; leaves at the next event once ``stop``
        (the answer's own closing event) is set."""
        stream = None
        try:
            stream = open_stream()
            out.put(("open", None))
            for event in stream:
                if stop.is_set():
                    break
                out.put(("event", event))
            out.put(("end", None))
        except Exception as exc:
            out.put(("error", exc))
        finally:
            if stream is not None:
                try:
                    stream.close()
                except Exception:
                    pass

    def run(self, open_stream: Callable, stop: threading.Event) -> Iterator[GenerationChunk]:
        """Stream the answer ``open_stream()`` starts. Never raises."""
        if stop.is_set():
            yield self.chunk(finish="cancelled")
            return
        inbox: queue.Queue = queue.Queue()
        closing = threading.Event()
        reader = threading.Thread(
            target=self._read, args=(open_stream, inbox, closing), daemon=True, name="glmdesk-remote"
        )
        reader.start()
        opened = False
        finish: str | None = None
        try:
            while True:
                try:
                    kind, item = inbox.get(timeout=_POLL_S)
                except queue.Empty:
                    if stop.is_set():
                        yield self.chunk(finish="cancelled")
                        return
                    continue
                if kind == "open":
                    opened = True
                elif kind == "event":
                    text, thought, reason = self._take(item)
                    finish = reason or finish
                    if thought:  # the server splits the reasoning itself
                        self.think = None
                        self.calls.reasoning_apart()
                    parts = ([ReasoningPart(thought)] if thought else []) + self.split(self.calls.text(text))
                    if parts or self.calls.pending is not None:
                        yield self.chunk(parts)
                    if stop.is_set():
                        yield self.chunk(finish="cancelled")
                        return
                elif kind == "error":
                    if stop.is_set():
                        yield self.chunk(finish="cancelled")
                        return
                    error = remote_errors.from_exception(self.url, self.model, item, opened, self.stall_s)
                    yield self.chunk(finish="error", error=error.info)
                    return
                else:  # end of the stream
                    yield self._last(finish)
                    return
        finally:
            closing.set()  # the reader closes the stream at its next event

    def _take(self, event) -> tuple[str, str, str | None]:
        """The text, reasoning and finish reason of one streamed event; counts and times it.

        Reasoning is the delta's ``reasoning_content`` (vLLM's reasoning parsers; newer
        vLLM: ``reasoning``), an extra field of the ``openai`` client's delta object."""
        usage = getattr(event, "usage", None)
        if usage is not None:
            self.prompt_tokens = usage.prompt_tokens or 0
            self.n_generated = usage.completion_tokens or self.n_generated
        text, thought, reason = "", "", None
        calls = False
        for choice in event.choices or ():
            piece = (choice.delta.content if self.chat else choice.text) or ""
            text += piece
            if self.chat:
                extra = getattr(choice.delta, "model_extra", None) or {}
                thought += extra.get("reasoning_content") or extra.get("reasoning") or ""
            reason = choice.finish_reason or reason
            for delta in (getattr(choice.delta, "tool_calls", None) or ()) if self.chat else ():
                self.calls.add_delta(delta)
                calls = True
        if text or thought or calls:
            self.clock.first_token()
            self.pieces += 1
            if usage is None:
                self.n_generated = max(self.n_generated, self.pieces)
        return text, thought, reason

    def _last(self, finish: str | None) -> GenerationChunk:
        if finish is None:  # the stream ended without saying why: it was cut
            error = GlmdeskError(
                "connection_lost",
                f"The connection to {self.url} was lost in the middle of the answer (the stream ended "
                "without a finish reason). The answer so far is kept.",
                url=self.url,
                detail="the stream ended without a finish reason",
            )
            return self.chunk(finish="error", error=error.info)
        call, rest = self.calls.finish()
        if call is not None and finish != "length":
            return self.chunk(finish="tool_calls", tool_call=call, tool_calls=self.calls.calls or (call,))
        notice = None
        if self.calls.pending is not None:
            reason = "its arguments did not parse, or it names a tool that was not offered"
            notice = ErrorInfo(
                "tool_call_invalid",
                f"The model wrote a tool call that glmdesk did not run, so it is shown as text: {reason}.",
                {"reason": reason},
            )
        if self.hide is not None:  # with what it held (a "<" that began no marker)
            rest = self.hide(rest) + self.hide.flush()
        parts = self._parts(rest) + (self.think.finish() if self.think is not None else [])
        return self.chunk(parts, finish="length" if finish == "length" else "stop", notice=notice)
