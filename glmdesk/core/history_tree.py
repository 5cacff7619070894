"""Branches inside one conversation: its messages form a tree.

Each message has a parent (``StoredMessage.parent_id``; ``None`` for a first
message). Messages that share a parent are *siblings*: an edited user message is a
sibling of the one it replaces, a regenerated answer a sibling of the earlier
answer, so nothing is copied into a new conversation and nothing is lost. The
conversation remembers the leaf of the branch on screen (``conversations.active_leaf``,
see ``history_schema._v4_branches``); that branch is the path from a root to the leaf.

A parent is always written before its children, so ids grow along every path:
a branch in id order is in conversation order, and the newest message under a
message (the largest id in its subtree) is always a leaf.

:class:`Branches` is a mixin of :class:`glmdesk.core.history.History`; it uses the
history's connection and :meth:`~glmdesk.core.history.History.transaction`.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from glmdesk.core.history_errors import storage_errors
from glmdesk.core.history_io import parse_json, to_json
from glmdesk.core.history_rows import COPY_COLS, MSG_COLS, copy_params, inserted_id, to_message
from glmdesk.core.history_types import Conversation, ImportedConversation, StoredMessage
from glmdesk.core.text import storable_text

if TYPE_CHECKING:
    from glmdesk.core.history_documents import DocumentUse
    from glmdesk.core.images import ImageAttachment
    from glmdesk.core.tools import ConversationTools


class _Active:
    def __repr__(self) -> str:
        return "ACTIVE"


#: Default parent of a new message: the leaf of the branch on screen.
ACTIVE: Any = _Active()

_SUBTREE = (
    "WITH RECURSIVE sub(id) AS (SELECT ? UNION ALL "
    "SELECT m.id FROM messages m JOIN sub ON m.parent_id = sub.id) "
)
_PATH = (
    "WITH RECURSIVE up(id, parent) AS (SELECT id, parent_id FROM messages WHERE id = ? UNION ALL "
    "SELECT m.id, m.parent_id FROM messages m JOIN up ON m.id = up.parent) "
)


class Branches:
    """Tree operations of the history (a mixin; see the module docstring)."""

    _conn: sqlite3.Connection
    path: Path  # where storage errors say the file is

    # Provided by History (and conversation_tools by history_tools.ToolMessages, after
    # this class in History's bases: a stub here would hide it).
    def transaction(self) -> Any:  # pragma: no cover - overridden
        raise NotImplementedError

    def get_conversation(self, conversation_id: int) -> Conversation:  # pragma: no cover - overridden
        raise NotImplementedError

    if TYPE_CHECKING:  # provided by ToolMessages, ImageStore and DocumentUses, after this class in History's
        # bases (declared only for type checkers, so that they never hide the real methods)

        def conversation_tools(self, conversation_id: int) -> ConversationTools: ...

        def attached(self, message_id: int) -> tuple[ImageAttachment, ...]: ...

        def _store_images(self, message_id: int, images: Sequence[ImageAttachment]) -> None: ...

        def documents_used(self, message_id: int) -> tuple[DocumentUse, ...]: ...

        def _store_documents(self, message_id: int, documents: Sequence[DocumentUse]) -> None: ...

    # -- reading ----------------------------------------------------------------------
    @storage_errors
    def active_leaf(self, conversation_id: int) -> int | None:
        """Id of the last message of the branch on screen, or ``None`` for an empty conversation.

        A stored leaf that no longer exists falls back to the conversation's newest message.

        Raises:
            KeyError: for an unknown conversation.
        """
        self.get_conversation(conversation_id)
        row = self._conn.execute(
            "SELECT m.id FROM conversations c JOIN messages m ON m.id = c.active_leaf "
            "AND m.conversation_id = c.id WHERE c.id = ?",
            (conversation_id,),
        ).fetchone()
        if row is not None:
            return int(row[0])
        row = self._conn.execute(
            "SELECT max(id) FROM messages WHERE conversation_id = ?", (conversation_id,)
        ).fetchone()
        return None if row[0] is None else int(row[0])

    @storage_errors
    def messages(self, conversation_id: int) -> list[StoredMessage]:
        """Return the branch on screen, first message first (partial ones included).

        Raises:
            KeyError: for an unknown conversation.
        """
        leaf = self.active_leaf(conversation_id)
        return [] if leaf is None else self.branch(leaf)

    @storage_errors
    def branch(self, leaf_id: int) -> list[StoredMessage]:
        """Return the path from a root down to ``leaf_id`` (inclusive), in order.

        Raises:
            KeyError: for an unknown message.
        """
        rows = self._conn.execute(
            f"{_PATH}SELECT {MSG_COLS} FROM messages WHERE id IN (SELECT id FROM up) ORDER BY id",
            (leaf_id,),
        ).fetchall()
        if not rows:
            raise KeyError(f"no message {leaf_id}")
        return [to_message(row) for row in rows]

    @storage_errors
    def tree(self, conversation_id: int) -> list[StoredMessage]:
        """Return every message of every branch, in id order (parents before children).

        Raises:
            KeyError: for an unknown conversation.
        """
        self.get_conversation(conversation_id)
        rows = self._conn.execute(
            f"SELECT {MSG_COLS} FROM messages WHERE conversation_id = ? ORDER BY id", (conversation_id,)
        )
        return [to_message(row) for row in rows]

    @storage_errors
    def siblings(self, message_id: int) -> tuple[int, ...]:
        """Ids of the messages sharing ``message_id``'s parent (itself included), oldest first.

        Raises:
            KeyError: for an unknown message.
        """
        cid, parent = self._locate(message_id)
        rows = self._conn.execute(
            "SELECT id FROM messages WHERE conversation_id = ? AND parent_id IS ? ORDER BY id",
            (cid, parent),
        )
        return tuple(int(r[0]) for r in rows)

    @storage_errors
    def branch_with_siblings(self, conversation_id: int) -> list[tuple[StoredMessage, tuple[int, ...]]]:
        """The branch on screen, each message with its siblings' ids (for a "‹ 2/3 ›" switch).

        Raises:
            KeyError: for an unknown conversation.
        """
        groups: dict[int | None, list[int]] = {}
        for mid, parent in self._conn.execute(
            "SELECT id, parent_id FROM messages WHERE conversation_id = ? ORDER BY id", (conversation_id,)
        ):
            groups.setdefault(parent, []).append(int(mid))
        return [(m, tuple(groups.get(m.parent_id, [m.id]))) for m in self.messages(conversation_id)]

    @storage_errors
    def newest_leaf(self, message_id: int) -> int:
        """The newest message in ``message_id``'s subtree (a leaf; ``message_id`` itself if it has none).

        Raises:
            KeyError: for an unknown message.
        """
        self._locate(message_id)
        return int(self._conn.execute(f"{_SUBTREE}SELECT max(id) FROM sub", (message_id,)).fetchone()[0])

    # -- changing the branch on screen ---------------------------------------------------
    @storage_errors
    def switch_branch(self, message_id: int) -> int:
        """Show the branch through ``message_id``: its newest leaf becomes the active leaf.

        Used by the sibling switch and by search (a hit on another branch opens that branch).

        Returns:
            The new active leaf's id.

        Raises:
            KeyError: for an unknown message.
        """
        cid, _parent = self._locate(message_id)
        leaf = self.newest_leaf(message_id)
        self._conn.execute("UPDATE conversations SET active_leaf = ? WHERE id = ?", (leaf, cid))
        return leaf

    @storage_errors
    def resume_assistant_message(self, message_id: int) -> None:
        """Mark a finished answer ``partial`` again so that Continue can extend it.

        Checkpoint and finish it as usual afterwards, with the whole text.

        Raises:
            KeyError: if ``message_id`` is not a finished assistant message.
            ValueError: if other messages follow it (only the last answer of a branch
                can be continued).
        """
        row = self._conn.execute(
            "SELECT conversation_id FROM messages WHERE id = ? AND role = 'assistant' AND state = 'complete'",
            (message_id,),
        ).fetchone()
        if row is None:
            raise KeyError(f"no finished answer {message_id}")
        if self._conn.execute("SELECT 1 FROM messages WHERE parent_id = ?", (message_id,)).fetchone():
            raise ValueError("Only the last answer of a branch can be continued.")
        cid = int(row[0])
        with self.transaction():
            self._conn.execute("UPDATE messages SET state = 'partial' WHERE id = ?", (message_id,))
            self._conn.execute("UPDATE conversations SET active_leaf = ? WHERE id = ?", (message_id, cid))

    @storage_errors
    def delete_message(self, message_id: int) -> None:
        """Remove one message for good; its replies move up to its parent (nothing else is lost).

        When it was the active leaf, the newest leaf under its parent (or, for a first
        message, the conversation's newest message) is shown instead. Committed.

        Raises:
            KeyError: for an unknown message.
        """
        with self.transaction():
            cid, parent = self._locate(message_id)
            was_active = self.active_leaf(cid) == message_id
            self._conn.execute("UPDATE messages SET parent_id = ? WHERE parent_id = ?", (parent, message_id))
            self._conn.execute("DELETE FROM messages WHERE id = ?", (message_id,))
            if was_active:
                leaf = self.newest_leaf(parent) if parent is not None else None
                self._conn.execute("UPDATE conversations SET active_leaf = ? WHERE id = ?", (leaf, cid))

    # -- copies, export, import ------------------------------------------------------------
    @storage_errors
    def duplicate_conversation(self, conversation_id: int, title: str | None = None) -> int:
        """Copy a conversation with every branch and its Tools section; the copy is the
        newest and shows the same branch.

        Args:
            conversation_id: Source.
            title: Title of the copy; ``None`` keeps the source's.

        Returns:
            The new conversation's id.

        Raises:
            KeyError: for an unknown id.
        """
        source = self.get_conversation(conversation_id)
        active = self.active_leaf(conversation_id)
        rows = self._conn.execute(
            "SELECT id, parent_id FROM messages WHERE conversation_id = ? ORDER BY id", (conversation_id,)
        ).fetchall()
        with self.transaction():
            new_id = self._new_conversation(
                source.title if title is None else title, None, None, source.model
            )
            self._conn.execute(  # the Tools section as stored (never "always run": not stored)
                "UPDATE conversations SET tools = (SELECT tools FROM conversations WHERE id = ?) WHERE id = ?",
                (conversation_id, new_id),
            )
            ids: dict[int, int] = {}
            for old, parent in rows:
                ids[old] = inserted_id(
                    self._conn.execute(
                        f"INSERT INTO messages (conversation_id, parent_id, {COPY_COLS}) "
                        f"SELECT ?, ?, {COPY_COLS} FROM messages WHERE id = ?",
                        (new_id, ids.get(parent), old),
                    )
                )
            self._set_active(new_id, ids.get(active) if active is not None else None)
        return new_id

    @storage_errors
    def export_json(self, conversation_id: int) -> str:
        """Return the conversation as JSON: every branch, the settings per message, the
        branch on screen, the Tools section, the user messages' images embedded (lossless;
        format in :mod:`glmdesk.core.history_io`; a missing image file is left out and
        named in ``missing_images``).

        Raises:
            KeyError: for an unknown conversation.
        """
        messages = self.tree(conversation_id)
        users = [m for m in messages if m.role == "user" and m.kind == "text"]
        return to_json(
            self.get_conversation(conversation_id),
            messages,
            self.active_leaf(conversation_id),
            self.conversation_tools(conversation_id),
            {m.id: self.attached(m.id) for m in users},
            {m.id: self.documents_used(m.id) for m in users},
        )

    @storage_errors
    def import_json(self, text: str) -> int:
        """Add a conversation exported by :meth:`export_json` (any format version), in one
        transaction; return its id (:meth:`import_conversation` also says what was not taken).

        Raises:
            ValueError: when ``text`` is not a glmdesk conversation export.
        """
        return self.import_conversation(text).conversation_id

    @storage_errors
    def import_conversation(self, text: str) -> ImportedConversation:
        """Add a conversation exported by :meth:`export_json` (any format version), in one
        transaction, with its Tools section when the file has one.

        A Tools section that cannot be used does not stop the import: the conversation
        is added and the result's ``notes`` say why its section was left out (or kept
        with custom functions that do not validate; see
        :mod:`glmdesk.core.history_io_tools`).

        Raises:
            ValueError: when ``text`` is not a glmdesk conversation export.
        """
        header, items = parse_json(text)
        with self.transaction():
            cid = self._new_conversation(
                header["title"], header["created"], header["updated"], header["model"]
            )
            if header["tools"] is not None:
                self._conn.execute(
                    "UPDATE conversations SET tools = ? WHERE id = ?", (header["tools"].to_json(), cid)
                )
            ids: list[int] = []
            for item in items:
                parent = None if item["parent"] is None else ids[item["parent"]]
                cur = self._conn.execute(
                    f"INSERT INTO messages (conversation_id, parent_id, {COPY_COLS}) "
                    f"VALUES (?, ?, {', '.join('?' * len(COPY_COLS.split(', ')))})",
                    (cid, parent, *copy_params(item)),
                )
                ids.append(inserted_id(cur))
                if item["attachments"]:
                    self._store_images(ids[-1], item["attachments"])
                if item["documents"]:
                    self._store_documents(ids[-1], item["documents"])
            active = header["active"]
            self._set_active(cid, ids[active] if active is not None else (ids[-1] if ids else None))
        note = header["tools_note"]
        return ImportedConversation(cid, () if note is None else (note,))

    # -- helpers -------------------------------------------------------------------------
    def _locate(self, message_id: int) -> tuple[int, int | None]:
        row = self._conn.execute(
            "SELECT conversation_id, parent_id FROM messages WHERE id = ?", (message_id,)
        ).fetchone()
        if row is None:
            raise KeyError(f"no message {message_id}")
        return int(row[0]), (None if row[1] is None else int(row[1]))

    def _parent_for(self, conversation_id: int, parent_id: Any) -> int | None:
        """Resolve a new message's parent: :data:`ACTIVE`, ``None`` (a new root) or an id.

        Raises:
            KeyError: for a parent that is not a message of ``conversation_id``.
        """
        if parent_id is ACTIVE:
            row = self._conn.execute(
                "SELECT coalesce((SELECT m.id FROM messages m WHERE m.id = c.active_leaf "
                "AND m.conversation_id = c.id), (SELECT max(id) FROM messages WHERE conversation_id = c.id)) "
                "FROM conversations c WHERE c.id = ?",
                (conversation_id,),
            ).fetchone()
            return None if row is None or row[0] is None else int(row[0])
        if parent_id is None:
            return None
        cid, _ = self._locate(parent_id)
        if cid != conversation_id:
            raise KeyError(f"message {parent_id} is not in conversation {conversation_id}")
        return int(parent_id)

    def _set_active(self, conversation_id: int, leaf: int | None) -> None:
        self._conn.execute("UPDATE conversations SET active_leaf = ? WHERE id = ?", (leaf, conversation_id))

    def _new_conversation(
        self, title: str, created: float | None, updated: float | None, model: str | None
    ) -> int:
        now = time.time()
        cur = self._conn.execute(
            "INSERT INTO conversations (title, created, updated, model) VALUES (?, ?, ?, ?)",
            (
                storable_text(title),
                now if created is None else created,
                now if updated is None else updated,
                model,
            ),
        )
        return inserted_id(cur)
