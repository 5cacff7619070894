"""Full-text search over saved messages (SQLite FTS5, trigram tokenizer).

The trigram tokenizer indexes every run of three characters, so a query matches
any substring of at least three characters, in Chinese as in English, ignoring
case. Terms of one or two characters (common in Chinese: 模型, 你好) cannot use the
trigram index; they are matched with ``LIKE`` (ASCII case-insensitive), alone or as
an extra filter on the indexed terms. Whitespace separates terms, all of which
must match; double quotes keep a phrase with spaces together.

Results are newest message first. Snippets and highlight spans are computed in
Python from the clean stored text.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

from glmdesk.core.history_types import SearchHit
from glmdesk.core.text import storable_text

_TERM = re.compile(r'"([^"]+)"|(\S+)')
_SELECT = (
    "SELECT m.id, m.conversation_id, c.title, m.role, m.text FROM {source} "
    "JOIN conversations c ON c.id = m.conversation_id WHERE {where} c.deleted IS NULL{scope} "
    "ORDER BY {order} DESC LIMIT ?"
)


def parse_query(query: str) -> list[str]:
    """Split a query into distinct terms (quoted phrases stay whole), in order."""
    terms: list[str] = []
    for match in _TERM.finditer(storable_text(query)):
        term = (match.group(1) or match.group(2)).strip()
        if term and term not in terms:
            terms.append(term)
    return terms


def _like_pattern(term: str) -> str:
    escaped = term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def build_query(terms: list[str], limit: int, conversation_id: int | None) -> tuple[str, list[object]]:
    """Return the SQL and parameters for :func:`search` (exposed for the benchmark)."""
    long_terms = [t for t in terms if len(t) >= 3]
    short_terms = [t for t in terms if len(t) < 3]
    params: list[object] = []
    where = ""
    if long_terms:
        source = "messages_fts JOIN messages m ON m.id = messages_fts.rowid"
        where = "messages_fts MATCH ? AND "
        order = "messages_fts.rowid"
        params.append(" AND ".join('"' + t.replace('"', '""') + '"' for t in long_terms))
    else:
        source = "messages m"
        order = "m.id"
    for term in short_terms:
        where += "m.text LIKE ? ESCAPE '\\' AND "
        params.append(_like_pattern(term))
    scope = ""
    if conversation_id is not None:
        scope = " AND m.conversation_id = ?"
        params.append(conversation_id)
    params.append(limit)
    return _SELECT.format(source=source, where=where, scope=scope, order=order), params


def make_snippet(text: str, terms: list[str], width: int = 80) -> tuple[str, tuple[tuple[int, int], ...]]:
    """Cut a one-line excerpt of about ``width`` characters around the first match.

    Args:
        text: Clean message text.
        terms: Query terms (matched ignoring case).
        width: Excerpt length, in characters (an ellipsis may be added at each end).

    Returns:
        The excerpt and the ``(start, end)`` offsets of every match in it.
    """
    pattern = re.compile("|".join(re.escape(t) for t in sorted(terms, key=len, reverse=True)), re.IGNORECASE)
    first = pattern.search(text) if terms else None
    start = 0 if first is None else max(0, first.start() - width // 3)
    end = min(len(text), start + width)
    start = max(0, min(start, end - width))
    window = re.sub(r"\s", " ", text[start:end])
    prefix = "…" if start > 0 else ""
    suffix = "…" if end < len(text) else ""
    shift = len(prefix)
    spans = tuple((m.start() + shift, m.end() + shift) for m in pattern.finditer(window)) if terms else ()
    return prefix + window + suffix, spans


def search(
    conn: sqlite3.Connection, query: str, *, limit: int = 50, conversation_id: int | None = None
) -> list[SearchHit]:
    """Find messages containing every term of ``query`` in live conversations.

    Args:
        conn: Open history connection.
        query: User text; see the module docstring for the syntax.
        limit: Most hits returned.
        conversation_id: Search only this conversation when given.

    Returns:
        Hits, newest message first; empty for a blank query.

    Raises:
        ValueError: if ``limit`` is below 1.
    """
    if limit < 1:
        raise ValueError(f"limit must be 1 or more, not {limit}")
    terms = parse_query(query)
    if not terms:
        return []
    sql, params = build_query(terms, limit, conversation_id)
    hits = []
    for message_id, conv_id, title, role, text in conn.execute(sql, params):
        snippet, spans = make_snippet(text, terms)
        hits.append(SearchHit(conv_id, title, message_id, role, snippet, spans))
    return hits


def search_file(path: Path, query: str, *, limit: int = 50) -> list[SearchHit]:
    """:func:`search` on a read-only connection of its own to the history file ``path``.

    For a search thread: the GUI thread keeps the writable connection, and sqlite3
    releases the GIL while the query runs. A file that cannot be read gives no hits.

    Args:
        path: The history database file.
        query: User text.
        limit: Most hits returned.

    Returns:
        Hits, newest message first (empty when the file cannot be read).
    """
    try:
        conn = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True, timeout=5.0)
        try:
            return search(conn, query, limit=limit)
        finally:
            conn.close()
    except sqlite3.Error:
        return []
