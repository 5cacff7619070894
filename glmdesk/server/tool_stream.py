"""A tool call's ``delta.tool_calls`` while the model writes it (``stream: true``).

OpenAI streams a call as deltas of one ``index``: the first carries ``id``, ``type`` and
``function.name`` (``arguments`` ``""``), later ones pieces of ``function.arguments``
that clients concatenate. glmdesk sends the first as soon as the answer run says a call
is being written (:class:`~glmdesk.chat.events.ToolCallStarted`), then, as it grows
(:class:`~glmdesk.chat.events.ToolCallGrowing`):

- Arguments written as JSON (GLM-4: the call's text starts with ``{``): each piece as
  it is written, but only while the text so far is a valid prefix of one JSON object
  (checked with ``jiter``'s partial mode); nothing after the object's closing brace,
  and trailing whitespace waits for what follows it. The pieces together are the
  model's JSON text, which parses to the same arguments as the non-stream answer's.
- Anything else (ChatGLM3's ``tool_call(...)``, fenced text, the interpreter's code):
  the arguments JSON in one piece once the call has parsed
  (:class:`~glmdesk.chat.events.ToolCallComplete`).

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

from glmdesk.chat.events import ChatEvent, ToolCallComplete, ToolCallGrowing, ToolCallStarted
from glmdesk.core.tools import INTERPRETER, ToolCall
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
    the answer run's call index (GLM-4.5 writes several calls in one reply).

    Attributes:
        id: The first call's id (``call_...``) once its first delta went out, else ``None``.
        sent: The first call's arguments sent so far (what the client has concatenated).
    """

    def __init__(self) -> None:
        self._slots: dict[int, _Slot] = {}

    @property
    def id(self) -> str | None:
        return self._slots[0].id if 0 in self._slots else None

    @property
    def sent(self) -> str:
        return self._slots[0].sent if 0 in self._slots else ""

    def update(self, events: Sequence[ChatEvent]) -> list[dict[str, Any]]:
        """The deltas one step's ``events`` add: the first delta when a call starts, new
        argument pieces while it grows, the rest once it parsed (see the module
        docstring). A call that starts and parsed in the same step (a backend that did
        not show it pending) goes out whole, with the call's own id when it has one."""
        out: list[dict[str, Any]] = []
        completed = {e.index: e.call for e in events if isinstance(e, ToolCallComplete)}
        whole: set[int] = set()  # started and parsed in this step: sent in one go
        for event in events:
            if isinstance(event, ToolCallStarted):
                if event.index in completed:
                    whole.add(event.index)
                    out += self._whole(event.index, completed[event.index])
                else:
                    out.append(self._head(event))
            elif not isinstance(event, (ToolCallGrowing, ToolCallComplete)) or event.index in whole:
                continue
            elif event.index not in self._slots:
                continue
            elif isinstance(event, ToolCallGrowing):
                out += self._progress(self._slots[event.index], event.arguments_so_far)
            else:
                out += self._rest(self._slots[event.index], event.call)
        return out

    def _head(self, event: ToolCallStarted) -> dict[str, Any]:
        slot = self._slots[event.index] = _Slot(event.index)
        slot.id = f"call_{uuid.uuid4().hex[:24]}"
        name = "python" if event.name == INTERPRETER else event.name
        head = {"name": name, "arguments": ""}
        return {"index": slot.index, "id": slot.id, "type": "function", "function": head}

    def _whole(self, index: int, call: ToolCall) -> list[dict[str, Any]]:
        deltas = tool_call_deltas(call, index)
        slot = self._slots[index] = _Slot(index)
        slot.id, slot.sent = deltas[0]["id"], deltas[1]["function"]["arguments"]
        return deltas

    def _progress(self, slot: _Slot, so_far: str) -> list[dict[str, Any]]:
        prefix = json_prefix(so_far, slot.scan)  # "" once no JSON prefix: nothing more
        if len(prefix) > len(slot.sent) and prefix.startswith(slot.sent):
            piece = self._piece(slot.index, prefix[len(slot.sent) :])
            slot.sent = prefix
            return [piece]
        return []

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
