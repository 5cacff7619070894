"""The streamed reader of GLM-4.5/4.6/4.7's XML tool calls (:class:`XmlToolFilter`).

It shows the reply's text and holds back each ``<tool_call>`` block naming an offered
tool, reading it by the template's structure (:mod:`~glmdesk.engine.formats.xml_calls`).
Pieces may be cut anywhere (inside a tag, between a tag's characters): the result of a
reply streamed in pieces is the result of the whole reply.

- A call inside the reasoning block (``<think>...</think>``) is part of the reasoning:
  shown there and never run (as vLLM, whose tool parser reads only the answer).
- A call naming a tool not offered, a call cut off by the reply's end and a call whose
  text does not follow the structure are never run: their text is shown as written, with
  a :attr:`XmlToolFilter.notice`; an unreadable one is also kept in
  :attr:`XmlToolFilter.unreadable` for the tool loop to tell the model.
"""

from __future__ import annotations

from dataclasses import dataclass

from glmdesk.core.parts import ThinkMarkers
from glmdesk.core.text import held_length
from glmdesk.core.tools import INTERPRETER, ToolCall, ToolSet
from glmdesk.engine.formats.prompt import ReplyFilter
from glmdesk.engine.formats.xml_calls import (
    CALL_CLOSE,
    CALL_OPEN,
    KEY_OPEN,
    UnreadableCall,
    call_arguments,
    find_call_end,
    read_pairs,
)

#: The code interpreter's function name in GLM-4.5's tools (its template has no other
#: kind of tool); its calls run as interpreter calls.
PYTHON = "python"


def offers_python(tools: ToolSet) -> bool:
    """Whether ``tools`` offer the interpreter as the function :data:`PYTHON`."""
    return tools.interpreter and tools.function(PYTHON) is None


@dataclass(frozen=True)
class UnreadableCallText:
    """A call that was not run because its text could not be read.

    Attributes:
        name: The tool it names.
        text: The call as written, ``<tool_call>`` to ``</tool_call>``.
        reason: Why it could not be read (English, a sentence's end).
    """

    name: str
    text: str
    reason: str

    def observation(self) -> str:
        """What a tool loop tells the model in this call's place (English, as the
        templates' own tool texts are): the call was not run, why, and how to write it."""
        return (
            f"The call of {self.name} was not run: it could not be read ({self.reason}). "
            "Write it again as <tool_call>name<arg_key>key</arg_key><arg_value>value</arg_value>"
            "</tool_call>, each tag closed."
        )


def parse_xml_call(name: str, body: str, tools: ToolSet, raw: str = "") -> ToolCall:
    """The call ``<tool_call>{name}{body}</tool_call>`` (``body``: the argument pairs),
    its values decoded by the function's schema
    (:func:`~glmdesk.engine.formats.xml_calls.argument_value`).

    ``python`` with the interpreter offered is an interpreter call (its ``code``).

    Args:
        raw: The call as written (default: rebuilt from ``name`` and ``body``).

    Raises:
        UnreadableCall: when the body does not follow the template's structure.
        ValueError: when ``name`` is not an offered function, or an interpreter call
            has no code.
    """
    raw = raw or f"{CALL_OPEN}{name}{body}{CALL_CLOSE}"
    if name == PYTHON and offers_python(tools):
        code = dict(read_pairs(body)).get("code", "")
        if not code.strip():
            raise ValueError("the interpreter call has no code")
        return ToolCall(INTERPRETER, {"code": code}, raw, "interpreter")
    spec = tools.function(name)
    if spec is None:
        raise ValueError(f"it names the tool {name!r}, which this conversation does not offer")
    return ToolCall(name, call_arguments(body, spec.parameters), raw, "function")


def parse_xml_calls(text: str, tools: ToolSet, reasoning: ThinkMarkers | None = None) -> tuple[ToolCall, ...]:
    """Every ``<tool_call>`` block of a whole reply that calls an offered function, in
    the order written (a served model's text); with ``reasoning``, none inside the
    reply's leading think block."""
    reader = XmlToolFilter(tools, reasoning)
    reader(text)
    reader.finish(cut_off=False)
    return reader.calls


def parse_xml_reply(text: str, tools: ToolSet) -> ToolCall | None:
    """The first ``<tool_call>`` block of a whole reply that calls an offered function
    (a served model's text), or ``None``."""
    calls = parse_xml_calls(text, tools)
    return calls[0] if calls else None


class XmlToolFilter(ReplyFilter):
    """Shows text, holds back and reads ``<tool_call>`` blocks naming offered tools.

    The model may write several blocks in one turn (GLM-4.5's template renders them one
    after the other in one assistant message); each one that reads is kept in
    :attr:`calls`, in order, and the whitespace after it is not shown. The reply ends
    at the model's end token (``<|observation|>`` after calls), never at a
    ``</tool_call>`` (:attr:`stopped` stays False). See the module docstring for what
    is not run.

    Args:
        tools: What the conversation offers (``forced``: the prompt wrote
            ``<tool_call>`` and the name, the reply is that call's arguments).
        reasoning: The think markers when the reply may open with a reasoning block
            (its calls are reasoning text), else ``None``.
        inside: The reply starts inside the reasoning block (the prompt opened it).
    """

    def __init__(self, tools: ToolSet, reasoning: ThinkMarkers | None = None, inside: bool = False) -> None:
        self.tools = tools
        self.reasoning = reasoning
        self._calls: list[ToolCall] = []
        self.unreadable: list[UnreadableCallText] = []
        self.notice: str | None = None
        self._state = "text"  # [start -> think ->] text -> name -> call -> text ...; done at the end
        if reasoning is not None:
            self._state = "think" if inside else "start"
        self._held = ""
        self._name = ""  # the name line so far (state name), then the name (state call)
        self._head = ""  # the text between <tool_call> and the body, as written
        self._body = ""
        self._released = ""
        self._after_call = False  # whitespace after a call is not shown
        if tools.forced is not None:  # the prompt wrote <tool_call> and the name: the reply is the call
            self._state, self._name, self._head = "call", tools.forced, tools.forced

    @property
    def calls(self) -> tuple[ToolCall, ...]:
        """The recognised calls so far, in the order written."""
        return tuple(self._calls)

    @property
    def tool_call(self) -> ToolCall | None:
        """The first recognised call, or ``None``."""
        return self._calls[0] if self._calls else None

    @property
    def pending(self) -> str | None:
        """The tool being called while its arguments stream (``interpreter`` for code)."""
        if self._state != "call":
            return None
        return INTERPRETER if self._name == PYTHON and offers_python(self.tools) else self._name

    @property
    def call_text(self) -> str:
        """The pending call's argument pairs as written so far (a ``</tool_call>`` that
        may end it left out)."""
        if self._state != "call":
            return ""
        body = self._body
        cut = body.rfind(CALL_CLOSE)
        return body[:cut] if cut >= 0 and not body[cut + len(CALL_CLOSE) :].strip() else body

    def reasoning_apart(self) -> None:
        """The text holds no reasoning block from here on (a server sends the reasoning
        apart): what comes is read as answer text."""
        if self._state in ("start", "think"):
            self._state = "text"

    def __call__(self, delta: str) -> str:
        text, self._held, out = self._held + delta, "", ""
        while text and self._state != "done":
            if self._state in ("start", "think"):
                shown, text = self._reasoning_step(text)
                out += shown
            elif self._state == "text":
                if self._after_call:
                    text = text.lstrip()
                    if not text:
                        return out
                    self._after_call = False
                cut = text.find(CALL_OPEN)
                if cut < 0:
                    k = held_length(text, (CALL_OPEN,))
                    self._held = text[len(text) - k :] if k else ""
                    return out + text[: len(text) - k]
                out, text, self._state = out + text[:cut], text[cut + len(CALL_OPEN) :], "name"
            elif self._state == "name":
                text = self._name_step(text)
                if self._state == "text":  # not a call of an offered tool: shown
                    out += CALL_OPEN
            else:
                text = self._call_step(text, final=False)
                out, self._released = out + self._released, ""
        return out

    def _reasoning_step(self, text: str) -> tuple[str, str]:
        """``(shown, rest)``: the reply's leading think block passes as it is."""
        markers = self.reasoning
        assert markers is not None
        if self._state == "start":
            body = text.lstrip()
            if body.startswith(markers.open):
                self._state = "think"
                cut = len(text) - len(body) + len(markers.open)
                return text[:cut], text[cut:]
            if markers.open.startswith(body):  # whitespace, or the marker's first characters
                self._held = text
                return "", ""
            self._state = "text"
            return "", text
        cut = text.find(markers.close)
        if cut >= 0:
            self._state = "text"
            cut += len(markers.close)
            return text[:cut], text[cut:]
        k = held_length(text, (markers.close,))
        self._held = text[len(text) - k :] if k else ""
        return text[: len(text) - k], ""

    def _name_step(self, text: str) -> str:
        line = self._name + text
        name_text = line.lstrip()  # a newline after <tool_call> is allowed
        ends = [
            i for i in (name_text.find("\n"), name_text.find(KEY_OPEN), name_text.find(CALL_CLOSE)) if i >= 0
        ]
        if not name_text or not ends:
            self._name = line
            return ""
        end = len(line) - len(name_text) + min(ends)
        name, rest = line[:end].strip(), line[end:]
        self._name = ""
        if self.tools.function(name) is None and not (name == PYTHON and offers_python(self.tools)):
            self.notice = f"it names the tool {name!r}, which this conversation does not offer"
            self._state = "text"
            return line
        self._name, self._head, self._body, self._state = name, line[:end], "", "call"
        return rest

    def _call_step(self, text: str, final: bool) -> str:
        body = self._body + text
        end = find_call_end(body, final)
        if end is None:
            self._body = body
            return ""
        raw = f"{CALL_OPEN}{self._head}{end.body}{CALL_CLOSE}"
        self._state = "text"
        try:
            self._calls.append(parse_xml_call(self._name, end.body, self.tools, raw))
        except UnreadableCall as exc:  # never run: shown as written, the model to be told
            reason = str(exc)
            self.notice = f"the call of {self._name!r} could not be read: {reason}"
            self.unreadable.append(UnreadableCallText(self._name, raw, reason))
            self._released = raw
        except ValueError as exc:  # shown as the text it was; the text after it goes on
            self.notice = str(exc)
            self._released = raw
        else:
            self._after_call = True
        self._name = self._head = self._body = ""
        return end.rest

    def finish(self, cut_off: bool) -> str:
        """End of the reply: a call closed by its last ``</tool_call>`` is read, one left
        open is shown as text; returns the text still to show."""
        held, self._held = self._held, ""
        out = ""
        if self._state == "call":
            rest = self._call_step(held, final=True)
            held, out = "", self._released
            self._released = ""
            if self._state == "call":  # no </tool_call> at all
                self.notice = "the answer ended before the call was complete"
                out = f"{CALL_OPEN}{self._head}{self._body}"
            else:
                out += rest.lstrip() if self._after_call else rest
        elif self._state == "name":
            out = CALL_OPEN + self._name + held
            held = ""
        self._state = "done"
        return out + held

    def flush(self) -> str:
        return self.finish(cut_off=False)
