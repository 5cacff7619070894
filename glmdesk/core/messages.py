"""Chat messages as plain values."""

from __future__ import annotations

import json
from dataclasses import dataclass

from glmdesk.core.history_documents import DocumentUse
from glmdesk.core.images import ImageAttachment
from glmdesk.core.parts import MessagePart, ReasoningPart, TextPart, ToolCallPart, ToolResponsePart
from glmdesk.core.tools import INTERPRETER, ToolCall, ToolSet

#: Why an answer ended: the engine's chunks and history's stored answers share this list.
#: ``tool_calls``: the reply is a recognised tool call, answered with an observation turn.
#: ``repetition``: the engine stopped an answer stuck repeating one short unit of tokens
#: (the rule is in :mod:`glmdesk.engine.decode.repetition`).
FINISH_REASONS = ("stop", "length", "cancelled", "error", "tool_calls", "repetition")

ROLES = ("system", "user", "assistant", "observation")


@dataclass(frozen=True)
class ChatMessage:
    """One message of a conversation.

    Attributes:
        role: ``"system"``, ``"user"``, ``"assistant"`` or ``"observation"`` (a tool's
            result, ChatGLM3/GLM-4's ``<|observation|>`` turn).
        content: The text, exactly as typed or generated. For an assistant message
            with a tool call it is empty (the call's own text is ``tool_call.raw``).
        tool_call: For an assistant message: the tool call it made.
        tools: For a system message: the tools the conversation offers.
        name: For an observation: the tool whose result it is (may be empty).
        images: For an observation: PNG files' bytes the tool returned (the code
            interpreter's plots), shown in the window; prompts use ``content`` only.
        attachments: For a user message: the images attached to it, in order (a vision
            model sees them before the text, as its chat template places them).
        documents: For a user message: the documents it was given (by path; their text
            went to the model with this turn only, see :mod:`glmdesk.documents`).
        reasoning: For an assistant message: what the model wrote while thinking
            (GLM-Z1's ``<think>`` block, markers left out), kept apart from ``content``;
            prompt formats read ``content`` only, so a later prompt leaves it out, as
            the GLM-Z1 and GLM-4.1V-Thinking templates do with earlier turns.

    Raises:
        ValueError: for an unknown role, or a field that does not belong to the role.
    """

    role: str
    content: str
    tool_call: ToolCall | None = None
    tools: ToolSet | None = None
    name: str = ""
    images: tuple[bytes, ...] = ()
    attachments: tuple[ImageAttachment, ...] = ()
    reasoning: str = ""
    documents: tuple[DocumentUse, ...] = ()

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"unknown role {self.role!r}; expected one of {ROLES}")
        if self.tool_call is not None and self.role != "assistant":
            raise ValueError("only an assistant message carries a tool call")
        if self.tools is not None and self.role != "system":
            raise ValueError("only a system message offers tools")
        if self.images and self.role != "observation":
            raise ValueError("only an observation carries images")
        if self.attachments and self.role != "user":
            raise ValueError("only a user message carries attached images")
        if self.reasoning and self.role != "assistant":
            raise ValueError("only an assistant message carries reasoning")
        if self.documents and self.role != "user":
            raise ValueError("only a user message is given documents")


def message_parts(message: ChatMessage) -> tuple[MessagePart, ...]:
    """A stored or finished message as the typed parts the window shows, in order: the
    reasoning, the text, the tool call (an assistant message), or the tool's result (an
    observation); the same parts a live answer's chunks gave (:class:`~glmdesk.core.parts.PartsSoFar`), so
    a reopened conversation is drawn as it was while streaming. Empty parts are left
    out. Attached images (a user message) are not parts: the view shows them apart.
    """
    if message.role == "observation":
        return (ToolResponsePart(message.name, message.content, message.images),)
    parts: list[MessagePart] = []
    if message.reasoning:
        parts.append(ReasoningPart(message.reasoning))
    if message.content:
        parts.append(TextPart(message.content))
    call = message.tool_call
    if call is not None:
        parts.append(ToolCallPart(call.name, call.arguments_json(), done=True))
    return tuple(parts)


def call_of(part: ToolCallPart) -> ToolCall:
    """The call a ``done`` :class:`ToolCallPart` names (its arguments parsed from JSON;
    the interpreter's is its code), e.g. for a reopened call's card.

    Raises:
        ValueError: when the part's arguments are not a JSON object.
    """
    try:
        arguments = json.loads(part.arguments_so_far or "{}")
    except json.JSONDecodeError as exc:
        raise ValueError(f"The call of {part.name} has arguments that are not JSON.") from exc
    if not isinstance(arguments, dict):
        raise ValueError(f"The call of {part.name} has arguments that are not an object.")
    kind = "interpreter" if part.name == INTERPRETER else "function"
    return ToolCall(part.name, arguments, kind=kind)
