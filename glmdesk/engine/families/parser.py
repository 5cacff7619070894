"""Reply parsers: a model's streamed reply as typed parts (text, reasoning, tool call).

A :class:`ReplyParser` is what every backend asks for one answer's reply: the local
decode loop (:mod:`glmdesk.engine.decode.generate`, transformers and llama.cpp alike) and the
remote backend (:mod:`glmdesk.engine.backends.remote.stream`). It chains the prompt
format's :class:`~glmdesk.engine.formats.prompt.ReplyFilter` (ChatGLM3's metadata line,
ChatGLM2's ``[Round`` stop, the GLM tool-call filter) with a :class:`ThinkSplitter`
when the family writes reasoning (GLM-Z1's ``<think>...</think>``), and says each
step's parts: :class:`~glmdesk.core.parts.TextPart`,
:class:`~glmdesk.core.parts.ReasoningPart`, :class:`~glmdesk.core.parts.ToolCallPart`.
"""

from __future__ import annotations

from glmdesk.core.parts import ReasoningPart, ReplyPart, TextPart, ThinkMarkers, ToolCallPart
from glmdesk.core.text import held_length
from glmdesk.core.tools import ToolCall, ToolSet
from glmdesk.engine.formats.prompt import PromptFormat, ReplyFilter


class ThinkSplitter:
    """Splits reply text into reasoning and answer at the family's think markers.

    The reply may open with the open marker (leading whitespace allowed), or start
    inside the block when the prompt already opened it (``inside``: GLM-Z1's template
    ends the generation prompt with ``<think>``; an open marker the model writes again
    there is left out too). Text up to the close marker is
    reasoning; the answer after it starts without leading whitespace. A reply that
    starts with anything else is all answer. Marker fragments split across deltas
    are held back until decided (or :meth:`finish`).

    Args:
        markers: The open and close marker.
        inside: The reply starts inside the reasoning block.
    """

    def __init__(self, markers: ThinkMarkers, inside: bool = False) -> None:
        self.markers = markers
        self.inside = inside
        self._state = "start"  # start -> think -> answer_start -> answer
        self._held = ""

    def __call__(self, text: str) -> list[ReplyPart]:
        """The parts ``text`` (the next piece of the reply) completes."""
        text, self._held = self._held + text, ""
        out: list[ReplyPart] = []
        while text:
            if self._state == "start":
                body = text.lstrip()
                if body.startswith(self.markers.open):
                    self._state, text = "think", body[len(self.markers.open) :]
                    continue
                if self.markers.open.startswith(body):
                    self._held = text
                    return out
                self._state = "think" if self.inside else "answer"
                continue
            if self._state == "think":
                cut = text.find(self.markers.close)
                if cut >= 0:
                    out.append(ReasoningPart(text[:cut]))
                    self._state, text = "answer_start", text[cut + len(self.markers.close) :]
                    continue
                k = held_length(text, (self.markers.close,))
                self._held = text[len(text) - k :] if k else ""
                out.append(ReasoningPart(text[: len(text) - k]))
                return out
            if self._state == "answer_start":
                text = text.lstrip()
                if not text:
                    return out
                self._state = "answer"
            out.append(TextPart(text))
            return out
        return out

    def finish(self) -> list[ReplyPart]:
        """The text held back at the end of the reply, as the part it was in."""
        held, self._held = self._held, ""
        if not held:
            return []
        thinking = self._state == "think" or (self._state == "start" and self.inside)
        return [ReasoningPart(held)] if thinking else [TextPart(held)]


class ReplyParser:
    """One answer's reply as typed parts.

    Args:
        shown: The prompt format's reply filter for this answer (tool-call filter when
            tools are offered).
        think: Splits reasoning from the answer (``None``: the family writes none).

    The decode loop calls :meth:`see_token` with each generated id, then :meth:`feed`
    with the text it completes, reads :attr:`stopped`, and calls :meth:`finish` once.
    """

    def __init__(self, shown: ReplyFilter, think: ThinkSplitter | None = None) -> None:
        self.shown = shown
        self.think = think
        self._call_sent = ""
        self._calls_done = 0  # calls already said done (several in one GLM-4.5 reply)

    @property
    def stopped(self) -> bool:
        """True once the format saw its own end marker in the text (end the reply)."""
        return self.shown.stopped

    @property
    def tool_call(self) -> ToolCall | None:
        """The recognised call once the reply ended, else ``None``."""
        return self.shown.tool_call

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        """Every recognised call, in the order written."""
        return self.shown.calls

    @property
    def unreadable(self) -> tuple:
        """Calls not run because their text could not be read (GLM-4.5's XML calls:
        :class:`~glmdesk.engine.formats.xml_call_filter.UnreadableCallText`, each with the
        ``observation()`` a tool loop tells the model), in the order written."""
        return tuple(getattr(self.shown, "unreadable", ()))

    @property
    def notice(self) -> str | None:
        """Why a call-like reply was shown as text (English), else ``None``."""
        return self.shown.notice

    @property
    def pending(self) -> str | None:
        """The tool being called while its text streams (``interpreter`` for code)."""
        return self.shown.pending

    @property
    def call_text(self) -> str:
        """The pending call's text so far (``""`` when none is pending)."""
        return self.shown.call_text

    def _split(self, text: str) -> list[ReplyPart]:
        if not text:
            return []
        return self.think(text) if self.think is not None else [TextPart(text)]

    def _done_calls(self) -> list[ReplyPart]:
        calls = self.shown.calls[self._calls_done :]
        self._calls_done += len(calls)
        if calls:
            self._call_sent = ""
        return [ToolCallPart(c.name, c.arguments_json(), done=True) for c in calls]

    def _call_progress(self) -> list[ReplyPart]:
        done = self._done_calls()  # a call that parsed while the reply goes on (GLM-4.5)
        name = self.shown.pending
        if name is None:
            return done
        text = self.shown.call_text
        if text == self._call_sent and self._call_sent:
            return done
        self._call_sent = text
        return [*done, ToolCallPart(name, text)]

    def see_token(self, token_id: int) -> list[ReplyPart]:
        """Parts a generated id completes before its text (a new GLM segment ends a call)."""
        return self._split(self.shown.see_token(token_id))

    def feed(self, text: str) -> list[ReplyPart]:
        """Parts ``text`` (new whole characters of the reply) completes."""
        return self._split(self.shown(text)) + self._call_progress()

    def finish(self, cut_off: bool) -> list[ReplyPart]:
        """The parts still held at the end (``cut_off``: length, Stop or an error ended
        the reply early, so a held call is text); each recognised call not yet said as
        a done part."""
        parts = self._split(self.shown.finish(cut_off))
        if self.think is not None:
            parts += self.think.finish()
        return parts + self._done_calls()


def reply_parser(fmt: PromptFormat, tools: ToolSet | None = None, resumed: bool = False) -> ReplyParser:
    """The parser of one answer in ``fmt``.

    Args:
        fmt: The model's prompt format (its filters, whether it has tool calls, its
            think markers and whether its prompt opens the block).
        tools: What the conversation offers; with tools and a format that has tool
            calls, its tool-call filter.
        resumed: The rest of an open answer (Continue): the continuation filter, and no
            reasoning (the kept answer is the answer text).
    """
    if resumed:
        return ReplyParser(fmt.continuation_filter())
    shown = fmt.tool_reply_filter(tools) if tools and fmt.tool_calls else fmt.reply_filter()
    markers = fmt.reasoning
    forced = bool(tools and fmt.tool_calls and fmt.opens_forced_call and tools.forced)
    inside = fmt.opens_reasoning and not forced  # a forced call's prompt closed the block
    think = ThinkSplitter(markers, inside=inside) if markers is not None else None
    return ReplyParser(shown, think)
