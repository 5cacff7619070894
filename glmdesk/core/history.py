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

import os
import sqlite3
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from glmdesk.core import paths
from glmdesk.core.history_chat_settings import ChatSettings
from glmdesk.core.history_documents import DocumentUses
from glmdesk.core.history_errors import open_checked, storage_errors
from glmdesk.core.history_images import ImageStore
from glmdesk.core.history_markdown import to_markdown
from glmdesk.core.history_messages import MessageStore
from glmdesk.core.history_rows import CONV_COLS, inserted_id, to_conversation
from glmdesk.core.history_schema import DB_NAME, connect
from glmdesk.core.history_search import search as _search
from glmdesk.core.history_tools import ToolMessages
from glmdesk.core.history_tree import Branches
from glmdesk.core.history_types import Conversation, SearchHit
from glmdesk.core.text import storable_text


class History(MessageStore, Branches, ToolMessages, ImageStore, DocumentUses, ChatSettings):
    """The chat history database (see the module docstring for threads and call order).

    Messages form a tree per conversation (branches; see :mod:`glmdesk.core.history_tree`):
    a new message follows the branch on screen unless ``parent_id`` says otherwise.

    Args:
        path: Database file; ``None`` for ``paths.data_dir() / "history.sqlite3"``;
            ``":memory:"`` for a throwaway database.
        check: Run ``PRAGMA quick_check`` first (``False`` for a second connection
            to a file another one has just checked: the history writer's).

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

    def __init__(self, path: str | os.PathLike[str] | None = None, *, check: bool = True) -> None:
        self.path = Path(path) if path is not None else paths.data_dir() / DB_NAME
        if check:
            self._conn, self.set_aside = open_checked(
                os.fspath(path) if path is not None else self.path, connect
            )
        else:  # a second connection to a file just checked (the history writer's)
            self._conn, self.set_aside = connect(self.path), None
        self._depth = 0
        self.missing_images: list[str] = []
        self.closed = False  # True once close() ran

    # -- connection -----------------------------------------------------------------
    def close(self) -> None:
        """Close the connection (idempotent); the object is unusable afterwards."""
        self._conn.close()
        self.closed = True

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
        return inserted_id(cur)

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
        """Return the branch on screen as Markdown (also for the clipboard), with the
        conversation's Tools section when it offers tools.

        Args:
            conversation_id: Conversation to export.
            labels: Translated headings, keyed as ``history_markdown.MARKDOWN_LABELS``.

        Raises:
            KeyError: for an unknown conversation.
        """
        messages = self.messages(conversation_id)
        return to_markdown(
            self.get_conversation(conversation_id),
            messages,
            labels,
            self.conversation_tools(conversation_id),
            documents=self._documents_by_message(messages),
        )

    def _documents_by_message(self, messages) -> dict[int, tuple[str, ...]]:
        """The names of the documents each user message was given (export names them)."""
        named = {m.id: self.documents_used(m.id) for m in messages if m.role == "user" and m.kind == "text"}
        return {mid: tuple(d.name for d in uses) for mid, uses in named.items() if uses}

    def export_markdown_files(
        self, conversation_id: int, path: str | os.PathLike[str], labels: Mapping[str, str] | None = None
    ) -> Path:
        """Write the branch on screen as a Markdown file at ``path``, its user messages'
        images as files in ``<stem>_images/`` beside it (named by content hash), linked
        from the text; returns the Markdown file's path.

        Raises:
            KeyError: for an unknown conversation.
            OSError: when a file cannot be written.
        """
        target = Path(path)
        messages = self.messages(conversation_id)
        folder = f"{target.stem}_images"
        links: dict[int, list[str]] = {}
        for m in messages:
            for image in self.attached(m.id) if m.role == "user" and m.kind == "text" else ():
                name = f"{image.sha256}.{image.mime.split('/')[1]}"
                (target.parent / folder).mkdir(exist_ok=True)
                (target.parent / folder / name).write_bytes(image.data)
                links.setdefault(m.id, []).append(f"{folder}/{name}")
        text = to_markdown(
            self.get_conversation(conversation_id),
            messages,
            labels,
            self.conversation_tools(conversation_id),
            links,
            self._documents_by_message(messages),
        )
        target.write_text(text, encoding="utf-8")
        return target
