"""Searches of the history on a thread of their own; only the newest one's hits come back."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, QThreadPool, Signal

from glmdesk.core import history_search
from glmdesk.core.history import History


class SearchRunner(QObject):
    """Runs :func:`~glmdesk.core.history_search.search_file` on one pool thread with a
    read-only connection of its own (a short term scans every message).

    A one- or two-character term scans every message (``LIKE``); on 200,000 messages
    that is 60-160 ms, which the window's thread would otherwise spend frozen. sqlite3
    releases the GIL while the query runs. An in-memory history (tests) is searched
    on the GUI thread: no second connection can see it.

    Args:
        history: The panel's database.
        parent: The owning QObject (the panel).

    Signals:
        hits_found(list): The hits of the newest search (``SearchHit`` values).
    """

    hits_found = Signal(object)
    _done = Signal(int, object)  # (generation, hits), from the search thread

    def __init__(self, history: History, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._history = history
        self._pool = QThreadPool(self)
        self._pool.setMaxThreadCount(1)
        self._generation = 0
        self._done.connect(self._on_done)

    def busy(self) -> bool:
        """True while a search runs on the pool thread."""
        return self._pool.activeThreadCount() > 0

    def forget(self) -> None:
        """A search still running is not reported."""
        self._generation += 1

    def start(self, text: str) -> None:
        """Search for ``text`` (non-empty); a newer :meth:`start` or :meth:`forget` wins."""
        self._generation += 1
        generation = self._generation
        if self._history.path.name == ":memory:":
            self._on_done(generation, self._history.search(text))
            return
        path = self._history.path
        self._pool.start(lambda: self._job(path, text, generation))

    def _job(self, path: Path, text: str, generation: int) -> None:
        hits = history_search.search_file(path, text)
        try:
            self._done.emit(generation, hits)
        except RuntimeError:  # the panel was deleted meanwhile (window closing)
            pass

    def _on_done(self, generation: int, hits: list) -> None:
        if generation == self._generation:  # else a newer search is on its way
            self.hits_found.emit(hits)
