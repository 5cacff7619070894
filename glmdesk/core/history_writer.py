"""History writes on a thread of their own, in order (issue 19, item 4).

Storing a 2 MB message costs its SQLite write plus its full-text (FTS5 trigram)
index: about 250 ms on an idle 2-core machine, 2.3 s under load, which froze the
window when it ran on the GUI thread. A :class:`HistoryWriter` runs each write on
one thread (``concurrent.futures.ThreadPoolExecutor`` with one worker, so writes run
one at a time in the order given) with a connection of its own to the same file;
the GUI thread keeps its connection for reads. In WAL mode readers never wait for
the writer and see every transaction once it has committed
(https://www.sqlite.org/wal.html#concurrency).

Each write is a callable ``write(history) -> result`` that runs on the writer's
:class:`~glmdesk.core.history.History`, usually one transaction. Its outcome comes
back as a :class:`concurrent.futures.Future`. A database that no second connection
can see (``":memory:"``) is written in place, on the caller's thread.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from glmdesk.core.history import History
from glmdesk.core.history_errors import history_error


class HistoryWriter:
    """Runs history writes one at a time, in order, on a thread with its own connection.

    Args:
        history: The open history (its file is opened again on the writer thread;
            ``":memory:"`` is written through ``history`` itself, in place).

    A writer connection that cannot be opened fails each write: with a
    :class:`~glmdesk.core.history_errors.HistoryError` for SQLite's errors.
    """

    def __init__(self, history: History) -> None:
        self._path = history.path
        self._inline = os.fspath(history.path) == ":memory:"
        self._history = history if self._inline else None
        self._executor: ThreadPoolExecutor | None = None
        if not self._inline:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="glmdesk-history")
            # Opened on the writer thread (sqlite3 connections stay on the thread that made
            # them), before any write; the file was checked when ``history`` opened it.
            self._opened = self._executor.submit(History, history.path, check=False)

    def _call(self, write: Callable[[History], Any]) -> Any:
        if self._history is None:
            try:
                self._history = self._opened.result()
            except sqlite3.Error as exc:
                raise history_error(exc, self._path) from exc
        return write(self._history)

    @property
    def threaded(self) -> bool:
        """Whether writes run on a thread of their own (``False`` for ``":memory:"``)."""
        return not self._inline

    def submit(self, write: Callable[[History], Any]) -> Future:
        """Queue ``write`` after every write submitted before it; return its future.

        The future holds the write's result or the exception it raised
        (:class:`~glmdesk.core.history_errors.HistoryError` for a full disk or a
        damaged file, ``KeyError`` for a conversation erased meanwhile). Callbacks
        added to it run on the writer thread.

        Raises:
            RuntimeError: after :meth:`close`.
        """
        if self._executor is None:
            if self._history is None:
                raise RuntimeError("the history writer is closed")
            future: Future = Future()
            try:
                future.set_result(write(self._history))
            except BaseException as exc:  # noqa: BLE001 (handed to the caller through the future)
                future.set_exception(exc)
            return future
        return self._executor.submit(self._call, write)

    def call(self, write: Callable[[History], Any]) -> Any:
        """Run ``write`` after the writes already queued and wait for its result (tests, quit).

        Raises:
            Whatever ``write`` raises.
        """
        return self.submit(write).result()

    def close(self) -> None:
        """Finish every queued write, then close the writer's connection (idempotent)."""
        if self._executor is not None:
            executor, self._executor = self._executor, None
            executor.submit(self._close_history).result()
            executor.shutdown(wait=True)
        self._history = None

    def _close_history(self) -> None:
        if self._history is None and self._opened.exception() is None:
            self._history = self._opened.result()
        if self._history is not None:
            self._history.close()
