"""The document index: an SQLite database beside history (``documents.sqlite3`` in the
user data folder) with the library's folders, each document's facts and its chunks,
searched with FTS5 and ranked by BM25 (SQLite's ``bm25()``: Robertson and Zaragoza, "The
Probabilistic Relevance Framework", 2009).

FTS5's ``unicode61`` tokenizer keeps a run of Chinese or Japanese characters as one token;
the searched copy of each chunk therefore has a space between CJK characters, and a query's
CJK run becomes its character pairs, each a phrase, so ``什么是量子比特`` finds
``…使用量子比特进行…`` (``量子``, ``子比``, ``比特`` match; BM25 weighs the rare pairs).

One :class:`DocumentIndex` per thread (SQLite connections stay in their thread); the
database is in WAL mode, so the window's reads go on while the indexing thread writes.
"""

from __future__ import annotations

import json
import re
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

from glmdesk.core import paths
from glmdesk.documents.chunking import Chunk
from glmdesk.documents.extract import ExtractedDocument
from glmdesk.documents.problems import DocumentError, DocumentProblem

#: The database's file name inside ``paths.data_dir()`` (beside ``history.sqlite3``).
DB_NAME = "documents.sqlite3"

SCHEMA_VERSION = 1

_CJK = re.compile(r"([\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af])")
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
#: English words too common to help find a passage.
STOPWORDS = frozenset(
    "a an and are as at be but by can could did do does for from had has have how i if in into is it "
    "its me my no not of on or our she so than that the their them then there these they this to "
    "was we were what when where which who whom why will with would you your about tell says said "
    "please give document documents file text".split()
)


def searchable(text: str) -> str:
    """``text`` as FTS5 indexes it: a space on each side of every CJK character."""
    return _CJK.sub(r" \1 ", text)


def match_query(*texts: str, most: int = 64) -> str:
    """An FTS5 query that matches any of the words of ``texts`` (a question, then earlier
    turns), stopwords left out, each word or CJK run quoted; ``""`` when none is left.
    The first text's words come first; at most ``most`` terms."""
    terms: list[str] = []
    for text in texts:
        for word in _WORD.findall(text.lower()):
            for part in _CJK.split(word):
                if not part:
                    continue
                if _CJK.fullmatch(part):
                    if terms and terms[-1].startswith("cjk:"):
                        terms[-1] += part
                    else:
                        terms.append("cjk:" + part)
                elif part not in STOPWORDS and (len(part) > 1 or part.isdigit()):
                    terms.append(part)
    seen: list[str] = []
    for term in terms:
        if term.startswith("cjk:"):  # a CJK run: its character pairs (bigrams), each a phrase
            run = term[4:]
            grams = [run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)]
            quoted = ['"' + " ".join(g) + '"' for g in grams]
        else:
            quoted = ['"' + term.replace('"', "") + '"']
        seen += [q for q in quoted if q not in seen]
    return " OR ".join(seen[:most])


@dataclass(frozen=True)
class DocumentRow:
    """One indexed (or failed) document.

    Attributes:
        id: Its row id.
        path: The file, resolved.
        kind: ``text``, ``markdown``, ``code``, ``pdf``, ``docx`` or ``html``.
        size: Its size when indexed, in bytes.
        mtime_ns: Its modification time when indexed, in ns.
        pages: Pages (1 for a document without pages).
        scanned_pages: Numbers of the pages with no text.
        chunks: Chunks indexed.
        chars: Characters of text.
        folder: The library folder it belongs to (``None``: attached on its own).
        problem: Why its last reading failed (its earlier chunks, if any, are kept), or ``None``.
    """

    id: int
    path: str
    kind: str
    size: int
    mtime_ns: int
    pages: int
    scanned_pages: tuple[int, ...]
    chunks: int
    chars: int
    folder: str | None
    problem: DocumentProblem | None

    @property
    def name(self) -> str:
        """The file's name."""
        return Path(self.path).name


@dataclass(frozen=True)
class Hit:
    """One chunk found by a search.

    Attributes:
        document: The document's row.
        chunk: The chunk.
        score: BM25 relevance (higher is better; SQLite's ``bm25()`` negated).
    """

    document: DocumentRow
    chunk: Chunk
    score: float


def _disk_full(exc: sqlite3.Error) -> bool:
    return getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL or "full" in str(exc).lower()


class DocumentIndex:
    """The index database (see the module's text). Not shared between threads.

    Args:
        path: The database file (default ``documents.sqlite3`` in the data folder).

    Raises:
        sqlite3.Error: when the file cannot be opened or made.
    """

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else paths.data_dir() / DB_NAME
        self.conn = sqlite3.connect(str(self.path), timeout=30.0)
        self._wanted: frozenset[int] | None = None  # the ids in temp.wanted (see search)
        self.conn.execute("PRAGMA foreign_keys = ON")
        self.conn.execute("PRAGMA journal_mode = WAL")
        self.conn.execute("PRAGMA synchronous = NORMAL")
        if self.conn.execute("PRAGMA user_version").fetchone()[0] < SCHEMA_VERSION:
            with self.conn:
                _create(self.conn)
                self.conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def close(self) -> None:
        """Close the connection. Idempotent."""
        self.conn.close()

    # The library's folders -------------------------------------------------------------
    def add_folder(self, folder: str | Path) -> str:
        """Put ``folder`` (resolved) in the library; returns it. Indexing is separate
        (:func:`glmdesk.documents.indexing.index_paths`)."""
        resolved = str(Path(folder).expanduser().resolve())
        with self.conn:
            self.conn.execute(
                "INSERT OR IGNORE INTO folders (path, added) VALUES (?, ?)", (resolved, time.time())
            )
        return resolved

    def remove_folder(self, folder: str) -> None:
        """Take ``folder`` and its documents out of the library (the files stay on disk)."""
        with self.conn:
            self.conn.execute("DELETE FROM documents WHERE folder = ?", (folder,))
            self.conn.execute("DELETE FROM folders WHERE path = ?", (folder,))

    def folders(self) -> list[str]:
        """The library's folders, in the order they were added."""
        return [r[0] for r in self.conn.execute("SELECT path FROM folders ORDER BY id")]

    # Documents ---------------------------------------------------------------------------
    def documents(self, folder: str | None = None, ids: tuple[int, ...] | None = None) -> list[DocumentRow]:
        """Documents of ``folder`` (all when ``None``) or with the given ids, by path."""
        sql, args = f"SELECT {_COLUMNS} FROM documents", ()
        if ids is not None:
            sql += f" WHERE id IN ({','.join('?' * len(ids))})"
            args = tuple(ids)
        elif folder is not None:
            sql += " WHERE folder = ?"
            args = (folder,)
        return [_row(r) for r in self.conn.execute(sql + " ORDER BY path", args)]

    def document(self, path: str | Path) -> DocumentRow | None:
        """The row of the document at ``path`` (resolved), or ``None``."""
        resolved = str(Path(path).expanduser().resolve())
        r = self.conn.execute(f"SELECT {_COLUMNS} FROM documents WHERE path = ?", (resolved,)).fetchone()
        return _row(r) if r else None

    def store(
        self, extracted: ExtractedDocument, kind: str, chunks: list[Chunk], folder: str | None = None
    ) -> DocumentRow:
        """Replace the document's chunks with ``chunks`` in one transaction (its old ones
        stay if this fails).

        Raises:
            DocumentError: ``disk_full`` when SQLite finds no room.
        """
        scanned = json.dumps(list(extracted.scanned_pages))
        try:
            with self.conn:
                old = self.conn.execute(
                    "SELECT id FROM documents WHERE path = ?", (extracted.path,)
                ).fetchone()
                if old:
                    self._drop_chunks(old[0])
                    self.conn.execute("DELETE FROM documents WHERE id = ?", (old[0],))
                cur = self.conn.execute(
                    "INSERT INTO documents (path, kind, size, mtime_ns, pages, scanned_pages, chunks, chars,"
                    " folder, indexed) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        extracted.path,
                        kind,
                        extracted.size,
                        extracted.mtime_ns,
                        len(extracted.pages),
                        scanned,
                        len(chunks),
                        sum(len(c.text) for c in chunks),
                        folder,
                        time.time(),
                    ),
                )
                doc_id = cur.lastrowid
                rows = [(doc_id, c.ordinal, c.page, c.line, c.section, c.text) for c in chunks]
                first = self.conn.execute("SELECT COALESCE(MAX(id), 0) FROM chunks").fetchone()[0] + 1
                self.conn.executemany(
                    "INSERT INTO chunks (document_id, ordinal, page, line, section, text) VALUES (?, ?, ?, ?, ?, ?)",
                    rows,
                )
                self.conn.executemany(
                    "INSERT INTO chunks_fts (rowid, section, text) VALUES (?, ?, ?)",
                    ((first + i, searchable(c.section), searchable(c.text)) for i, c in enumerate(chunks)),
                )
        except sqlite3.OperationalError as exc:
            if _disk_full(exc):
                raise DocumentError(DocumentProblem("disk_full", extracted.path, str(exc))) from None
            raise
        return self.document(extracted.path)  # type: ignore[return-value]

    def store_problem(self, problem: DocumentProblem, folder: str | None = None) -> None:
        """Note why the document at ``problem.path`` could not be read; chunks indexed
        before are kept (a file that vanished or broke still answers from its last copy)."""
        try:
            with self.conn:
                updated = self.conn.execute(
                    "UPDATE documents SET problem = ?, detail = ? WHERE path = ?",
                    (problem.kind, problem.detail, problem.path),
                ).rowcount
                if not updated:
                    self.conn.execute(
                        "INSERT INTO documents (path, kind, size, mtime_ns, pages, scanned_pages, chunks,"
                        " chars, folder, indexed, problem, detail) VALUES (?, '', 0, 0, 0, '[]', 0, 0, ?, ?, ?, ?)",
                        (problem.path, folder, time.time(), problem.kind, problem.detail),
                    )
        except sqlite3.OperationalError as exc:
            if not _disk_full(exc):
                raise

    def forget(self, path: str) -> None:
        """Drop the document at ``path`` (resolved) and its chunks (its file is gone)."""
        with self.conn:
            old = self.conn.execute("SELECT id FROM documents WHERE path = ?", (path,)).fetchone()
            if old:
                self._drop_chunks(old[0])
                self.conn.execute("DELETE FROM documents WHERE id = ?", (old[0],))

    def _drop_chunks(self, document_id: int) -> None:
        self.conn.execute(
            "DELETE FROM chunks_fts WHERE rowid IN (SELECT id FROM chunks WHERE document_id = ?)",
            (document_id,),
        )
        self.conn.execute("DELETE FROM chunks WHERE document_id = ?", (document_id,))

    def chunks(self, document_id: int) -> list[Chunk]:
        """A document's chunks in order."""
        return [
            Chunk(r[0], r[1], r[2], r[3], r[4])
            for r in self.conn.execute(
                "SELECT ordinal, page, line, section, text FROM chunks WHERE document_id = ? ORDER BY ordinal",
                (document_id,),
            )
        ]

    def chunk(self, document_id: int, ordinal: int) -> Chunk | None:
        """A document's chunk by its ordinal, or ``None`` when it has no such chunk."""
        r = self.conn.execute(
            "SELECT ordinal, page, line, section, text FROM chunks WHERE document_id = ? AND ordinal = ?",
            (document_id, ordinal),
        ).fetchone()
        return Chunk(r[0], r[1], r[2], r[3], r[4]) if r else None

    # Search --------------------------------------------------------------------------------
    def _without_common_terms(self, query: str) -> str:
        """``query`` (:func:`match_query`'s ``"a" OR "b"``) without its single words found in
        more than :data:`COMMON_SHARE` of the chunks, when a rarer word that the index holds
        remains (else the three rarest words it holds are kept)."""
        terms = query.split(" OR ")
        words = [t.strip('"') for t in terms if " " not in t]
        if len(terms) < 2 or not words:
            return query
        marks = ",".join("?" * len(words))
        counts = dict(self.conn.execute(f"SELECT term, doc FROM chunks_vocab WHERE term IN ({marks})", words))
        total = self.conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
        limit = max(total * COMMON_SHARE, 50)
        rare = [t for t in terms if " " in t or 0 < counts.get(t.strip('"'), 0) <= limit]
        if not rare:
            held = sorted(
                (t for t in terms if counts.get(t.strip('"'), 0)), key=lambda t: counts[t.strip('"')]
            )
            rare = held[:3] or terms
        return " OR ".join(rare)

    def search(self, query: str, document_ids: tuple[int, ...] | None = None, limit: int = 20) -> list[Hit]:
        """The chunks that best match an FTS5 ``query`` (from :func:`match_query`), best
        first, within ``document_ids`` (all documents when ``None``)."""
        if not query or document_ids == ():
            return []
        query = self._without_common_terms(query)
        sql = (
            "SELECT c.document_id, c.ordinal, c.page, c.line, c.section, c.text, -bm25(chunks_fts, 0.5, 1.0) AS score"
            " FROM chunks_fts JOIN chunks c ON c.id = chunks_fts.rowid WHERE chunks_fts MATCH ?"
        )
        args: tuple = (query,)
        if document_ids is not None:  # through a temporary table: SQLite limits a query's parameters
            wanted = frozenset(document_ids)
            if wanted != self._wanted:  # the same documents as the last question's: filled already
                self.conn.execute("CREATE TEMP TABLE IF NOT EXISTS wanted (id INTEGER PRIMARY KEY)")
                self.conn.execute("DELETE FROM temp.wanted")
                self.conn.executemany("INSERT INTO temp.wanted (id) VALUES (?)", ((i,) for i in wanted))
                self.conn.commit()
                self._wanted = wanted
            sql += " AND c.document_id IN (SELECT id FROM temp.wanted)"
        sql += " ORDER BY bm25(chunks_fts, 0.5, 1.0) LIMIT ?"
        rows = self.conn.execute(sql, args + (limit,)).fetchall()
        docs = {d.id: d for d in self.documents(ids=tuple({r[0] for r in rows}))} if rows else {}
        return [Hit(docs[r[0]], Chunk(r[1], r[2], r[3], r[4], r[5]), r[6]) for r in rows]


#: A word in more than this share of the chunks is left out of a search that has rarer words
#: (it ranks almost nothing and makes FTS5 score nearly every chunk).
COMMON_SHARE = 0.1

_COLUMNS = "id, path, kind, size, mtime_ns, pages, scanned_pages, chunks, chars, folder, problem, detail"


def _row(r) -> DocumentRow:
    problem = DocumentProblem(r[10], r[1], r[11] or "") if r[10] else None
    return DocumentRow(
        r[0], r[1], r[2], r[3], r[4], r[5], tuple(json.loads(r[6] or "[]")), r[7], r[8], r[9], problem
    )


def _create(conn: sqlite3.Connection) -> None:
    conn.execute(
        "CREATE TABLE folders (id INTEGER PRIMARY KEY, path TEXT UNIQUE NOT NULL, added REAL NOT NULL)"
    )
    conn.execute(
        """CREATE TABLE documents (
            id INTEGER PRIMARY KEY,
            path TEXT UNIQUE NOT NULL,      -- resolved
            kind TEXT NOT NULL,
            size INTEGER NOT NULL,          -- bytes, when indexed
            mtime_ns INTEGER NOT NULL,      -- ns since the epoch, when indexed
            pages INTEGER NOT NULL,
            scanned_pages TEXT NOT NULL,    -- JSON array of page numbers without text
            chunks INTEGER NOT NULL,
            chars INTEGER NOT NULL,
            folder TEXT,                    -- the library folder, NULL for a file attached alone
            indexed REAL NOT NULL,          -- s since the epoch
            problem TEXT,                   -- the last reading's problem kind, NULL when it read
            detail TEXT
        )"""
    )
    conn.execute("CREATE INDEX documents_folder ON documents (folder)")
    conn.execute(
        """CREATE TABLE chunks (
            id INTEGER PRIMARY KEY,
            document_id INTEGER NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
            ordinal INTEGER NOT NULL,
            page INTEGER,
            line INTEGER NOT NULL,
            section TEXT NOT NULL,
            text TEXT NOT NULL
        )"""
    )
    conn.execute("CREATE INDEX chunks_document ON chunks (document_id, ordinal)")
    conn.execute(
        "CREATE VIRTUAL TABLE chunks_fts USING fts5 (section, text, tokenize = 'unicode61 remove_diacritics 2')"
    )
    # How many chunks hold each term (search leaves out words nearly every chunk has).
    conn.execute("CREATE VIRTUAL TABLE chunks_vocab USING fts5vocab (chunks_fts, 'row')")
