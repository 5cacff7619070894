"""Which documents a user message was given, kept in the history by name (never their
text): ``messages.documents`` holds a JSON array of the files' paths (schema version 8).
Mixed into :class:`~glmdesk.core.history.History`; export names them."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePath


@dataclass(frozen=True)
class DocumentUse:
    """A document a user message was given (its text went to the model for that turn only).

    Attributes:
        path: The file, as it was indexed.
    """

    path: str

    @property
    def name(self) -> str:
        """The file's name."""
        return PurePath(self.path).name or self.path


def documents_json(documents: Sequence[DocumentUse]) -> str:
    """The ``documents`` column's value: a JSON array of paths."""
    return json.dumps([d.path for d in documents], ensure_ascii=False)


def parse_documents(value: object) -> tuple[DocumentUse, ...]:
    """A stored or imported list of paths as :class:`DocumentUse` values (anything else: none)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return ()
    if not isinstance(value, list):
        return ()
    return tuple(DocumentUse(p) for p in value if isinstance(p, str) and p)


def add_column(conn: sqlite3.Connection) -> None:
    """Migration to schema version 8: the ``documents`` column (added only when missing)."""
    have = {r[1] for r in conn.execute("PRAGMA table_info(messages)")}
    if "documents" not in have:
        conn.execute("ALTER TABLE messages ADD COLUMN documents TEXT")


class DocumentUses:
    """The document methods of :class:`~glmdesk.core.history.History` (needs ``_conn``)."""

    _conn: sqlite3.Connection

    def _store_documents(self, message_id: int, documents: Sequence[DocumentUse]) -> None:
        """In the caller's transaction: the documents ``message_id`` was given."""
        self._conn.execute(
            "UPDATE messages SET documents = ? WHERE id = ?", (documents_json(documents), message_id)
        )

    def documents_used(self, message_id: int) -> tuple[DocumentUse, ...]:
        """The documents a user message was given, in order (none for other messages)."""
        row = self._conn.execute("SELECT documents FROM messages WHERE id = ?", (message_id,)).fetchone()
        return parse_documents(row[0]) if row and row[0] else ()
