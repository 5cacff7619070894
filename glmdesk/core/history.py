"""Chat history in one SQLite database: conversations, messages, search, export.

Plain Python (stdlib ``sqlite3``), no Qt. One file, ``paths.data_dir() /
"history.sqlite3"`` by default, created owner-only (0600), in WAL mode with
``synchronous=FULL``, schema version in ``PRAGMA user_version`` (see
:mod:`glmdesk.core.history_schema`).

Threads: the database is opened by one owner, the GUI thread; the worker thread
never touches it. The connection keeps sqlite3's ``check_same_thread=True``, so a
call from any other thread raises :class:`sqlite3.ProgrammingError`. The worker
sends chunks to the GUI thread, which saves them.

Every write method commits before it returns (unless inside :meth:`History.transaction`).

Call sequence for one answer (all on the GUI thread)::

    cid = history.create_conversation(model=name)          # or an existing id
    history.add_message(cid, "user", prompt)                # committed before generation
    prompt_messages = history.chat_messages(cid)            # -> engine request
    mid = history.begin_assistant_message(cid, model=name, settings=params)
    # while chunks arrive, at most every few seconds (e.g. a 2 s QTimer):
    history.checkpoint_partial(mid, text_so_far)            # one cheap UPDATE
    # exactly once, when the answer finishes, is stopped or fails:
    history.finish_assistant_message(mid, text, finish_reason,
                                     stats=GenerationStats(ttft_s=..., tokens_per_s=...))

A crash between checkpoints loses at most the text since the last checkpoint; the
message then stays ``state == "partial"`` (``StoredMessage.complete`` is false)
with the text of the last checkpoint. Switching or deleting a conversation
mid-answer: stop the stream, then finish the message with its own ``mid``; ids
never depend on which conversation is shown.
"""

from __future__ import annotations

import dataclasses
import os
import sqlite3
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from glmdesk.core import paths
from glmdesk.core.history_errors import open_checked, storage_errors
from glmdesk.core.history_io import to_markdown
from glmdesk.core.history_rows import (
    CONV_COLS,
    MSG_COLS,
    STATS_ASSIGN,
    auto_title,
    db_role,
    kind_params,
    settings_json,
    stats_params,
    to_conversation,
    to_message,
)
from glmdesk.core.history_schema import DB_NAME, connect
from glmdesk.core.history_search import search as _search
from glmdesk.core.history_tools import ToolMessages
from glmdesk.core.history_tree import ACTIVE, Branches
from glmdesk.core.history_types import (
    Conversation,
    GenerationStats,
    SearchHit,
    StoredMessage,
    encode_text,
)
from glmdesk.core.messages import FINISH_REASONS, ROLES, ChatMessage
from glmdesk.core.text import storable_text
from glmdesk.core.tools import ToolCall


class History(Branches, ToolMessages):
    """The chat history database (see the module docstring for threads and call order).

    Messages form a tree per conversation (branches; see :mod:`glmdesk.core.history_tree`):
    a new message follows the branch on screen unless ``parent_id`` says otherwise.

    Args:
        path: Database file; ``None`` for ``paths.data_dir() / "history.sqlite3"``;
            ``":memory:"`` for a throwaway database.

    Attributes:
        set_aside: Where a damaged file found at open was moved (``PRAGMA quick_check``
            failed; a new, empty history was started in its place), else ``None``.

    Every method turns :class:`sqlite3.Error` into
    :class:`~glmdesk.core.history_errors.HistoryError` (disk full, damaged, other);
    a failed write leaves nothing of its transaction behind.

    Raises:
        OSError: when the file cannot be created, or a damaged one cannot be renamed.
        SchemaTooNewError: for a database written by a newer glmdesk.
        sqlite3.Error: when the file cannot be opened for reasons other than damage.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path) if path is not None else paths.data_dir() / DB_NAME
        self._conn, self.set_aside = open_checked(path if path is not None else self.path, connect)
        self._depth = 0

    # -- connection -----------------------------------------------------------------
    def close(self) -> None:
        """Close the connection (idempotent); the object is unusable afterwards."""
        self._conn.close()

    def __enter__(self) -> History:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def connection(self) -> sqlite3.Connection:
        """The raw connection (tests, benchmarks and maintenance only)."""
        return self._conn

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Group writes into one transaction, committed at the end (nestable).

        On any exception, or when the commit itself fails (a full disk), the whole
        transaction is rolled back.

        Raises:
            HistoryError: when SQLite fails (disk full, damaged file, lock held for 5 s).
        """
        outer = self._depth == 0
        if outer:
            self._execute_tx("BEGIN IMMEDIATE")
        self._depth += 1
        try:
            yield
        except BaseException:
            self._depth -= 1
            if outer:
                self._rollback()
            raise
        self._depth -= 1
        if outer:
            self._execute_tx("COMMIT")

    @storage_errors
    def _execute_tx(self, statement: str) -> None:
        try:
            self._conn.execute(statement)
        except BaseException:
            self._rollback()
            raise

    def _rollback(self) -> None:
        if self._conn.in_transaction:  # SQLite may have rolled back already (SQLITE_FULL)
            try:
                self._conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass

    # -- conversations ---------------------------------------------------------------
    @storage_errors
    def create_conversation(self, title: str = "", model: str | None = None) -> int:
        """Create an empty conversation and return its id.

        Args:
            title: Title; empty means "use the first user message".
            model: Model it starts with, or ``None``.
        """
        now = time.time()
        cur = self._conn.execute(
            "INSERT INTO conversations (title, created, updated, model) VALUES (?, ?, ?, ?)",
            (storable_text(title), now, now, model),
        )
        return int(cur.lastrowid)

    @storage_errors
    def get_conversation(self, conversation_id: int) -> Conversation:
        """Return a conversation's header (also while it is in the bin).

        Raises:
            KeyError: for an unknown id.
        """
        row = self._conn.execute(
            f"SELECT {CONV_COLS} FROM conversations WHERE id = ?", (conversation_id,)
        ).fetchone()
        if row is None:
            raise KeyError(f"no conversation {conversation_id}")
        return to_conversation(row)

    @storage_errors
    def list_conversations(
        self, limit: int | None = None, *, after: tuple[float, int] | None = None
    ) -> list[Conversation]:
        """Return live conversations, most recently updated first.

        Args:
            limit: Most rows returned; ``None`` for all.
            after: ``(updated, id)`` of the last row of the previous page (keyset paging).
        """
        where, params = "deleted IS NULL", []
        if after is not None:
            where += " AND (updated, id) < (?, ?)"
            params += list(after)
        params.append(-1 if limit is None else limit)
        sql = f"SELECT {CONV_COLS} FROM conversations WHERE {where} ORDER BY updated DESC, id DESC LIMIT ?"
        return [to_conversation(row) for row in self._conn.execute(sql, params)]

    @storage_errors
    def count_conversations(self) -> int:
        """Number of live conversations."""
        return int(
            self._conn.execute("SELECT count(*) FROM conversations WHERE deleted IS NULL").fetchone()[0]
        )

    @storage_errors
    def rename_conversation(self, conversation_id: int, title: str) -> None:
        """Set a conversation's title (NULs and lone surrogates become U+FFFD).

        Raises:
            KeyError: for an unknown id.
        """
        self._update_conversation("title = ?", (storable_text(title),), conversation_id)

    @storage_errors
    def delete_conversation(self, conversation_id: int) -> None:
        """Move a conversation to the bin: hidden from lists and search until restored or purged.

        Raises:
            KeyError: for an unknown id.
        """
        self._update_conversation("deleted = ?", (time.time(),), conversation_id)

    @storage_errors
    def restore_conversation(self, conversation_id: int) -> None:
        """Undo :meth:`delete_conversation`.

        Raises:
            KeyError: for an unknown (or already purged) id.
        """
        self._update_conversation("deleted = NULL", (), conversation_id)

    @storage_errors
    def purge_deleted(self, conversation_id: int | None = None, older_than_s: float = 0.0) -> int:
        """Erase conversations in the bin for good, with their messages.

        Args:
            conversation_id: Only this one (if it is in the bin); ``None`` for all.
            older_than_s: Only those deleted at least this long ago, in s.

        Returns:
            Number of conversations erased.
        """
        sql = "DELETE FROM conversations WHERE deleted IS NOT NULL AND deleted <= ?"
        params: list[Any] = [time.time() - older_than_s]
        if conversation_id is not None:
            sql += " AND id = ?"
            params.append(conversation_id)
        with self.transaction():
            return self._conn.execute(sql, params).rowcount

    def _update_conversation(self, assignment: str, params: tuple[Any, ...], conversation_id: int) -> None:
        cur = self._conn.execute(
            f"UPDATE conversations SET {assignment} WHERE id = ?", (*params, conversation_id)
        )
        if cur.rowcount == 0:
            raise KeyError(f"no conversation {conversation_id}")

    # -- messages ---------------------------------------------------------------------
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
            if role == "user":
                self._conn.execute(
                    "UPDATE conversations SET title = ? WHERE id = ? AND title = ''",
                    (auto_title(text), conversation_id),
                )
        return mid

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
    def checkpoint_partial(self, message_id: int, text: str) -> None:
        """Save the answer so far (one UPDATE, committed). Call at most every few seconds.

        Raises:
            KeyError: if ``message_id`` is not a ``partial`` message (unknown or finished).
        """
        stored, raw = encode_text(text)
        cur = self._conn.execute(
            "UPDATE messages SET text = ?, text_raw = ?, updated = ? WHERE id = ? AND state = 'partial'",
            (stored, raw, time.time(), message_id),
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
    ) -> None:
        """Save the final answer once, mark it ``complete`` and commit.

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
                "UPDATE messages SET text = ?, text_raw = ?, updated = ?, state = 'complete', "
                "settings = coalesce(?, settings), model = coalesce(?, model) "
                "WHERE id = ? AND state = 'partial'",
                (stored, raw, now, settings_json(settings), model, message_id),
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
        the user saw it.

        Raises:
            KeyError: for an unknown conversation.
        """
        out: list[ChatMessage] = []
        for m in self.messages(conversation_id):
            if m.kind == "image":
                if out and out[-1].role == "observation" and m.image:
                    out[-1] = dataclasses.replace(out[-1], images=out[-1].images + (m.image,))
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
        mid = int(cur.lastrowid)
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

    # -- search, Markdown export (JSON export and import: history_tree) ----------------
    @storage_errors
    def search(self, query: str, *, limit: int = 50, conversation_id: int | None = None) -> list[SearchHit]:
        """Full-text search over live conversations; see :mod:`glmdesk.core.history_search`.

        Raises:
            ValueError: if ``limit`` is below 1.
        """
        return _search(self._conn, query, limit=limit, conversation_id=conversation_id)

    @storage_errors
    def export_markdown(self, conversation_id: int, labels: Mapping[str, str] | None = None) -> str:
        """Return the branch on screen as Markdown (also for the clipboard).

        Args:
            conversation_id: Conversation to export.
            labels: Translated headings, keyed as ``history_io.MARKDOWN_LABELS``.

        Raises:
            KeyError: for an unknown conversation.
        """
        return to_markdown(self.get_conversation(conversation_id), self.messages(conversation_id), labels)
