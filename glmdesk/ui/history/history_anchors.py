"""Where the next message goes, and what of a round is stored (the history controller's).

Plain data and two lookups on a :class:`~glmdesk.core.history.History`, run when a
write runs on the history writer's thread (:mod:`glmdesk.ui.history.history_recorder`):
an *anchor* names the parent of the next message saved; :func:`parent_of` turns it
into a stored message id from what the writes before it stored.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from glmdesk.core.history import History
from glmdesk.core.history_rounds import save_round
from glmdesk.core.history_tree import ACTIVE
from glmdesk.core.history_types import StoredMessage
from glmdesk.core.parts import PartsSoFar


class _SiblingOfLastAnswer:
    """Anchor after Regenerate: the parent of the branch's last answer, looked up when
    the new answer is written (the old one may still wait in the retry queue)."""

    def __repr__(self) -> str:
        return "SIBLING_OF_LAST_ANSWER"


SIBLING_OF_LAST_ANSWER: Any = _SiblingOfLastAnswer()


@dataclasses.dataclass(frozen=True)
class Rewound:
    """Anchor after an edit or regeneration of the message shown at ``index``: its parent,
    looked up when the next message is written (after the writes before it)."""

    index: int


@dataclasses.dataclass
class ConversationRef:
    """A conversation whose id is ``None`` until its first round is stored."""

    id: int | None = None


@dataclasses.dataclass
class Answer:
    """The answer being written: where it goes and what of its round is stored."""

    conv: ConversationRef
    settings: dict[str, Any]
    anchor: Any = ACTIVE  # parent of the first message of this round (an anchor, see above)
    message_id: int | None = None  # the stored ``partial`` row, once its round began in the file
    unsaved_user: str | None = None  # the question, until its round begins in the file
    unsaved_images: tuple = ()  # its images (ImageAttachment), stored with it
    parts: PartsSoFar = dataclasses.field(default_factory=PartsSoFar)  # its typed parts so far


def shown(history: History, conversation_id: int) -> list[tuple[StoredMessage, tuple[int, ...]]]:
    """The stored messages as the chat shows them (no system messages, no images, no
    empty answers), each with its siblings' ids."""
    return [
        (m, s)
        for m, s in history.branch_with_siblings(conversation_id)
        if m.role != "system"
        and m.kind != "image"
        and not (m.kind == "text" and m.role == "assistant" and m.text == "")
    ]


def parent_of(history: History, conversation_id: int | None, anchor: Any) -> Any:
    """The stored parent an anchor stands for, when the write runs (on the writer's history)."""
    if anchor is SIBLING_OF_LAST_ANSWER:
        stored = history.messages(conversation_id) if conversation_id is not None else []
        return stored[-1].parent_id if stored and stored[-1].role == "assistant" else ACTIVE
    if isinstance(anchor, Rewound):
        on_screen = shown(history, conversation_id) if conversation_id is not None else []
        if not 0 <= anchor.index < len(on_screen):
            return ACTIVE
        return on_screen[anchor.index - 1][0].id if anchor.index > 0 else on_screen[0][0].parent_id
    return anchor


def save_whole_round(
    h: History,
    conv: ConversationRef,
    user,
    text,
    reason,
    stats,
    settings,
    anchor,
    model,
    reasoning: str = "",
    attachments: tuple = (),
) -> None:
    """Store a round whose start is not in the file yet, whole, in one transaction (on the
    writer thread): ``user`` (the question with its images, ``attachments``, or ``None``
    for an answer alone) and the answer ``text`` with its ``reasoning`` under ``anchor``;
    a new conversation gets its id in ``conv``."""
    conv.id = save_round(
        h,
        conv.id,
        user,
        text,
        finish_reason=reason,
        stats=stats,
        model=model,
        settings=settings,
        parent_id=parent_of(h, conv.id, anchor),
        reasoning=reasoning,
        attachments=attachments if user is not None else (),
    )
