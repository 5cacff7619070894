"""What can go wrong with the history file, as typed errors, and the check at open.

Two faults users meet (issue 19):

- **Disk full.** SQLite reports ``SQLITE_FULL`` (also when ``PRAGMA max_page_count``
  is reached). The failed transaction is rolled back whole; the caller keeps what
  it tried to write and retries later (``ui/history/history_writes.py``).
- **Damaged file** (zeroed or overwritten pages, a file that is not SQLite at all).
  ``PRAGMA quick_check`` runs when the file is opened (O(pages), no index
  cross-checks: https://www.sqlite.org/pragma.html#pragma_quick_check). A damaged
  file is renamed aside, never written to, and a new, empty history starts in its
  place; :attr:`History.set_aside` says where the old one went.

Every :class:`sqlite3.Error` that a :class:`~glmdesk.core.history.History` method
meets becomes a :class:`HistoryError` with one of three kinds from
``core/errors.ERROR_KINDS``: ``history_disk_full``, ``history_damaged``,
``history_unavailable`` (anything else: read-only file, I/O error, lock held too
long). Result codes: https://www.sqlite.org/rescode.html.
"""

from __future__ import annotations

import errno
import functools
import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from glmdesk.core.errors import GlmdeskError

# Primary result codes (https://www.sqlite.org/rescode.html).
SQLITE_CORRUPT = 11
SQLITE_FULL = 13
SQLITE_NOTADB = 26

#: Files SQLite keeps beside the database in WAL mode; they move with it.
SIDE_SUFFIXES = ("-wal", "-shm")

F = TypeVar("F", bound=Callable[..., Any])


class HistoryError(GlmdeskError):
    """A history read or write that failed; nothing of the failed transaction was stored.

    Attributes:
        kind: ``history_disk_full``, ``history_damaged`` or ``history_unavailable``.
        params: ``path`` (the database file) and ``detail`` (SQLite's words).
    """


def primary_code(exc: sqlite3.Error) -> int | None:
    """SQLite's primary result code of ``exc`` (extended codes masked), or ``None``."""
    code = getattr(exc, "sqlite_errorcode", None)
    return None if code is None else int(code) & 0xFF


def is_damage(exc: sqlite3.Error) -> bool:
    """Whether ``exc`` says the file is damaged (``SQLITE_CORRUPT``) or not SQLite (``SQLITE_NOTADB``)."""
    return primary_code(exc) in (SQLITE_CORRUPT, SQLITE_NOTADB)


def history_error(exc: sqlite3.Error, path: Path | str) -> HistoryError:
    """Classify a :class:`sqlite3.Error` as a :class:`HistoryError` with an English sentence.

    Args:
        exc: What sqlite3 raised.
        path: The database file, named in the sentence.
    """
    code = primary_code(exc)
    if code == SQLITE_FULL:
        return HistoryError(
            "history_disk_full",
            f"The disk holding the chat history ({path}) is full; the conversation stays in the "
            "window and is saved as soon as there is space again.",
            path=str(path),
            detail=str(exc),
        )
    if code in (SQLITE_CORRUPT, SQLITE_NOTADB):
        return HistoryError(
            "history_damaged",
            f"The chat history file {path} is damaged; restart glmdesk to set it aside and start "
            "a new history.",
            path=str(path),
            detail=str(exc),
        )
    return HistoryError(
        "history_unavailable",
        f"The chat history ({path}) could not be saved or read: {exc}.",
        path=str(path),
        detail=str(exc),
    )


def file_error(exc: OSError, path: Path | str) -> HistoryError:
    """Classify a failed write of a file beside the history (an image's) as a
    :class:`HistoryError`: ``history_disk_full`` for ``ENOSPC`` and ``EDQUOT`` (no space,
    quota reached), ``history_unavailable`` for any other :class:`OSError`.

    Args:
        exc: What the write raised.
        path: The database file, named in the sentence.
    """
    if exc.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)):
        return HistoryError(
            "history_disk_full",
            f"The disk holding the chat history ({path}) is full; the conversation stays in the "
            "window and is saved as soon as there is space again.",
            path=str(path),
            detail=str(exc),
        )
    return HistoryError(
        "history_unavailable",
        f"The chat history ({path}) could not be saved or read: {exc}.",
        path=str(path),
        detail=str(exc),
    )


def storage_errors(method: F) -> F:
    """Decorate a :class:`History` method: :class:`sqlite3.Error` becomes :class:`HistoryError`.

    ``KeyError``, ``ValueError`` and ``TypeError`` (bad arguments) pass through, and so
    do :class:`sqlite3.ProgrammingError` and :class:`sqlite3.IntegrityError` (a caller's
    or glmdesk's own mistake, such as using the connection from another thread).
    """

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except (sqlite3.ProgrammingError, sqlite3.IntegrityError):
            raise
        except sqlite3.Error as exc:
            raise history_error(exc, self.path) from exc

    return wrapper  # type: ignore[return-value]


def quick_check(conn: sqlite3.Connection) -> str:
    """Run ``PRAGMA quick_check`` and return ``"ok"`` or SQLite's first complaint.

    Raises:
        sqlite3.DatabaseError: when the file cannot even be read as a database.
    """
    rows = conn.execute("PRAGMA quick_check(1)").fetchall()
    return str(rows[0][0]) if rows else "ok"


def set_aside_name(path: Path, now: float | None = None) -> Path:
    """A free name beside ``path`` for a damaged file: ``history.damaged-20261130-144500.sqlite3``.

    Args:
        path: The damaged database file.
        now: Seconds since the epoch (default: now); a counter is added if the name is taken.
    """
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(time.time() if now is None else now))
    for n in range(1000):
        suffix = f"-{n}" if n else ""
        candidate = path.with_name(f"{path.stem}.damaged-{stamp}{suffix}{path.suffix}")
        if not any(Path(f"{candidate}{s}").exists() for s in ("", *SIDE_SUFFIXES)):
            return candidate
    raise FileExistsError(f"no free name beside {path}")


def set_aside(path: Path) -> Path:
    """Rename a damaged database (and its ``-wal``/``-shm`` files) to a new name; return it.

    Nothing is deleted or overwritten: ``os.replace`` goes to a name that is free.

    Raises:
        OSError: when the files cannot be renamed (then the caller must not start afresh).
    """
    target = set_aside_name(path)
    for suffix in SIDE_SUFFIXES:  # side files first: the main file is what names the set
        side = Path(f"{path}{suffix}")
        if side.exists():
            os.replace(side, f"{target}{suffix}")
    os.replace(path, target)
    return target


def check_file(path: Path | str) -> str:
    """``PRAGMA quick_check`` of the file at ``path`` before anything writes to it.

    Returns:
        ``"ok"`` (also for a missing or empty file) or what SQLite found wrong.

    Raises:
        sqlite3.Error: for faults that are not damage (a lock held too long, no access).
    """
    if not Path(path).exists():
        return "ok"
    conn = sqlite3.connect(os.fspath(path), timeout=5.0)
    try:
        return quick_check(conn)
    except sqlite3.DatabaseError as exc:
        if not is_damage(exc):
            raise
        return str(exc)
    finally:
        conn.close()


def open_checked(
    path: Path | str, connect: Callable[[Path | str], sqlite3.Connection]
) -> tuple[sqlite3.Connection, Path | None]:
    """Open the history at ``path``; a damaged file is set aside and a new one started.

    The check runs on a plain connection first, so nothing (no migration, no WAL
    switch) writes to a damaged file.

    Args:
        path: Database file or ``":memory:"``.
        connect: Opens and migrates a database (``history_schema.connect``).

    Returns:
        ``(connection, where the damaged file went or None)``.

    Raises:
        OSError: when the file cannot be created or a damaged file cannot be renamed.
        SchemaTooNewError: for a database written by a newer glmdesk (never set aside).
        sqlite3.Error: for faults other than damage, and when even a new database cannot be opened.
    """
    if os.fspath(path) == ":memory:":
        return connect(path), None
    moved = None
    if check_file(path) != "ok":
        moved = set_aside(Path(path))
    return connect(path), moved
