"""The shown reply of a ChatGLM3/GLM-4 answer when tools are offered.

A reply is one or more assistant segments, each ``metadata + "\\n" + content``; a
segment after the first starts with another ``<|assistant|>`` id (THUDM's
``process_response`` splits the reply there). An empty metadata line is text (shown,
leading whitespace stripped); a metadata line naming an offered tool starts a call,
whose text is held back (the UI shows a card, :attr:`ToolReplyFilter.pending`) and
parsed when the reply ends (:mod:`glmdesk.engine.formats.chatglm_tools`). A call that is not
recognised (unknown tool, arguments that do not parse, cut off) is released as
ordinary text and :attr:`ToolReplyFilter.notice` says why.
"""

from __future__ import annotations

import re

from glmdesk.core.tools import INTERPRETER, ToolCall, ToolSet
from glmdesk.engine.formats.chatglm_tools import CallError, offered_names, parse_call
from glmdesk.engine.formats.prompt import ReplyFilter

_NAME_CHARS = re.compile(r"[A-Za-z0-9_.\-]*")
_MAX_NAME = 64


class ToolReplyFilter(ReplyFilter):
    """Shows text segments, holds back and parses tool calls.

    Args:
        family: ``chatglm3`` or ``glm4`` (how calls are written).
        tools: What the conversation offers. With ``tools.forced`` the prompt ended
            with that function's metadata line, so the reply starts inside its call.
        segment_id: The ``<|assistant|>`` id (starts a new segment mid-reply).

    Attributes:
        tool_call: The recognised call once the reply ended (else ``None``).
        notice: Why a call-like segment was shown as text (English), or ``None``.
    """

    def __init__(self, family: str, tools: ToolSet, segment_id: int) -> None:
        self.family = family
        self.tools = tools
        self.segment_id = segment_id
        self.names = offered_names(family, tools)
        self.tool_call: ToolCall | None = None
        self.notice: str | None = None
        self._state = "meta"  # meta -> content_start -> text | call
        self._held = ""
        self._meta = ""
        self._call = ""
        self._shown_any = False
        self._stopped = False
        if tools.forced is not None:  # the prompt wrote the metadata line: the reply is the call
            self._state, self._meta = "call", tools.forced

    @property
    def stopped(self) -> bool:
        """True once a call was recognised and another segment began (end the reply)."""
        return self._stopped

    @property
    def pending(self) -> str | None:
        """The tool being called while its text streams (``interpreter`` for code)."""
        if self._state != "call":
            return None
        return self._meta if self.tools.function(self._meta) else INTERPRETER

    @property
    def call_text(self) -> str:
        """The pending call's text written so far, exactly as the model wrote it after the
        metadata line (ChatGLM3's fenced ``tool_call(...)``, GLM-4's JSON arguments, the
        interpreter's fenced code); it only grows while the call streams. ``""`` when no
        call is pending."""
        return self._call if self._state == "call" else ""

    def see_token(self, token_id: int) -> str:
        """Called with every generated id before its text; a new segment ends the current."""
        if token_id != self.segment_id:
            return ""
        out = self._end_segment(cut_off=False)
        if self.tool_call is not None:
            self._stopped = True
        self._state, self._held, self._meta, self._call = "meta", "", "", ""
        return out

    def __call__(self, delta: str) -> str:
        if self._stopped or not delta:
            return ""
        if self._state == "call":
            self._call += delta
            return ""
        if self._state == "text":
            return self._show(delta)
        if self._state == "meta":
            return self._meta_step(delta)
        stripped = delta.lstrip()  # content_start: THUDM strips a plain answer
        if not stripped:
            return ""
        self._state = "text"
        return self._show(("\n\n" if self._shown_any else "") + stripped)

    def _meta_step(self, delta: str) -> str:
        self._held += delta
        rest = self._held.lstrip(" ")
        if not rest:
            return ""
        if rest[0] == "\n":
            self._held = ""
            self._state = "content_start"
            return self(rest[1:]) if rest[1:] else ""
        line, newline, after = rest.partition("\n")
        if not newline:
            if _NAME_CHARS.fullmatch(line) and len(line) <= _MAX_NAME:
                return ""  # may still be a tool name
            self._state = "text"  # not a metadata line: ordinary text
            out, self._held = self._held, ""
            return self._show(out)
        name = line.strip()
        self._held = ""
        if name in self.names:
            self._state, self._meta, self._call = "call", name, after
            return ""
        self._state = "text"
        if _NAME_CHARS.fullmatch(name):
            self.notice = f"it names the tool {name!r}, which this conversation does not offer"
        return self._show(f"{line}\n{after}")

    def _show(self, text: str) -> str:
        if text:
            self._shown_any = True
        return text

    def _end_segment(self, cut_off: bool) -> str:
        if self._state == "meta":
            out, self._held = self._held, ""
            return self._show(out)
        if self._state != "call":
            return ""
        raw = f"{self._meta}\n{self._call}"
        if self.tool_call is not None:  # a second call in one reply is shown as text
            self.notice = "the model wrote a second call in one answer; only the first is run"
            return self._show(raw)
        if cut_off:
            self.notice = "the answer ended before the call was complete"
            return self._show(raw)
        try:
            self.tool_call = parse_call(self.family, self._meta, self._call, self.tools)
        except CallError as exc:
            self.notice = str(exc)
            return self._show(raw)
        return ""

    def finish(self, cut_off: bool) -> str:
        """End of the reply: parse a held call (``cut_off``: it ended early, so it is text)."""
        out = self._end_segment(cut_off)
        self._state = "done"
        return out

    def flush(self) -> str:
        return self.finish(cut_off=False)
