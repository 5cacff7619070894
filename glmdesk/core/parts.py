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


#: One part of a reply.
ReplyPart = TextPart | ReasoningPart | ToolCallPart


def text_of(parts: Iterable[ReplyPart]) -> str:
    """The answer text in ``parts`` (their :class:`TextPart` texts joined)."""
    return "".join(p.text for p in parts if isinstance(p, TextPart))


def reasoning_of(parts: Iterable[ReplyPart]) -> str:
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
            if out and type(out[-1]) is type(part):
                out[-1] = type(part)(out[-1].text + part.text)
                continue
        elif out and isinstance(out[-1], ToolCallPart) and out[-1].name == part.name and not out[-1].done:
            out[-1] = part
            continue
        out.append(part)
    return tuple(out)
