"""The window's documents, non-visual: the files attached to this chat, the library's
folders (shared by every chat; which are on is per chat), the passage budget, indexing
runs on the documents' worker thread (progress, cancel, re-indexing when a folder's
files change) and the preparation of a question's documents before it is sent."""

from __future__ import annotations

import threading
from pathlib import Path

from PySide6.QtCore import (
    QFileSystemWatcher,
    QMetaObject,
    QObject,
    Qt,
    QThread,
    QThreadPool,
    QTimer,
    Signal,
    Slot,
)

from glmdesk.documents.recall import RecalledSource, recall_sources
from glmdesk.documents.store import DocumentIndex, DocumentRow
from glmdesk.documents.turn import DEFAULT_RETRIEVAL_TOKENS
from glmdesk.ui.documents.document_worker import DocumentWorker

_QUEUED = Qt.ConnectionType.QueuedConnection


class DocumentLibrary(QObject):
    """What the chat's documents are and where indexing stands.

    Args:
        database: The index file (default: ``documents.sqlite3`` in the data folder).

    Signals:
        changed(): the attached files, folders, their on/off or the rows changed.
        choice_changed(): the user changed what is on for this chat (attached or took
            off a file, turned a folder on or off, removed one): kept with the chat.
        progress_changed(object): an :class:`~glmdesk.documents.indexing.IndexProgress`.
        indexing_finished(object): an :class:`~glmdesk.documents.indexing.IndexReport`
            (its ``problems`` each have a sentence).
        turn_prepared(object): a :class:`~glmdesk.documents.DocumentTurn` for the
            question given to :meth:`prepare`, or ``None`` when it failed (after
            :attr:`failed`): the question then goes alone.
        failed(str): the index or the tokenizer failed (what it said).
        recalled(int, object): a :meth:`recall` request's id and its list of
            :class:`~glmdesk.documents.recall.RecalledSource` (empty when the index
            cannot be read).
    """

    changed = Signal()
    choice_changed = Signal()
    progress_changed = Signal(object)
    indexing_finished = Signal(object)
    turn_prepared = Signal(object)
    failed = Signal(str)
    recalled = Signal(int, object)

    _index_requested = Signal(int, object, object, object)
    _turn_requested = Signal(int, object, object, object, int, int, int)
    _folder_removed = Signal(str)
    _folder_added = Signal(str)

    def __init__(self, database=None, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.worker = DocumentWorker(database)
        self.worker_thread = QThread()
        self.worker_thread.setObjectName("glmdesk-documents")
        self.worker.moveToThread(self.worker_thread)
        self.worker_thread.start()
        self._index_requested.connect(self.worker.run_indexing, _QUEUED)
        self._turn_requested.connect(self.worker.prepare_turn, _QUEUED)
        self._folder_removed.connect(self.worker.remove_folder, _QUEUED)
        self._folder_added.connect(self.worker.add_folder, _QUEUED)
        self.worker.progress_changed.connect(self._on_progress, _QUEUED)
        self.worker.indexing_finished.connect(self._on_indexed, _QUEUED)
        self.worker.turn_prepared.connect(self._on_turn, _QUEUED)
        self.worker.indexing_failed.connect(self._on_indexing_failed, _QUEUED)
        self.worker.turn_failed.connect(self._on_turn_failed, _QUEUED)
        self.attached: list[str] = []  # this chat's files, resolved
        self.folders: dict[str, bool] = {}  # the library's folders: on for this chat?
        self.rows: dict[str, DocumentRow] = {}  # path -> DocumentRow of the last runs
        self.budget = DEFAULT_RETRIEVAL_TOKENS
        self._chats: dict[object, tuple[list[str], list[str]]] = {}  # chat key -> (attached, folders on)
        self._run = self._request = 0
        self._cancel: threading.Event | None = None
        self._pending: list[tuple[list[str], list[str]]] = []
        self._closed = False
        self._recalls = 0
        self._recall_pool = QThreadPool(self)  # its threads are waited for at shutdown
        self.watcher = QFileSystemWatcher(self)
        self._rescan = QTimer(self, singleShot=True, interval=1000)
        self._rescan.timeout.connect(self.refresh_folders)
        self.watcher.directoryChanged.connect(self._rescan.start)
        self.watcher.fileChanged.connect(self._rescan.start)
        try:  # the library's folders as stored (read once here; SQLite's own connection)
            stored = DocumentIndex(database)
            self.folders = dict.fromkeys(stored.folders(), False)
            stored.close()
        except Exception:  # noqa: BLE001 - an unreadable index: the library starts empty and says so when used
            self.folders = {}
        if self.folders:
            self._watch()
            self._start([], list(self.folders))

    # What is on ------------------------------------------------------------------------
    def is_indexing(self) -> bool:
        """True while an indexing run goes on."""
        return self._cancel is not None

    def active_paths(self) -> list[str]:
        """The documents on for this chat: attached files and the files of folders that
        are on, each with indexed text."""
        paths = list(self.attached)
        on = [f for f, enabled in self.folders.items() if enabled]
        paths += [p for p, row in self.rows.items() if getattr(row, "folder", None) in on]
        return [p for p in dict.fromkeys(paths) if p in self.rows and self.rows[p].chunks]

    def has_documents(self) -> bool:
        """True when some document is on for this chat (attached or a folder on)."""
        return bool(self.attached) or any(self.folders.values())

    # Changes ---------------------------------------------------------------------------
    def attach(self, paths: list[str]) -> None:
        """Attach files to this chat (a folder is added to the library and turned on) and index them."""
        files, folders = [], []
        for path in paths:
            resolved = str(Path(path).expanduser().resolve())
            if Path(resolved).is_dir():
                folders.append(resolved)
                if resolved not in self.folders:
                    self._folder_added.emit(resolved)  # kept in the library for the next start
                self.folders[resolved] = True
            elif resolved not in self.attached:
                self.attached.append(resolved)
                files.append(resolved)
        if folders:
            self._watch()
        self.changed.emit()
        if files or folders:
            self.choice_changed.emit()
            self._start(files, folders)

    def detach(self, path: str) -> None:
        """Take a file off this chat (it stays indexed)."""
        if path in self.attached:
            self.attached.remove(path)
            self.changed.emit()
            self.choice_changed.emit()

    def add_folder(self, folder: str) -> None:
        """Add a folder to the library (on for this chat) and index it."""
        self.attach([folder])

    def remove_folder(self, folder: str) -> None:
        """Take a folder out of the library (its files stay on disk)."""
        self.folders.pop(folder, None)
        self.rows = {p: r for p, r in self.rows.items() if getattr(r, "folder", None) != folder}
        self._folder_removed.emit(folder)  # its rows go on the worker's thread (a large folder takes a while)
        if folder in self.watcher.directories():
            self.watcher.removePaths([folder])
        self.changed.emit()
        self.choice_changed.emit()

    def set_folder_on(self, folder: str, on: bool) -> None:
        """Turn a library folder on or off for this chat."""
        if folder in self.folders and self.folders[folder] != on:
            self.folders[folder] = on
            self.changed.emit()
            self.choice_changed.emit()

    def set_budget(self, tokens: int) -> None:
        """The passage budget, in tokens (when documents do not fit whole)."""
        self.budget = max(int(tokens), 0)

    def switch_chat(self, old_key: object, new_key: object) -> None:
        """Keep what is on for the chat ``old_key`` and put back what was on for ``new_key``
        (nothing for a chat not seen before while the window is open)."""
        self._chats[old_key] = (list(self.attached), [f for f, on in self.folders.items() if on])
        attached, on = self._chats.get(new_key, ([], []))
        self.attached = list(attached)
        self.folders = {f: f in on for f in self.folders}
        self.changed.emit()

    def choice(self) -> dict[str, list[str]]:
        """What is on for this chat, as kept with it: ``{"files": [attached paths],
        "folders": [library folders on]}``."""
        return {"files": list(self.attached), "folders": [f for f, on in self.folders.items() if on]}

    def restore(self, choice: object) -> None:
        """Put back what was kept on for a chat (:meth:`choice`'s shape; anything else is
        ignored). A folder no longer in the library stays off; attached files not indexed
        in this window's life are indexed (unchanged ones are not read again)."""
        if not isinstance(choice, dict):
            return
        files = [f for f in choice.get("files") or [] if isinstance(f, str) and f]
        on = {f for f in choice.get("folders") or [] if isinstance(f, str)}
        self.attached = list(dict.fromkeys(files))
        self.folders = {f: f in on for f in self.folders}
        self.changed.emit()
        unread = [f for f in self.attached if f not in self.rows]
        if unread:
            self._start(unread, [])

    def recall(self, documents) -> int:
        """Read an earlier question's kept sources back from the index
        (:func:`~glmdesk.documents.recall.recall_sources`) on a pool thread with its own
        connection (a whole document of a million-token context is 3.5 MB to read and
        digest: about 50 ms, never on the GUI thread; the documents' thread may be busy
        indexing); :attr:`recalled` follows. Returns the request's id."""
        self._recalls += 1
        request, database, documents = self._recalls, self.worker.database, tuple(documents)

        def run() -> None:
            result: list[RecalledSource] = []
            try:
                index = DocumentIndex(database)
                try:
                    result = recall_sources(index, documents)
                finally:
                    index.close()
            except Exception:  # noqa: BLE001 - an unreadable index: the answer shows no card, the chat opens
                result = []
            try:
                self.recalled.emit(request, result)  # queued to the GUI thread
            except RuntimeError:  # the window closed meanwhile
                pass

        self._recall_pool.start(run)
        return request

    @Slot()
    def refresh_folders(self) -> None:
        """Index the library's folders again (changed files read again, gone ones dropped)."""
        if self.folders:
            self._start([], list(self.folders))

    @Slot()
    def cancel(self) -> None:
        """Stop the indexing run between pages (what it stored stays)."""
        self._pending.clear()
        if self._cancel is not None:
            self._cancel.set()

    def _watch(self) -> None:
        missing = [f for f in self.folders if f not in self.watcher.directories() and Path(f).is_dir()]
        if missing:
            self.watcher.addPaths(missing)

    def _start(self, files: list[str], folders: list[str]) -> None:
        if self._closed:
            return
        if self._cancel is not None:  # one run at a time: this one follows
            self._pending.append((files, folders))
            return
        self._run += 1
        self._cancel = threading.Event()
        self._index_requested.emit(self._run, files, folders, self._cancel)

    @Slot(int, object)
    def _on_progress(self, run_id: int, progress) -> None:
        if run_id == self._run:
            self.progress_changed.emit(progress)

    @Slot(int, object)
    def _on_indexed(self, run_id: int, report) -> None:
        if run_id != self._run:
            return
        self._cancel = None
        for path in report.forgotten:
            self.rows.pop(path, None)
        for row in report.rows:
            self.rows[row.path] = row
        for problem in report.problems:
            if problem.path not in self.rows:
                self.rows.pop(problem.path, None)
        self.changed.emit()
        self.indexing_finished.emit(report)
        if self._pending:
            files, folders = self._pending.pop(0)
            self._start(files, folders)

    # A question's documents ---------------------------------------------------------------
    def prepare(self, messages, backend, context_length: int, max_new_tokens: int) -> int:
        """Prepare the documents for the last (user) message of ``messages`` on the
        worker's thread; :attr:`turn_prepared` follows. Returns the request's id."""
        self._request += 1
        self._turn_requested.emit(
            self._request,
            tuple(messages),
            [self.rows[p] for p in self.active_paths()],
            backend,
            context_length,
            max_new_tokens,
            self.budget,
        )
        return self._request

    @Slot(int, object)
    def _on_turn(self, request_id: int, turn) -> None:
        if request_id == self._request:
            self.turn_prepared.emit(turn)

    @Slot(int, str)
    def _on_indexing_failed(self, run_id: int, detail: str) -> None:
        if run_id == self._run:
            self._cancel = None
        self.failed.emit(detail)

    @Slot(int, str)
    def _on_turn_failed(self, request_id: int, detail: str) -> None:
        self.failed.emit(detail)
        if request_id == self._request:
            self.turn_prepared.emit(None)

    def shutdown(self) -> None:
        """Cancel indexing, close the index on its thread and end the thread. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self.cancel()
        self._recall_pool.waitForDone(10_000)  # a read of a few rows; bounded all the same
        QMetaObject.invokeMethod(self.worker, "close", Qt.ConnectionType.BlockingQueuedConnection)
        self.worker_thread.quit()
        self.worker_thread.wait()
