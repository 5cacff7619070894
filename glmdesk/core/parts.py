"""The typed parts of a reply: text, reasoning and tool calls.

A family's reply parser (:mod:`glmdesk.engine.families`) turns the model's token
stream into these parts, and every layer passes them on as they are:
``GenerationChunk.parts`` (the parts of one step), the server's deltas (text as
``content``, reasoning as ``reasoning_content``, calls as ``tool_calls``), the remote
backend. Plain frozen values, no Qt and no torch, so history and the window can bind to
them too.

Source of the shape: GPT4All's ``ChatItem`` (text, tool call, tool response, think) and
vLLM's reasoning parsers (``reasoning_content`` beside ``content``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class TextPart:
    """Answer text shown to the user (new complete characters)."""

    text: str


@dataclass(frozen=True)
class ReasoningPart:
    """Text the model wrote while thinking (GLM-Z1's ``<think>...</think>``), markers
    left out: shown apart from the answer and never sent back in a later prompt."""

    text: str


@dataclass(frozen=True)
class ToolCallPart:
    """A tool call being written, or written.

    Attributes:
        name: The tool's name (``interpreter`` for code).
        arguments_so_far: The call's text written so far (the whole text each time, not
            a delta): GLM-4's JSON arguments, ChatGLM3's fenced ``tool_call(...)``, the
            interpreter's fenced code, or a server's ``function.arguments``; once
            ``done``, the parsed arguments as JSON.
        done: True once the call parsed (the answer then ends with ``tool_calls``).
    """

    name: str
    arguments_so_far: str
    done: bool = False


@dataclass(frozen=True)
class ThinkMarkers:
    """The text that opens and closes a reasoning block (GLM-Z1: ``<think>``, ``</think>``)."""

    open: str = "<think>"
    close: str = "</think>"


@dataclass(frozen=True)
class ToolResponsePart:
    """A tool's result (an ``observation`` message: ChatGLM3/GLM-4's ``<|observation|>``
    turn, GLM-4.5's ``<tool_response>``), as the window shows it.

    Attributes:
        name: The tool whose result it is (may be empty).
        text: The result's text.
        images: PNG files' bytes the tool returned (the interpreter's plots).
    """

    name: str
    text: str
    images: tuple[bytes, ...] = ()


#: One part of a reply.
ReplyPart = TextPart | ReasoningPart | ToolCallPart
#: One part of a message as the window shows it: a reply's parts, or a tool's result.
MessagePart = TextPart | ReasoningPart | ToolCallPart | ToolResponsePart


def text_of(parts: Iterable[MessagePart]) -> str:
    """The answer text in ``parts`` (their :class:`TextPart` texts joined)."""
    return "".join(p.text for p in parts if isinstance(p, TextPart))


def reasoning_of(parts: Iterable[MessagePart]) -> str:
    """The reasoning text in ``parts`` (their :class:`ReasoningPart` texts joined)."""
    return "".join(p.text for p in parts if isinstance(p, ReasoningPart))


def merged(parts: Iterable[ReplyPart]) -> tuple[ReplyPart, ...]:
    """``parts`` with neighbouring text (or reasoning) parts joined and empty ones left
    out; of consecutive tool-call parts of one call only the last is kept (a done part
    ends its call: a part after it is the next call's)."""
    out: list[ReplyPart] = []
    for part in parts:
        if isinstance(part, (TextPart, ReasoningPart)):
            if not part.text:
                continue
            last = out[-1] if out else None
            if isinstance(last, (TextPart, ReasoningPart)) and type(last) is type(part):
                out[-1] = type(part)(last.text + part.text)
                continue
        elif out and isinstance(out[-1], ToolCallPart) and out[-1].name == part.name and not out[-1].done:
            out[-1] = part
            continue
        out.append(part)
    return tuple(out)


class PartsSoFar:
    """The parts of a reply being streamed, gathered from its chunks' parts.

    Text and reasoning pieces are kept as lists and joined only when :meth:`parts` is
    asked (at each repaint, not each chunk), so a long answer costs O(length) in all.
    A tool call's part replaces its earlier part (``arguments_so_far`` is the whole
    text each time); a call not ``done`` followed by text was released as text (it did
    not parse), so its part goes. Not thread-safe: one per streamed message.

    Args:
        parts: Parts already shown (Continue: the answer so far).
    """

    def __init__(self, parts: Iterable[MessagePart] = ()) -> None:
        self._items: list[list | ToolCallPart | ToolResponsePart] = []
        self.add(parts)

    def add(self, parts: Iterable[MessagePart]) -> None:
        """Add the parts of the next chunk, in reply order."""
        items = self._items
        for part in parts:
            if isinstance(part, (TextPart, ReasoningPart)):
                if not part.text:
                    continue
                last = items[-1] if items else None
                if isinstance(last, ToolCallPart) and not last.done and isinstance(part, TextPart):
                    items.pop()  # the call was released as text
                    last = items[-1] if items else None
                if isinstance(last, list) and last[0] is type(part):
                    last.append(part.text)
                else:
                    items.append([type(part), part.text])
            elif isinstance(part, ToolCallPart) and items and _same_call(items[-1], part):
                items[-1] = part
            else:
                items.append(part)

    def parts(self) -> tuple[MessagePart, ...]:
        """The reply so far, neighbouring pieces joined."""
        out: list[MessagePart] = []
        for item in self._items:
            if isinstance(item, list):
                if len(item) > 2:
                    item[1:] = ["".join(item[1:])]  # joined once, not at every repaint
                out.append(item[0](item[1]))
            else:
                out.append(item)
        return tuple(out)


def _same_call(item, part: ToolCallPart) -> bool:
    return isinstance(item, ToolCallPart) and not item.done and item.name == part.name
