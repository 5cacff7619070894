"""Plain values returned by :mod:`glmdesk.core.history`, and the text codec.

Text codec: SQLite stores text as UTF-8, which cannot hold a lone surrogate
(``"\\ud800"``), and FTS5 stops indexing a value at its first NUL. Message text is
therefore stored twice only when it has to be:

* ``text``: always valid, NUL-free UTF-8 (each lone surrogate and each NUL is
  replaced by U+FFFD). This is what search indexes and snippets show.
* ``text_raw``: ``NULL`` for ordinary text; otherwise the exact text encoded as
  UTF-8 with ``surrogatepass``. Loading prefers it, so every message round-trips
  exactly, NULs and lone surrogates included.

Titles are short labels and are stored clean only (U+FFFD replaces lone surrogates
and NULs). Other control characters are stored as they are.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, is_dataclass
from typing import Any

from glmdesk.core.errors import ErrorInfo
from glmdesk.core.messages import ChatMessage
from glmdesk.core.text import storable_text
from glmdesk.core.tools import ToolCall

#: Message states: ``partial`` while an answer streams (or after a crash
#: interrupted it), ``complete`` once it is finished (or for any user/system message).
STATES = ("partial", "complete")

#: Message kinds: ordinary text, an assistant's tool call, a tool's result
#: (observation) and an image a tool returned (PNG bytes).
MESSAGE_KINDS = ("text", "tool_call", "observation", "image")


class SchemaTooNewError(Exception):
    """The database was written by a newer glmdesk with a schema this one does not know."""


def encode_text(text: str) -> tuple[str, bytes | None]:
    """Split ``text`` into its stored ``(text, text_raw)`` pair (see module docstring).

    Raises:
        TypeError: if ``text`` is not a ``str``.
    """
    if not isinstance(text, str):
        raise TypeError(f"message text must be str, not {type(text).__name__}")
    clean = storable_text(text)
    if clean == text:
        return text, None
    return clean, text.encode("utf-8", "surrogatepass")


def decode_text(text: str, raw: bytes | None) -> str:
    """Inverse of :func:`encode_text`."""
    return text if raw is None else bytes(raw).decode("utf-8", "surrogatepass")


def settings_dict(settings: Any) -> dict[str, Any] | None:
    """Turn sampling settings (a dataclass such as ``SamplingParams``, or a mapping) into a dict.

    Raises:
        TypeError: for any other type.
    """
    if settings is None:
        return None
    if is_dataclass(settings) and not isinstance(settings, type):
        return asdict(settings)
    if isinstance(settings, Mapping):
        return dict(settings)
    raise TypeError(f"settings must be a dataclass or a mapping, not {type(settings).__name__}")


#: The plain number fields of :class:`GenerationStats` stored since the first schema.
STAT_NAMES = ("ttft_s", "tokens_per_s", "n_tokens", "prompt_tokens", "dropped_tokens")


@dataclass(frozen=True)
class GenerationStats:
    """Statistics of one generated answer, saved with it.

    Attributes:
        ttft_s: Time from the request to the first token, in s.
        tokens_per_s: Decode speed after the first token, in tokens/s.
        n_tokens: Tokens generated, in tokens.
        prompt_tokens: Tokens in the fitted prompt, in tokens.
        dropped_tokens: Tokens left out of (or evicted from) the context, in tokens.
        dropped_messages: Indices of earlier messages left out of the prompt to fit
            the context window.
        answer_ttft_s: For an answer that thought first: time from the request to the
            first answer token, in s (``ttft_s`` is then the first reasoning token's).
        reasoning_tokens: For an answer that thought first: tokens spent thinking.

    Raises:
        ValueError: for a negative or non-finite number.
    """

    ttft_s: float | None = None
    tokens_per_s: float | None = None
    n_tokens: int | None = None
    prompt_tokens: int | None = None
    dropped_tokens: int | None = None
    dropped_messages: tuple[int, ...] = ()
    answer_ttft_s: float | None = None
    reasoning_tokens: int | None = None

    def __post_init__(self) -> None:
        for name in (*STAT_NAMES, "answer_ttft_s", "reasoning_tokens"):
            value = getattr(self, name)
            if value is not None and (not math.isfinite(value) or value < 0):
                raise ValueError(f"{name} must be a finite number of 0 or more, not {value!r}.")
        object.__setattr__(self, "dropped_messages", tuple(int(i) for i in self.dropped_messages))


@dataclass(frozen=True)
class Conversation:
    """One conversation's header.

    Attributes:
        id: Database id.
        title: Title (may be empty: the UI then shows "Untitled").
        created: Creation time, in s since the Unix epoch (UTC).
        updated: Time of the last message change, in s since the Unix epoch.
        model: Model last used in it, or ``None``.
        deleted: Time it was moved to the bin, in s since the epoch, or ``None``.
    """

    id: int
    title: str
    created: float
    updated: float
    model: str | None = None
    deleted: float | None = None


@dataclass(frozen=True)
class StoredMessage:
    """One saved message with what produced it.

    Attributes:
        id: Database id (increases in conversation order).
        conversation_id: Conversation it belongs to.
        role: ``system``, ``user`` or ``assistant``.
        text: Exact text.
        created: Creation time, in s since the Unix epoch.
        updated: Time of the last checkpoint or finish, in s since the epoch.
        state: ``partial`` (streaming, or interrupted by a crash) or ``complete``.
        finish_reason: One of :data:`FINISH_REASONS` for a finished answer, else ``None``.
        model: Model that wrote it, or ``None``.
        settings: Sampling settings used, as a dict, or ``None``.
        stats: Generation statistics (all ``None`` for user messages).
        kind: One of :data:`MESSAGE_KINDS` (``role`` is ``observation`` for the
            ``observation`` and ``image`` kinds).
        tool_call: For kind ``tool_call``: the call (``text`` is what was shown before it).
        tool_name: For kinds ``observation`` and ``image``: the tool that returned it.
        image: For kind ``image``: the PNG file's bytes.
        parent_id: The message this one answers or follows (``None`` for the first
            message of a branch); messages with the same parent are siblings
            (see :mod:`glmdesk.core.history_tree`).
        reasoning: For an answer: what the model wrote while thinking (GLM-Z1's
            ``<think>`` block, markers left out), ``""`` when none.
    """

    id: int
    conversation_id: int
    role: str
    text: str
    created: float
    updated: float
    state: str = "complete"
    finish_reason: str | None = None
    model: str | None = None
    settings: dict[str, Any] | None = None
    stats: GenerationStats = field(default_factory=GenerationStats)
    kind: str = "text"
    tool_call: ToolCall | None = None
    tool_name: str = ""
    image: bytes | None = None
    parent_id: int | None = None
    reasoning: str = ""

    @property
    def complete(self) -> bool:
        """True once the message is finished (always true for user and system messages)."""
        return self.state == "complete"

    def to_chat_message(self) -> ChatMessage:
        """This message as the engine's :class:`ChatMessage` (an image has none: its
        observation already says ``[Image]``; see :meth:`History.chat_messages`)."""
        if self.kind == "tool_call":
            return ChatMessage("assistant", self.text, tool_call=self.tool_call, reasoning=self.reasoning)
        if self.kind == "observation":
            return ChatMessage("observation", self.text, name=self.tool_name)
        if self.role == "assistant":
            return ChatMessage("assistant", self.text, reasoning=self.reasoning)
        return ChatMessage(self.role, self.text)


@dataclass(frozen=True)
class SearchHit:
    """One message matching a search.

    Attributes:
        conversation_id: Conversation of the message.
        conversation_title: Its title.
        message_id: The matching message.
        role: Role of the message.
        snippet: A short excerpt around the first match (clean text, one line).
        spans: ``(start, end)`` character offsets into ``snippet`` of every match, sorted.
    """

    conversation_id: int
    conversation_title: str
    message_id: int
    role: str
    snippet: str
    spans: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True)
class ImportedConversation:
    """What importing an exported conversation gave.

    Attributes:
        conversation_id: The new conversation's id.
        notes: What the file held that could not be taken as it is, one
            :class:`~glmdesk.core.errors.ErrorInfo` each (``import_tools_invalid``: its
            Tools section); empty when everything was imported.
    """

    conversation_id: int
    notes: tuple[ErrorInfo, ...] = ()
