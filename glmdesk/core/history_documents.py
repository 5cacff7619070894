"""Which documents a user message was given, kept in the history by name (never their
text), and where in them the passages given were, so that a reopened conversation shows
its answers' sources again. Mixed into :class:`~glmdesk.core.history.History`; export
names them.

``messages.documents`` (schema version 8) holds a JSON array: the files' paths, then,
when the passages are known, one object ``{"sources": [...]}`` with one entry per source
given, in prompt order::

    ["/notes/a.pdf", "/notes/b.md",
     {"sources": [{"n": 1, "path": "/notes/a.pdf", "page": 3, "line": 12, "chunk": 40,
                   "section": "Audit", "whole": false, "sha1": "<16 hex digits>"}]}]

``chunk`` is the passage's ordinal in the document's chunks (``null`` for a whole
document) and ``sha1`` the first 16 hex digits of the SHA-1 of the passage's text as
given, so the passage is read back from the document index and told apart from a later
reading of a changed file. A reader that knows only paths skips the object.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePath

#: Hex digits of a passage's SHA-1 kept (64 bits: enough to tell two readings apart).
DIGEST_HEX = 16


def passage_digest(text: str) -> str:
    """The first :data:`DIGEST_HEX` hex digits of the SHA-1 of ``text`` (UTF-8)."""
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:DIGEST_HEX]


@dataclass(frozen=True)
class SourceRef:
    """Where one source given with a question was, without its text.

    Attributes:
        number: Its number in the prompt (``[1]``, ...).
        page: Its page (``None``: no pages, or a whole document).
        line: Its first line on that page (or in the file), 1-based.
        chunk: Its ordinal among the document's chunks (``None`` for a whole document).
        section: The headings above it (may be empty).
        whole: True when the whole document was given.
        digest: :func:`passage_digest` of the text given.
    """

    number: int
    page: int | None
    line: int
    chunk: int | None
    section: str
    whole: bool
    digest: str


@dataclass(frozen=True)
class DocumentUse:
    """A document a user message was given (its text went to the model for that turn only).

    Attributes:
        path: The file, as it was indexed.
        sources: The passages of it that were given (empty when not known: an older
            history, an import).
    """

    path: str
    sources: tuple[SourceRef, ...] = ()

    @property
    def name(self) -> str:
        """The file's name."""
        return PurePath(self.path).name or self.path


def documents_json(documents: Sequence[DocumentUse]) -> str:
    """The ``documents`` column's value: a JSON array of paths, then the sources' object
    when any is known (see the module's text)."""
    items: list[object] = [d.path for d in documents]
    sources = sorted(((d.path, s) for d in documents for s in d.sources), key=lambda pair: pair[1].number)
    if sources:
        items.append(
            {
                "sources": [
                    {
                        "n": s.number,
                        "path": path,
                        "page": s.page,
                        "line": s.line,
                        "chunk": s.chunk,
                        "section": s.section,
                        "whole": s.whole,
                        "sha1": s.digest,
                    }
                    for path, s in sources
                ]
            }
        )
    return json.dumps(items, ensure_ascii=False)


def _optional_int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _source_ref(item: object) -> tuple[str, SourceRef] | None:
    """One stored source entry as ``(path, SourceRef)``; ``None`` for a malformed one."""
    if not isinstance(item, dict):
        return None
    path, number, digest = item.get("path"), _optional_int(item.get("n")), item.get("sha1")
    if not isinstance(path, str) or number is None or not isinstance(digest, str):
        return None
    section = item.get("section")
    ref = SourceRef(
        number,
        _optional_int(item.get("page")),
        _optional_int(item.get("line")) or 1,
        _optional_int(item.get("chunk")),
        section if isinstance(section, str) else "",
        item.get("whole") is True,
        digest,
    )
    return path, ref


def parse_documents(value: object) -> tuple[DocumentUse, ...]:
    """A stored or imported ``documents`` value (a JSON array of paths, with or without the
    sources' object) as :class:`DocumentUse` values; anything else gives none, and a
    malformed source entry is left out."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return ()
    if not isinstance(value, list):
        return ()
    paths = [p for p in value if isinstance(p, str) and p]
    found: dict[str, list[SourceRef]] = {}
    for item in value:
        if isinstance(item, dict) and isinstance(item.get("sources"), list):
            for entry in item["sources"]:
                parsed = _source_ref(entry)
                if parsed is not None and parsed[0] in paths:
                    found.setdefault(parsed[0], []).append(parsed[1])
    return tuple(DocumentUse(p, tuple(found.get(p, ()))) for p in dict.fromkeys(paths))


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
