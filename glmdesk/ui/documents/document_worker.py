"""The documents' worker: one QObject on its own QThread that indexes (in a child process,
relaying progress and cancel) and prepares a question's documents (the model's tokenizer counts there), so the window
never waits on a PDF or a tokenizer."""

from __future__ import annotations

import threading

from PySide6.QtCore import QObject, Signal, Slot

from glmdesk.documents import TokenBudget, documents_for_turn
from glmdesk.documents.child import index_in_child
from glmdesk.documents.indexing import IndexProgress, index_paths
from glmdesk.documents.store import DocumentIndex
from glmdesk.documents.turn import CHARS_PER_TOKEN_GUESS


class DocumentWorker(QObject):
    """Indexes and prepares turns on its thread; every request carries an id.

    Signals:
        progress_changed(int, object): an indexing run's id and its
            :class:`~glmdesk.documents.indexing.IndexProgress` (at most about 10 a second).
        indexing_finished(int, object): the run's id and its
            :class:`~glmdesk.documents.indexing.IndexReport`.
        turn_prepared(int, object): a request id and the
            :class:`~glmdesk.documents.DocumentTurn` (its ``text`` is the model's user turn).
        indexing_failed(int, str): a run's id and what went wrong (the index cannot be opened).
        turn_failed(int, str): a request's id and what went wrong (the question goes alone).
    """

    progress_changed = Signal(int, object)
    indexing_finished = Signal(int, object)
    turn_prepared = Signal(int, object)
    indexing_failed = Signal(int, str)
    turn_failed = Signal(int, str)

    def __init__(self, database=None) -> None:
        super().__init__()
        self.database = database
        self._index: DocumentIndex | None = None
        self._last_progress = 0.0

    def index(self) -> DocumentIndex:
        """This thread's connection to the index (opened on first use)."""
        if self._index is None:
            self._index = DocumentIndex(self.database)
        return self._index

    @Slot(int, object, object, object)
    def run_indexing(self, run_id: int, files, folders, cancel: threading.Event) -> None:
        """Index ``files`` and library ``folders`` (see :func:`index_paths`)."""
        import time

        def progress(p: IndexProgress) -> None:
            now = time.monotonic()
            if now - self._last_progress >= 0.1 or p.files_done == p.files_total:
                self._last_progress = now
                self.progress_changed.emit(run_id, p)

        try:
            try:  # in a child process: the window's interpreter lock stays free (documents/child.py)
                report = index_in_child(self.index().path, files, folders, cancel, progress)
            except OSError:  # no child process here: on this thread
                report = index_paths(
                    self.index(), files=files, folders=folders, cancel=cancel, progress=progress
                )
        except Exception as exc:  # the index cannot be opened, the child failed: told, never a traceback
            self.indexing_failed.emit(run_id, str(exc))
            return
        self.indexing_finished.emit(run_id, report)

    @Slot(int, object, object, object, int, int, int)
    def prepare_turn(
        self,
        request_id: int,
        messages,
        rows,
        backend,
        context_length: int,
        max_new_tokens: int,
        retrieval: int,
    ) -> None:
        """The last user message of ``messages`` given the documents ``rows`` (indexed
        :class:`~glmdesk.documents.store.DocumentRow` values), counted with ``backend``'s
        tokenizer."""
        try:
            index = self.index()
            count = backend.prompt_tokens if backend is not None else None
            used = count(list(messages)) if count is not None else None
            if used is None:
                used = int(sum(len(m.content) for m in messages) / CHARS_PER_TOKEN_GUESS)
            budget = TokenBudget(context_length, used, max_new_tokens, retrieval)
            earlier = [m.content for m in messages[:-1] if m.role == "user"]
            turn = documents_for_turn(messages[-1].content, earlier, rows, budget, count, index)
        except Exception as exc:  # a tokenizer or SQLite failure: the message goes without documents
            self.turn_failed.emit(request_id, str(exc))
            return
        self.turn_prepared.emit(request_id, turn)

    @Slot(str)
    def add_folder(self, folder: str) -> None:
        """Keep ``folder`` (resolved) in the index's library (indexing is separate)."""
        try:
            self.index().add_folder(folder)
        except Exception as exc:  # noqa: BLE001 - the index cannot be written: told, never a traceback
            self.indexing_failed.emit(0, str(exc))

    @Slot(str)
    def remove_folder(self, folder: str) -> None:
        """Take ``folder`` and its documents out of the index (its files stay on disk)."""
        try:
            self.index().remove_folder(folder)
        except Exception as exc:  # noqa: BLE001 - the index cannot be written: told, never a traceback
            self.indexing_failed.emit(0, str(exc))

    @Slot()
    def close(self) -> None:
        """Close the index connection (on this thread)."""
        if self._index is not None:
            self._index.close()
            self._index = None
