"""Chat messages as plain values."""

from __future__ import annotations

from dataclasses import dataclass

#: Why an answer ended: the engine's chunks and history's stored answers share this list.
FINISH_REASONS = ("stop", "length", "cancelled", "error")

ROLES = ("system", "user", "assistant")


@dataclass(frozen=True)
class ChatMessage:
    """One message of a conversation.

    Attributes:
        role: ``"system"``, ``"user"`` or ``"assistant"``.
        content: The text, exactly as typed or generated.

    Raises:
        ValueError: for an unknown role.
    """

    role: str
    content: str

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"unknown role {self.role!r}; expected one of {ROLES}")
