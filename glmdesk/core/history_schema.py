"""The history database's file, connection settings, schema and migrations.

Schema version lives in ``PRAGMA user_version``. ``MIGRATIONS[i]`` takes a database
from version ``i`` to ``i + 1``; each runs in its own transaction together with the
version bump, so a crash mid-migration leaves the previous version intact. A new
schema change appends a function; released ones are never edited.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

from glmdesk.core.history_types import SchemaTooNewError

#: Name of the database file inside ``paths.data_dir()``.
DB_NAME = "history.sqlite3"


def _v1_tables(conn: sqlite3.Connection) -> None:
    conn.execute(
        """CREATE TABLE conversations (
            id INTEGER PRIMARY KEY,
            title TEXT NOT NULL DEFAULT '',
            created REAL NOT NULL,          -- s since the Unix epoch
            updated REAL NOT NULL,          -- s since the Unix epoch
            model TEXT,
            deleted REAL                    -- NULL, or when it was moved to the bin
        )"""
    )
    conn.execute(
        "CREATE INDEX conversations_live ON conversations (updated DESC, id DESC) WHERE deleted IS NULL"
    )
    conn.execute(
        """CREATE TABLE messages (
            id INTEGER PRIMARY KEY,
            conversation_id INTEGER NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
            role TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant')),
            text TEXT NOT NULL DEFAULT '',  -- clean UTF-8 (see history_types)
            text_raw BLOB,                  -- exact text when it differs from `text`
            created REAL NOT NULL,
            updated REAL NOT NULL,
            state TEXT NOT NULL DEFAULT 'complete' CHECK (state IN ('partial', 'complete')),
            finish_reason TEXT,
            model TEXT,
            settings TEXT,                  -- JSON object of the sampling settings
            ttft_s REAL,
            tokens_per_s REAL,
            n_tokens INTEGER,
            prompt_tokens INTEGER,
            dropped_tokens INTEGER,
            dropped_messages TEXT           -- JSON array of message indices
        )"""
    )
    conn.execute("CREATE INDEX messages_conversation ON messages (conversation_id, id)")


def _v2_search(conn: sqlite3.Connection) -> None:
    # Trigram tokens make substring search work for scripts without spaces (Chinese,
    # Japanese) as well as for English; queries shorter than 3 characters fall back
    # to LIKE (see history_search).
    conn.execute(
        "CREATE VIRTUAL TABLE messages_fts USING fts5"
        "(text, content='messages', content_rowid='id', tokenize='trigram')"
    )
    conn.execute(
        "CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN "
        "INSERT INTO messages_fts (rowid, text) VALUES (new.id, new.text); END"
    )
    conn.execute(
        "CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN "
        "INSERT INTO messages_fts (messages_fts, rowid, text) VALUES ('delete', old.id, old.text); END"
    )
    conn.execute(
        "CREATE TRIGGER messages_fts_update AFTER UPDATE OF text ON messages BEGIN "
        "INSERT INTO messages_fts (messages_fts, rowid, text) VALUES ('delete', old.id, old.text); "
        "INSERT INTO messages_fts (rowid, text) VALUES (new.id, new.text); END"
    )
    conn.execute("INSERT INTO messages_fts (messages_fts) VALUES ('rebuild')")


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}


def _v3_tool_messages(conn: sqlite3.Connection) -> None:
    # Tool calls, observations and images are messages of their own kind. The v1
    # CHECK on `role` allows system/user/assistant only and SQLite cannot change a
    # CHECK without rebuilding the table, so the row's role stays within it: a call
    # is an assistant row, an observation or image is a 'user' row (what goes back
    # to the model), and `kind` says what it is (history_rows maps it to the
    # 'observation' role). Columns are added only when missing, so this step runs in
    # any order with other migrations that add columns.
    have = _columns(conn, "messages")
    if "kind" not in have:
        conn.execute(
            "ALTER TABLE messages ADD COLUMN kind TEXT NOT NULL DEFAULT 'text' "
            "CHECK (kind IN ('text', 'tool_call', 'observation', 'image'))"
        )
    if "tool" not in have:
        conn.execute("ALTER TABLE messages ADD COLUMN tool TEXT")  # JSON: the call, or {"name": ...}
    if "data" not in have:
        conn.execute("ALTER TABLE messages ADD COLUMN data BLOB")  # PNG bytes of an image


def _v4_branches(conn: sqlite3.Connection) -> None:
    # Messages form a tree inside their conversation: each has a parent (NULL for a
    # root), and the conversation remembers the leaf of the branch on screen. Earlier
    # conversations become one branch: each message's parent is the one before it.
    # Self-contained (columns added only when missing), so it composes with other
    # migrations in any order. No foreign key on parent_id: history_tree keeps it
    # consistent (a deleted message's children move up to its parent).
    if "parent_id" not in _columns(conn, "messages"):
        conn.execute("ALTER TABLE messages ADD COLUMN parent_id INTEGER")
        conn.execute(
            "UPDATE messages SET parent_id = (SELECT max(p.id) FROM messages p "
            "WHERE p.conversation_id = messages.conversation_id AND p.id < messages.id)"
        )
    if "active_leaf" not in _columns(conn, "conversations"):
        conn.execute("ALTER TABLE conversations ADD COLUMN active_leaf INTEGER")
        conn.execute(
            "UPDATE conversations SET active_leaf = "
            "(SELECT max(id) FROM messages WHERE conversation_id = conversations.id)"
        )
    conn.execute("CREATE INDEX IF NOT EXISTS messages_parent ON messages (parent_id)")


def _v5_conversation_tools(conn: sqlite3.Connection) -> None:
    # A conversation remembers its Tools section (ConversationTools.to_json: mode,
    # custom functions as typed, limits); NULL means no tools. Added only when
    # missing, so it composes with other migrations in any order.
    if "tools" not in _columns(conn, "conversations"):
        conn.execute("ALTER TABLE conversations ADD COLUMN tools TEXT")


def _v6_message_images(conn: sqlite3.Connection) -> None:
    # Images attached to user messages: rows naming files stored once by content hash
    # beside the database (glmdesk.core.history_images).
    from glmdesk.core.history_images import create_table

    create_table(conn)


def _v7_reasoning(conn: sqlite3.Connection) -> None:
    # An answer's reasoning (GLM-Z1's <think> block, markers left out) beside its text,
    # with when the answer itself began (s from the request) and the tokens spent
    # thinking. NULL for messages without reasoning. Added only when missing.
    have = _columns(conn, "messages")
    for name, kind in (("reasoning", "TEXT"), ("answer_ttft_s", "REAL"), ("reasoning_tokens", "INTEGER")):
        if name not in have:
            conn.execute(f"ALTER TABLE messages ADD COLUMN {name} {kind}")


def _v8_message_documents(conn: sqlite3.Connection) -> None:
    # Which documents a user message was given (a JSON array of paths; never their
    # text): glmdesk.core.history_documents. Added only when missing.
    from glmdesk.core.history_documents import add_column

    add_column(conn)


def _v9_chat_settings(conn: sqlite3.Connection) -> None:
    # Each conversation's own settings as one JSON object (keep earlier thinking, the
    # documents and MCP servers on in it): glmdesk.core.history_chat_settings.
    from glmdesk.core.history_chat_settings import add_column

    add_column(conn)


#: ``MIGRATIONS[i]`` upgrades a database from schema version ``i`` to ``i + 1``.
MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = [
    _v1_tables,
    _v2_search,
    _v3_tool_messages,
    _v4_branches,
    _v5_conversation_tools,
    _v6_message_images,
    _v7_reasoning,
    _v8_message_documents,
    _v9_chat_settings,
]

#: The schema version this code writes.
SCHEMA_VERSION = len(MIGRATIONS)


def create_private_file(path: Path) -> None:
    """Create an empty file readable and writable by its owner only (0600), if missing.

    SQLite gives the ``-wal`` and ``-shm`` files the database file's permissions.
    The parent directory is created with 0700 when missing.

    Raises:
        OSError: when the directory or file cannot be created.
    """
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return
    os.close(fd)


def schema_version(conn: sqlite3.Connection) -> int:
    """Return the database's ``PRAGMA user_version``."""
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def migrate(conn: sqlite3.Connection, target: int = SCHEMA_VERSION) -> int:
    """Upgrade the schema to ``target``, one transaction per step.

    Args:
        conn: A connection in autocommit mode (``isolation_level=None``).
        target: Version to reach; tests use lower values to build old databases.

    Returns:
        The version the database is at afterwards.

    Raises:
        SchemaTooNewError: if the database is newer than this code.
        sqlite3.Error: if a step fails (that step is rolled back).
    """
    version = schema_version(conn)
    if version > SCHEMA_VERSION:
        raise SchemaTooNewError(
            f"The history database has schema version {version}; this glmdesk knows up to "
            f"{SCHEMA_VERSION}. Update glmdesk to open it."
        )
    for step in range(version, min(target, SCHEMA_VERSION)):
        conn.execute("BEGIN IMMEDIATE")
        try:
            MIGRATIONS[step](conn)
            conn.execute(f"PRAGMA user_version = {step + 1}")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
    return schema_version(conn)


def connect(path: str | os.PathLike[str], *, target: int = SCHEMA_VERSION) -> sqlite3.Connection:
    """Open (creating owner-only if needed) and migrate the database at ``path``.

    The connection is in autocommit mode (transactions are explicit), uses WAL,
    ``synchronous=FULL`` (a committed message survives power loss, not only a
    process crash), enforces foreign keys, waits up to 5 s for a lock, and keeps
    sqlite3's default ``check_same_thread=True``: only the thread that opened it may
    use it.

    Args:
        path: Database file, or ``":memory:"``.
        target: Schema version to migrate to (tests only).

    Raises:
        OSError: when the file cannot be created.
        SchemaTooNewError: for a database written by a newer glmdesk.
        sqlite3.DatabaseError: for a file that is not a usable SQLite database.
    """
    name = os.fspath(path)
    if name != ":memory:":
        create_private_file(Path(name))
    conn = sqlite3.connect(name, isolation_level=None, timeout=5.0)
    try:
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = FULL")
        migrate(conn, target)
    except BaseException:
        conn.close()
        raise
    return conn
