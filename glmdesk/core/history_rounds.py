"""A round (the user's message and its answer) is stored whole or not at all.

Two ways to store a round, each one transaction on :class:`History`:

- :func:`begin_round` when the answer starts: the conversation (if new), the user
  message and the empty ``partial`` answer; checkpoints and
  :meth:`History.finish_assistant_message` complete it.
- :func:`save_round` when that failed (a full disk): the whole finished round at
  once, retried until it succeeds, so a question is never missing before its answer.

Both raise :class:`~glmdesk.core.history_errors.HistoryError` with nothing stored.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from glmdesk.core.history import History
from glmdesk.core.history_tree import ACTIVE
from glmdesk.core.history_types import GenerationStats
from glmdesk.core.images import ImageAttachment


def begin_round(
    history: History,
    conversation_id: int | None,
    user_text: str,
    *,
    model: str | None = None,
    settings: Any = None,
    parent_id: Any = ACTIVE,
    attachments: Sequence[ImageAttachment] = (),
) -> tuple[int, int]:
    """Store the user's message (with its images) and an empty ``partial`` answer in one
    transaction.

    Args:
        history: The open history.
        conversation_id: Conversation to continue, or ``None`` to create one.
        user_text: The user's message, verbatim.
        model: Model that will answer.
        settings: Sampling settings of the answer (dataclass or mapping).
        parent_id: The message the question follows (see :meth:`History.add_message`;
            an edited question is a sibling of the one it replaces).

    Returns:
        ``(conversation_id, assistant message id)``.

    Raises:
        HistoryError: when SQLite fails; nothing of the round is stored.
        KeyError: for an unknown conversation or a parent not in it.
    """
    with history.transaction():
        if conversation_id is None:
            conversation_id = history.create_conversation(model=model)
        history.add_message(conversation_id, "user", user_text, parent_id=parent_id, attachments=attachments)
        mid = history.begin_assistant_message(conversation_id, model=model, settings=settings)
    return conversation_id, mid


def save_round(
    history: History,
    conversation_id: int | None,
    user_text: str | None,
    answer: str | None,
    *,
    finish_reason: str = "stop",
    stats: GenerationStats | None = None,
    model: str | None = None,
    settings: Any = None,
    parent_id: Any = ACTIVE,
    reasoning: str = "",
    attachments: Sequence[ImageAttachment] = (),
) -> int:
    """Store a finished round in one transaction; return its conversation's id.

    Args:
        history: The open history.
        conversation_id: Conversation to continue, or ``None`` to create one.
        user_text: The user's message; ``None`` when it is stored already (Regenerate).
        answer: The answer's text; ``None`` or empty when there is none (stopped before
            its first token), then only the user's message is stored.
        finish_reason: ``stop``, ``length``, ``cancelled`` or ``error``.
        stats: Generation statistics.
        model: Model that answered.
        settings: Sampling settings (dataclass or mapping).
        parent_id: The message the first one stored follows (the question, or the
            answer when ``user_text`` is ``None``; see :meth:`History.add_message`).
        reasoning: What the model wrote while thinking, stored with the answer.
        attachments: The question's images (with ``user_text``; their files stored once
            by content hash, as :func:`begin_round` does).

    Raises:
        HistoryError: when SQLite or an image file's write fails (a full disk);
            nothing of the round is stored.
        KeyError: for an unknown conversation or a parent not in it.
        ValueError: for an unknown finish reason.
    """
    with history.transaction():
        if conversation_id is None:
            conversation_id = history.create_conversation(model=model)
        if user_text is not None:
            history.add_message(
                conversation_id, "user", user_text, parent_id=parent_id, attachments=attachments
            )
            parent_id = ACTIVE
        if answer:
            history.add_message(
                conversation_id,
                "assistant",
                answer,
                model=model,
                settings=settings,
                finish_reason=finish_reason,
                stats=stats,
                parent_id=parent_id,
                reasoning=reasoning,
            )
    return conversation_id
