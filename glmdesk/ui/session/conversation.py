"""The open conversation as plain values: messages plus what produced each answer.

The window keeps one :class:`ChatState`; the history panel (wired by the window's
owner) saves from the window's ``message_added`` signal. No Qt here.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from glmdesk.core.errors import ErrorInfo
from glmdesk.core.messages import ChatMessage
from glmdesk.core.settings import SamplingParams
from glmdesk.core.tools import ToolSet


@dataclass(frozen=True)
class AnswerRecord:
    """What produced one assistant message.

    Attributes:
        finish_reason: ``stop``, ``length``, ``cancelled``, ``error`` or ``tool_calls``.
        model: Name of the model that wrote it.
        params: Sampling parameters in force when it finished.
        ttft_s: Time to first token, in s (for an answer that thought first, its
            first reasoning token).
        answer_ttft_s: For an answer that thought first: time to its first answer
            token, in s; 0 otherwise.
        reasoning_tokens: Tokens spent thinking before the answer, in tokens.
        tokens_per_s: Decode speed after the first token, in tokens/s.
        n_tokens: Tokens generated, in tokens.
        prompt_tokens: Tokens in the fitted prompt, in tokens.
        dropped_messages: Indices into :attr:`ChatState.messages` of messages left out
            of the prompt to fit the context window.
        error: The error that ended it, if any.
        notice: A note about it (a call shown as text, the tool-round limit), if any.
    """

    finish_reason: str
    model: str = ""
    params: SamplingParams | None = None
    ttft_s: float = 0.0
    answer_ttft_s: float = 0.0
    reasoning_tokens: int = 0
    tokens_per_s: float = 0.0
    n_tokens: int = 0
    prompt_tokens: int = 0
    dropped_messages: tuple[int, ...] = ()
    error: ErrorInfo | None = None
    notice: ErrorInfo | None = None


def continued_answer(
    before: str, old: AnswerRecord | None, new_text: str, new: AnswerRecord
) -> tuple[str, AnswerRecord]:
    """The whole answer after Continue: ``before + new_text`` and its record (the new
    finish reason, tokens counted over both parts, the continuation's speed and TTFT).
    When nothing new was written, the old record stays (so it can be continued again)."""
    if not new_text and new.error is None and old is not None:
        return before, old
    n_before = old.n_tokens if old is not None else 0
    return before + new_text, replace(new, n_tokens=n_before + new.n_tokens)


class ChatState:
    """User and assistant messages in order, each assistant message with its record."""

    def __init__(self) -> None:
        self.messages: list[ChatMessage] = []
        self.records: list[AnswerRecord | None] = []

    def __len__(self) -> int:
        return len(self.messages)

    def add(self, message: ChatMessage, record: AnswerRecord | None = None) -> int:
        """Append a message; return its index."""
        self.messages.append(message)
        self.records.append(record)
        return len(self.messages) - 1

    def pop(self) -> ChatMessage:
        """Remove and return the newest message.

        Raises:
            IndexError: when there are no messages.
        """
        self.records.pop()
        return self.messages.pop()

    def clear(self) -> None:
        """Remove every message."""
        self.messages.clear()
        self.records.clear()

    def continuable(self) -> bool:
        """True when the newest message is an answer cut by the length limit (Continue)."""
        last = self.records[-1] if self.records else None
        return last is not None and last.finish_reason == "length" and self.messages[-1].tool_call is None

    def last_role(self) -> str | None:
        """Role of the newest message, or ``None``."""
        return self.messages[-1].role if self.messages else None

    def request(
        self, system_prompt: str, tools: ToolSet | None = None
    ) -> tuple[tuple[ChatMessage, ...], int]:
        """The messages to send: the system prompt (when not blank, or when ``tools`` are
        offered: they ride on it) and the conversation.

        The messages are sent exactly as stored; the engine makes text the tokenizer
        cannot encode (lone surrogates) encodable.

        Returns:
            ``(messages, offset)``: ``offset`` is 1 when a system message leads, so
            ``request index - offset`` is the index into :attr:`messages`.
        """
        if tools:
            head: tuple[ChatMessage, ...] = (ChatMessage("system", system_prompt.strip(), tools=tools),)
        else:
            head = (ChatMessage("system", system_prompt),) if system_prompt.strip() else ()
        body = tuple(self.messages)
        return head + body, len(head)
