"""Messages of the history: append, stream an answer in, read back (mixed into :class:`History`).

An answer is stored in three steps: :meth:`MessageStore.begin_assistant_message`
inserts an empty ``partial`` message, :meth:`MessageStore.checkpoint_partial`
saves the text so far every few seconds, and
:meth:`MessageStore.finish_assistant_message` saves it once, complete (the call
sequence is in :mod:`glmdesk.core.history`). Finished messages of any role go in
with :meth:`MessageStore.add_message`; tool calls and observations with
:class:`~glmdesk.core.history_tools.ToolMessages`.
"""

from __future__ import annotations

import dataclasses
import sqlite3
import time
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from glmdesk.core.history_documents import DocumentUse
from glmdesk.core.history_errors import storage_errors
from glmdesk.core.history_rows import (
    MSG_COLS,
    STATS_ASSIGN,
    auto_title,
    db_role,
    inserted_id,
    kind_params,
    reasoning_param,
    settings_json,
    stats_params,
    to_message,
)
from glmdesk.core.history_tree import ACTIVE
from glmdesk.core.history_types import GenerationStats, StoredMessage, encode_text
from glmdesk.core.images import ImageAttachment
from glmdesk.core.messages import FINISH_REASONS, ROLES, ChatMessage
from glmdesk.core.tools import ToolCall


class MessageStore:
    """The message methods of :class:`~glmdesk.core.history.History` (a mixin: needs its
    connection ``_conn``, ``transaction`` and, from
    :class:`~glmdesk.core.history_tree.Branches`, ``messages`` and ``_parent_for``)."""

    _conn: sqlite3.Connection

    if TYPE_CHECKING:  # provided by History and Branches (declared only for type checkers,
        # so that they never shadow the real methods in History's method order)

        def transaction(self) -> AbstractContextManager[None]: ...

        def messages(self, conversation_id: int) -> list[StoredMessage]: ...

        def _parent_for(self, conversation_id: int, parent_id: Any) -> int | None: ...

        def attached(self, message_id: int) -> tuple[ImageAttachment, ...]: ...

        def _store_images(self, message_id: int, images: Sequence[ImageAttachment]) -> None: ...

        def documents_used(self, message_id: int) -> tuple[DocumentUse, ...]: ...

        def _store_documents(self, message_id: int, documents: Sequence[DocumentUse]) -> None: ...

    @storage_errors
    def add_message(
        self,
        conversation_id: int,
        role: str,
        text: str,
        *,
        model: str | None = None,
        settings: Any = None,
        finish_reason: str | None = None,
        stats: GenerationStats | None = None,
        parent_id: Any = ACTIVE,
        attachments: Sequence[ImageAttachment | DocumentUse] = (),
        reasoning: str = "",
    ) -> int:
        """Append a finished message and commit it; return its id. It becomes the active leaf.

        The first user message of an untitled conversation becomes its title (first
        line, at most 60 characters).

        Args:
            conversation_id: Conversation to append to.
            role: ``system``, ``user``, ``assistant`` or ``observation`` (a tool's
                result; :meth:`add_observation` also names the tool).
            text: Exact text (any ``str``: NULs and lone surrogates round-trip).
            model: Model that wrote it (assistant messages).
            settings: Sampling settings used: a dataclass (``SamplingParams``) or a
                JSON-serialisable mapping.
            finish_reason: For assistant messages, one of ``stop``, ``length``,
                ``cancelled``, ``error``.
            stats: Generation statistics.
            parent_id: The message it follows: :data:`ACTIVE` (the end of the branch on
                screen), another message of the conversation (an edit makes a sibling of
                the edited message), or ``None`` (a new first message).
            attachments: For a user message, its images (each file stored once by its
                content hash, see :mod:`glmdesk.core.history_images`) and the documents it
                was given (:class:`~glmdesk.core.history_documents.DocumentUse`, by path).
            reasoning: For an assistant message, what the model wrote while thinking.

        Raises:
            KeyError: for an unknown conversation or a parent not in it.
            ValueError: for an unknown role or finish reason.
            TypeError: for text that is not a ``str`` or settings that are not JSON.
        """
        if role not in ROLES:
            raise ValueError(f"unknown role {role!r}; expected one of {ROLES}")
        kind = "observation" if role == "observation" else "text"
        with self.transaction():
            mid = self._insert(
                conversation_id,
                role,
                text,
                "complete",
                model,
                settings,
                kind_params(kind, None, "", None),
                parent_id,
            )
            self._finish_fields(mid, finish_reason, stats)
            self._store_extras(conversation_id, mid, role, text, reasoning, attachments)
        return mid

    def _store_extras(
        self,
        conversation_id: int,
        mid: int,
        role: str,
        text: str,
        reasoning: str,
        attachments: Sequence[ImageAttachment | DocumentUse],
    ) -> None:
        """In :meth:`add_message`'s transaction: an answer's reasoning, a message's images,
        and a first question as the untitled conversation's title."""
        if reasoning and role == "assistant":
            self._conn.execute(
                "UPDATE messages SET reasoning = ? WHERE id = ?", (reasoning_param(reasoning), mid)
            )
        images = [a for a in attachments if not isinstance(a, DocumentUse)]
        documents = [a for a in attachments if isinstance(a, DocumentUse)]
        if images:
            self._store_images(mid, images)
        if documents and role == "user":
            self._store_documents(mid, documents)
        if role == "user":
            self._conn.execute(
                "UPDATE conversations SET title = ? WHERE id = ? AND title = ''",
                (auto_title(text), conversation_id),
            )

    @storage_errors
    def begin_assistant_message(
        self, conversation_id: int, *, model: str | None = None, settings: Any = None, parent_id: Any = ACTIVE
    ) -> int:
        """Insert an empty ``partial`` assistant message, commit, and return its id.

        ``parent_id`` as in :meth:`add_message`: Regenerate passes the user message, so
        the new answer becomes a sibling of the earlier ones.

        Raises:
            KeyError: for an unknown conversation or a parent not in it.
            TypeError: for settings that are neither a dataclass nor a mapping.
        """
        with self.transaction():
            return self._insert(
                conversation_id, "assistant", "", "partial", model, settings, parent_id=parent_id
            )

    @storage_errors
    def checkpoint_partial(self, message_id: int, text: str, reasoning: str = "") -> None:
        """Save the answer so far and its reasoning so far (one UPDATE, committed). Call
        at most every few seconds.

        Raises:
            KeyError: if ``message_id`` is not a ``partial`` message (unknown or finished).
        """
        stored, raw = encode_text(text)
        cur = self._conn.execute(
            "UPDATE messages SET text = ?, text_raw = ?, reasoning = ?, updated = ? "
            "WHERE id = ? AND state = 'partial'",
            (stored, raw, reasoning_param(reasoning), time.time(), message_id),
        )
        if cur.rowcount == 0:
            raise KeyError(f"no partial message {message_id}")

    @storage_errors
    def finish_assistant_message(
        self,
        message_id: int,
        text: str,
        finish_reason: str,
        *,
        stats: GenerationStats | None = None,
        settings: Any = None,
        model: str | None = None,
        tool_call: ToolCall | None = None,
        reasoning: str = "",
    ) -> None:
        """Save the final answer once, with its reasoning, mark it ``complete`` and commit.

        Args:
            message_id: From :meth:`begin_assistant_message`.
            text: The whole answer (for ``cancelled`` or ``error``, the text so far).
            finish_reason: ``stop``, ``length``, ``cancelled`` or ``error``.
            stats: Generation statistics.
            settings: Replaces the settings given at the start (if the user moved a
                slider mid-answer, pass the last ones); ``None`` keeps them.
            model: Replaces the model given at the start; ``None`` keeps it.
            tool_call: The call the answer ended with (``finish_reason`` ``tool_calls``):
                the message becomes a tool-call message, ``text`` what was shown before it.
            reasoning: What the model wrote while thinking (``""``: none).

        Raises:
            KeyError: if ``message_id`` is not a ``partial`` message.
            ValueError: for an unknown finish reason.
        """
        if finish_reason not in FINISH_REASONS:
            raise ValueError(f"unknown finish reason {finish_reason!r}; expected one of {FINISH_REASONS}")
        stored, raw = encode_text(text)
        now = time.time()
        with self.transaction():
            cur = self._conn.execute(
                "UPDATE messages SET text = ?, text_raw = ?, reasoning = ?, updated = ?, state = 'complete', "
                "settings = coalesce(?, settings), model = coalesce(?, model) "
                "WHERE id = ? AND state = 'partial'",
                (stored, raw, reasoning_param(reasoning), now, settings_json(settings), model, message_id),
            )
            if cur.rowcount == 0:
                raise KeyError(f"no partial message {message_id}")
            self._finish_fields(message_id, finish_reason, stats)
            if tool_call is not None:
                kind, tool, _ = kind_params("tool_call", tool_call, "", None)
                self._conn.execute(
                    "UPDATE messages SET kind = ?, tool = ? WHERE id = ?", (kind, tool, message_id)
                )
            self._conn.execute(
                "UPDATE conversations SET updated = ? WHERE id = "
                "(SELECT conversation_id FROM messages WHERE id = ?)",
                (now, message_id),
            )

    @storage_errors
    def get_message(self, message_id: int) -> StoredMessage:
        """Return one message.

        Raises:
            KeyError: for an unknown id.
        """
        row = self._conn.execute(f"SELECT {MSG_COLS} FROM messages WHERE id = ?", (message_id,)).fetchone()
        if row is None:
            raise KeyError(f"no message {message_id}")
        return to_message(row)

    @storage_errors
    def chat_messages(self, conversation_id: int) -> list[ChatMessage]:
        """Return the conversation as the engine's messages, to continue it.

        Empty assistant messages (an answer that failed or is just starting) are
        left out, tool calls kept; an image is not a message of its own: its PNG bytes
        ride on the observation before it (``ChatMessage.images``; the observation's
        text says ``[Image]`` to the model); an interrupted partial answer is kept as
        the user saw it; a user message's images ride on it (``ChatMessage.attachments``;
        a missing or damaged file is left out and named in ``missing_images``).

        Raises:
            KeyError: for an unknown conversation.
        """
        out: list[ChatMessage] = []
        for m in self.messages(conversation_id):
            if m.kind == "image":
                if out and out[-1].role == "observation" and m.image:
                    out[-1] = dataclasses.replace(out[-1], images=out[-1].images + (m.image,))
            elif m.kind == "text" and m.role == "user":
                out.append(
                    dataclasses.replace(
                        m.to_chat_message(),
                        attachments=self.attached(m.id),
                        documents=self.documents_used(m.id),
                    )
                )
            elif not (m.kind == "text" and m.role == "assistant" and m.text == ""):
                out.append(m.to_chat_message())
        return out

    @storage_errors
    def partial_messages(self) -> list[StoredMessage]:
        """Assistant messages left ``partial`` (a crash interrupted them), oldest first."""
        rows = self._conn.execute(f"SELECT {MSG_COLS} FROM messages WHERE state = 'partial' ORDER BY id")
        return [to_message(row) for row in rows]

    def _insert(
        self,
        conversation_id: int,
        role: str,
        text: str,
        state: str,
        model: str | None,
        settings: Any,
        extra: tuple[Any, ...] = ("text", None, None),
        parent_id: Any = ACTIVE,
    ) -> int:
        stored, raw = encode_text(text)
        now = time.time()
        parent = self._parent_for(conversation_id, parent_id)
        try:
            cur = self._conn.execute(
                "INSERT INTO messages (conversation_id, role, text, text_raw, created, updated, state, "
                "model, settings, kind, tool, data, parent_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    conversation_id, db_role(role, extra[0]), stored, raw, now, now, state, model,
                    settings_json(settings), *extra, parent,
                ),
            )  # fmt: skip
        except sqlite3.IntegrityError as exc:
            raise KeyError(f"no conversation {conversation_id}") from exc
        mid = inserted_id(cur)
        self._conn.execute(
            "UPDATE conversations SET updated = ?, model = coalesce(?, model), active_leaf = ? WHERE id = ?",
            (now, model, mid, conversation_id),
        )
        return mid

    def _finish_fields(
        self, message_id: int, finish_reason: str | None, stats: GenerationStats | None
    ) -> None:
        if finish_reason is not None and finish_reason not in FINISH_REASONS:
            raise ValueError(f"unknown finish reason {finish_reason!r}; expected one of {FINISH_REASONS}")
        params = (*stats_params(finish_reason, stats), message_id)
        self._conn.execute(f"UPDATE messages SET {STATS_ASSIGN} WHERE id = ?", params)
