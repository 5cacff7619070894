"""A tool call's ``delta.tool_calls`` while the model writes it (``stream: true``).

OpenAI streams a call as deltas of one ``index``: the first carries ``id``, ``type`` and
``function.name`` (``arguments`` ``""``), later ones pieces of ``function.arguments``
that clients concatenate. glmdesk sends the first as soon as the engine says a call is
being written (a :class:`~glmdesk.core.parts.ToolCallPart` in ``GenerationChunk.parts``), then:

- Arguments written as JSON (GLM-4: the call's text starts with ``{``): each piece as
  it is written, but only while the text so far is a valid prefix of one JSON object
  (checked with ``jiter``'s partial mode); nothing after the object's closing brace,
  and trailing whitespace waits for what follows it. The pieces together are the
  model's JSON text, which parses to the same arguments as the non-stream answer's.
- Anything else (ChatGLM3's ``tool_call(...)``, fenced text, the interpreter's code):
  the arguments JSON in one piece once the call has parsed.

A call that then does not parse (cut off, not JSON, a tool that was not offered)
cannot be taken back: the client has the first delta and perhaps a JSON prefix of the
arguments; the answer ends with ``finish_reason: "stop"`` and the call's text as
``content``, so only ``finish_reason: "tool_calls"`` means a call to run (vLLM's
streaming tool parsers behave the same way).

Source: OpenAI API reference, Chat Completions streaming (``ChatCompletionChunk``
``choices[].delta.tool_calls[]``: ``index``, ``id``, ``type``, ``function.name``,
``function.arguments``).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from typing import Any

import jiter

from glmdesk.core.parts import ToolCallPart
from glmdesk.core.tools import INTERPRETER, ToolCall
from glmdesk.engine.chunk import GenerationChunk
from glmdesk.engine.tools.openai_tools import tool_call_deltas


class JsonObjectEnd:
    """Finds where the top-level JSON object at the start of a growing text ends; braces
    and brackets inside strings do not count. Incremental: each call reads only what was
    added since the last (the text must only grow), so a long call costs O(n) in all."""

    def __init__(self) -> None:
        self.pos, self.depth, self.in_string, self.escaped = 0, 0, False, False
        self.end = -1

    def __call__(self, text: str) -> int:
        """Index just after the object that ``text`` (starting with ``{``) opens, or
        ``-1`` while it is still open."""
        if self.end >= 0:
            return self.end
        for i in range(self.pos, len(text)):
            ch = text[i]
            if self.in_string:
                if self.escaped:
                    self.escaped = False
                elif ch == "\\":
                    self.escaped = True
                elif ch == '"':
                    self.in_string = False
            elif ch == '"':
                self.in_string = True
            elif ch in "{[":
                self.depth += 1
            elif ch in "}]":
                self.depth -= 1
                if self.depth == 0:
                    self.end = i + 1
                    return self.end
        self.pos = len(text)
        return -1


def json_prefix(text: str, scan: JsonObjectEnd | None = None) -> str:
    """The longest part of ``text`` that can be streamed as JSON arguments now: the
    text without leading and trailing whitespace, up to the end of its first JSON
    object, when it is a valid prefix of JSON; ``""`` when it is not (yet) one, or
    does not start with ``{``. ``scan``: the scanner kept for this (growing) text."""
    body = text.lstrip()
    if not body.startswith("{"):
        return ""
    end = (scan or JsonObjectEnd())(body)
    body = (body[:end] if end >= 0 else body).rstrip()
    try:
        jiter.from_json(body.encode(), partial_mode="trailing-strings")
    except ValueError:
        return ""
    return body


class _Slot:
    """One call's stream state: its id once its first delta went out, and the arguments
    sent so far."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.id: str | None = None
        self.sent = ""
        self.scan = JsonObjectEnd()


class ToolCallStream:
    """The ``delta.tool_calls`` entries of one streamed answer: one ``index`` per call,
    in the order written (GLM-4.5 writes several calls in one reply; a call that
    parsed ends its index, the next pending call opens the next).

    Attributes:
        id: The first call's id (``call_...``) once its first delta went out, else ``None``.
        sent: The first call's arguments sent so far (what the client has concatenated).
    """

    def __init__(self) -> None:
        self._slots: list[_Slot] = []
        self._open: _Slot | None = None

    @property
    def id(self) -> str | None:
        return self._slots[0].id if self._slots else None

    @property
    def sent(self) -> str:
        return self._slots[0].sent if self._slots else ""

    def update(self, chunk: GenerationChunk) -> list[dict[str, Any]]:
        """The deltas ``chunk`` adds: the first delta when a call starts, then new
        argument pieces (see the module docstring). Reads the chunk's tool-call parts
        (the same parts from every backend: the local parser's, the remote backend's)."""
        out: list[dict[str, Any]] = []
        for part in chunk.parts:
            if not isinstance(part, ToolCallPart):
                continue
            if part.done:  # this call parsed: a later pending part is the next call
                self._open = None
                continue
            out += self._progress(part)
        return out

    def _progress(self, part: ToolCallPart) -> list[dict[str, Any]]:
        out = []
        slot = self._open
        if slot is None:
            slot = self._open = _Slot(len(self._slots))
            self._slots.append(slot)
            slot.id = f"call_{uuid.uuid4().hex[:24]}"
            name = "python" if part.name == INTERPRETER else part.name
            head = {"name": name, "arguments": ""}
            out.append({"index": slot.index, "id": slot.id, "type": "function", "function": head})
        prefix = json_prefix(part.arguments_so_far, slot.scan)  # "" once no JSON prefix: nothing more
        if len(prefix) > len(slot.sent) and prefix.startswith(slot.sent):
            out.append(self._piece(slot.index, prefix[len(slot.sent) :]))
            slot.sent = prefix
        return out

    def finish(self, calls: Sequence[ToolCall]) -> list[dict[str, Any]]:
        """The deltas still owed once ``calls`` (the reply's calls, in order) parsed: for
        each, the first delta if none went out, then the rest of its arguments (all of
        them when nothing streamed)."""
        out = []
        for index, call in enumerate(calls):
            if index >= len(self._slots):  # the call was never pending (a backend that does not say)
                deltas = tool_call_deltas(call, index)
                slot = _Slot(index)
                slot.id, slot.sent = deltas[0]["id"], deltas[1]["function"]["arguments"]
                self._slots.append(slot)
                out += deltas
                continue
            out += self._rest(self._slots[index], call)
        return out

    def _rest(self, slot: _Slot, call: ToolCall) -> list[dict[str, Any]]:
        arguments = call.arguments_json()
        written = call.raw.strip()
        if slot.sent and written.startswith(slot.sent) and _same_json(written, call.arguments):
            arguments = written  # the model's own JSON text, whose start went out already
        if len(arguments) > len(slot.sent) and arguments.startswith(slot.sent):
            slot.sent, rest = arguments, arguments[len(slot.sent) :]
            return [self._piece(slot.index, rest)]
        return []

    @staticmethod
    def _piece(index: int, text: str) -> dict[str, Any]:
        return {"index": index, "function": {"arguments": text}}


def _same_json(text: str, arguments) -> bool:
    try:
        return json.loads(text) == dict(arguments)
    except (ValueError, RecursionError):
        return False
