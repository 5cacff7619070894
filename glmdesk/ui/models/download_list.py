"""The downloads of the "Get a model" page: a row per download
(:class:`~glmdesk.ui.models.download_row.DownloadRow`), run one after another by a
:class:`~glmdesk.ui.models.pull_worker.PullWorker` on its own thread, each with a job id
and a stop flag (pause and cancel keep the bytes; Resume and Retry pull again, from
where it stopped)."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QCoreApplication, QThread, Signal, Slot
from PySide6.QtWidgets import QScrollArea, QVBoxLayout, QWidget

from glmdesk.core.settings import LoadSettings
from glmdesk.engine.catalog.catalog import Variant
from glmdesk.engine.catalog.pulled import find_pulled, models_dir
from glmdesk.engine.forecast import gib
from glmdesk.ui.models.download_row import DownloadRow
from glmdesk.ui.models.pull_worker import PullWorker


def error_text(error) -> str:
    """A :class:`~glmdesk.engine.catalog.hub_files.PullError` in the user's language."""
    p = error.params
    if error.kind == "disk_full":
        return QCoreApplication.translate(
            "DownloadList",
            "Not enough disk space: {need} more is needed and {folder} has {free} free. "
            "Free some space or choose another models folder.",
        ).format(need=gib(p["need"]), free=gib(p["free"]), folder=p["folder"])
    if error.kind == "hash_mismatch":
        return QCoreApplication.translate(
            "DownloadList",
            "{file} arrived damaged (its hash is not the hub's) and was deleted; Retry fetches it anew.",
        ).format(file=p["file"])
    if error.kind == "gated":
        return QCoreApplication.translate(
            "DownloadList",
            "This repository needs permission (the hub answered {status}): open {page}, sign in and accept "
            "its terms, then set a token with read access under Hub token.",
        ).format(status=p.get("status") or "", page=p.get("page", ""))
    if error.kind == "not_found":
        return QCoreApplication.translate("DownloadList", "The hub has no repository {repo}.").format(
            repo=p["repo"]
        )
    if error.kind == "no_quant":
        return QCoreApplication.translate(
            "DownloadList", "{repo} has the quantizations {quants}; {quant} is not among them."
        ).format(repo=p["repo"], quants=p["quants"], quant=p["quant"])
    if error.kind == "connection_lost":
        return QCoreApplication.translate(
            "DownloadList", "The connection was lost; what was fetched is kept: Retry resumes from there."
        )
    if error.kind == "busy":
        return QCoreApplication.translate(
            "DownloadList", "Another glmdesk is downloading this model already."
        )
    return QCoreApplication.translate(
        "DownloadList", "The hub is not reachable ({detail}); Retry when you are online."
    ).format(detail=error.message)


class DownloadList(QScrollArea):
    """The rows of the downloads (object name ``download_list``).

    Args:
        store: The ``SettingsStore``: a finished model joins its recent models (so Open
            model lists it); ``None`` in tests that do not look.
        token: Gives the hub token to send (``None``: none).
        parent: Parent widget.

    Signals:
        load_requested(object): Load these :class:`~glmdesk.core.settings.LoadSettings`.
        model_pulled(str): A download finished and was checked (the model's path).
    """

    load_requested = Signal(object)
    model_pulled = Signal(str)
    _pull_requested = Signal(int, str, str, str, str, object)

    def __init__(self, store=None, token: Callable[[], str | None] = lambda: None, parent=None) -> None:
        super().__init__(parent)
        self.setObjectName("download_list")
        self._store = store
        self._token = token
        self.jobs: dict[int, dict] = {}
        self._ids = itertools.count(1)
        holder = QWidget()
        self._rows = QVBoxLayout(holder)
        self._rows.addStretch(1)
        self.setWidgetResizable(True)
        self.setWidget(holder)
        self.setMaximumHeight(200)
        self._thread = QThread(self)
        self._thread.setObjectName("glmdesk-pull")
        self.worker = PullWorker()
        self.worker.moveToThread(self._thread)
        self._thread.finished.connect(self.worker.deleteLater)
        self._pull_requested.connect(self.worker.pull)
        self.worker.progressed.connect(self._on_progress)
        self.worker.pulled.connect(self._on_pulled)
        self.worker.pull_stopped.connect(self._on_stopped)
        self.worker.pull_failed.connect(self._on_failed)
        self._thread.start()

    def job_for(self, variant: Variant) -> int | None:
        """The unfinished download of ``variant``, if one is listed."""
        for job, entry in self.jobs.items():
            if entry["variant"] == variant and not entry.get("done"):
                return job
        return None

    def start(self, variant: Variant, engine: str) -> int:
        """Add a row for ``variant`` and queue its pull; returns the job id."""
        job = next(self._ids)
        row = DownloadRow(f"{variant.repo} {variant.quant}")
        self.jobs[job] = {"variant": variant, "row": row, "engine": engine, "stop": threading.Event()}
        row.pause_clicked.connect(lambda job=job: self.toggle_pause(job))
        row.cancel_clicked.connect(lambda job=job: self.cancel(job))
        row.load_clicked.connect(
            lambda job=job: self.load(Path(self.jobs[job]["path"]), self.jobs[job]["engine"])
        )
        self._rows.insertWidget(self._rows.count() - 1, row)
        self._queue(job)
        return job

    def _queue(self, job: int) -> None:
        entry = self.jobs[job]
        entry["stop"] = threading.Event()
        entry["row"].show_running()
        variant = entry["variant"]
        quant = variant.quant if variant.format == "gguf" else ""
        self._pull_requested.emit(
            job, variant.repo, quant, str(models_dir()), self._token() or "", entry["stop"]
        )

    def toggle_pause(self, job: int) -> None:
        """Pause a running download (its bytes are kept), or resume a paused one."""
        entry = self.jobs[job]
        if entry["row"].paused:
            self._queue(job)
        else:
            entry["stop"].set()
            entry["row"].show_paused()

    def cancel(self, job: int) -> None:
        """Stop a download and remove its row (what was fetched is kept for a later download)."""
        entry = self.jobs.pop(job)
        entry["stop"].set()
        entry["row"].deleteLater()

    def load(self, path: Path, engine: str) -> None:
        """Ask to load a pulled model with ``engine`` (``auto`` where llama.cpp is missing)."""
        from glmdesk.engine.backends import llama_cpp_available

        if engine == "llamacpp" and not llama_cpp_available():
            engine = "auto"
        self.load_requested.emit(LoadSettings(model=str(path), engine=engine))

    @Slot(int, object)
    def _on_progress(self, job: int, progress) -> None:
        entry = self.jobs.get(job)
        if entry is not None and not entry["stop"].is_set():
            entry["row"].show_progress(progress)

    @Slot(int, str)
    def _on_pulled(self, job: int, folder: str) -> None:
        entry = self.jobs.get(job)
        if entry is None:
            return
        entry["done"] = True
        variant = entry["variant"]
        pulled = find_pulled(f"{variant.repo}:{variant.quant}") or find_pulled(variant.repo)
        entry["path"] = str(pulled.model_path if pulled else folder)
        entry["row"].show_finished(entry["path"])
        if self._store is not None:
            self._store.add_recent_model(entry["path"])
        self.model_pulled.emit(entry["path"])

    @Slot(int)
    def _on_stopped(self, job: int) -> None:
        entry = self.jobs.get(job)
        if entry is not None and not entry["row"].paused:
            entry["row"].show_paused()

    @Slot(int, object)
    def _on_failed(self, job: int, error) -> None:
        entry = self.jobs.get(job)
        if entry is not None:
            entry["row"].show_failed(error_text(error))

    def shutdown(self) -> None:
        """Pause every download (bytes kept) and end the thread. Idempotent."""
        for entry in self.jobs.values():
            entry["stop"].set()
        if self._thread.isRunning():
            self._thread.quit()
            self._thread.wait(15_000)
