"""The window's one way to run work off the GUI thread: a worker QObject on a QThread.

The model's :class:`~glmdesk.ui.session.worker.Worker` is the long-lived case (one
thread for the app's lifetime, its own slots). :class:`Background` is the same pattern
for the window's short jobs (start a server, restart an MCP server): ``run(work)`` runs
``work(cancel)`` in a worker QObject on a QThread of its own; the result comes back on
the GUI thread through ``done``, a failure through the one error path ``failed`` (an
:class:`~glmdesk.core.errors.ErrorInfo`: a ``GlmdeskError``'s own, else kind
``background_failed`` with the exception as ``detail``, which the caller words), and a job whose ``cancel`` was set reports
nothing. The thread ends with its job, so nothing is left running when the window
closes but a job that has not returned yet (:meth:`Background.close` cancels its outcome).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, Qt, QThread, Signal, Slot

from glmdesk.core.errors import ErrorInfo, GlmdeskError

_QUEUED = Qt.ConnectionType.QueuedConnection


#: Each thread whose job has not ended, with its runner: both are kept until the thread
#: has finished (a QThread destroyed while running aborts the process; a runner freed
#: while its thread still returns from it crashes), also after their owner went.
_RUNNING: dict[QThread, _JobRunner] = {}


class _Reaper(QObject):
    """Frees a finished job's thread and runner on the GUI thread (a slot of a GUI-thread
    object, so ``finished``, emitted on the ending thread, arrives queued; no closure
    holds the thread, so it is freed at once, never by a garbage collection on another
    thread)."""

    @Slot()
    def release(self) -> None:
        thread = self.sender()
        if isinstance(thread, QThread):
            thread.wait()  # it emitted ``finished`` as it ended: returns at once
            _RUNNING.pop(thread, None)


_REAPER: list[_Reaper] = []  # made at the first job, on the GUI thread


def _reaper() -> _Reaper:
    if not _REAPER:
        _REAPER.append(_Reaper())
    return _REAPER[0]


class _Job:
    """One piece of work and where its outcome goes."""

    def __init__(self, work, done, failed) -> None:
        self.work, self.done, self.failed = work, done, failed
        self.cancel = threading.Event()


class _JobRunner(QObject):
    """Runs one job on its thread."""

    finished = Signal(object, object)
    failed = Signal(object, object)

    def __init__(self, job: _Job) -> None:
        super().__init__()
        self.job = job

    @Slot()
    def run(self) -> None:
        job = self.job
        if job.cancel.is_set():
            self.finished.emit(job, None)
            return
        try:
            result = job.work(job.cancel)
        except GlmdeskError as exc:
            self.failed.emit(job, exc.info)
        except Exception as exc:  # the one error path: worded, never a traceback dialog
            detail = f"{exc.__class__.__name__}: {exc}"
            self.failed.emit(job, ErrorInfo("background_failed", detail, {"detail": detail}))
        else:
            self.finished.emit(job, result)


class Background(QObject):
    """Short jobs of one owner, each on a thread of its own that ends with it (see the
    module docstring).

    Args:
        name: The threads' name (shown by debuggers and ``faulthandler``).
        parent: The owner (GUI thread).
    """

    def __init__(self, name: str, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._name = name
        self._jobs: dict[_Job, tuple[QThread, _JobRunner]] = {}

    def run(
        self,
        work: Callable[[threading.Event], Any],
        done: Callable[[Any], None] | None = None,
        failed: Callable[[ErrorInfo], None] | None = None,
    ) -> threading.Event:
        """Start ``work(cancel)``; ``done(result)`` or ``failed(error)`` follow on the GUI
        thread unless the returned ``cancel`` event was set first."""
        job = _Job(work, done, failed)
        runner, thread = _JobRunner(job), QThread()
        thread.setObjectName(self._name)
        runner.moveToThread(thread)
        thread.started.connect(runner.run)  # runs on the new thread (the runner lives there)
        runner.finished.connect(self._on_finished, _QUEUED)
        runner.failed.connect(self._on_failed, _QUEUED)
        thread.finished.connect(_reaper().release)
        self._jobs[job] = (thread, runner)
        _RUNNING[thread] = runner
        thread.start()
        return job.cancel

    def _settle(self, job: _Job) -> bool:
        thread, _runner = self._jobs.pop(job, (None, None))
        if thread is not None:
            thread.quit()
        return not job.cancel.is_set()

    @Slot(object, object)
    def _on_finished(self, job: _Job, result) -> None:
        if self._settle(job) and job.done is not None:
            job.done(result)

    @Slot(object, object)
    def _on_failed(self, job: _Job, error: ErrorInfo) -> None:
        if self._settle(job) and job.failed is not None:
            job.failed(error)

    def busy(self) -> bool:
        """True while a job runs."""
        return bool(self._jobs)

    def close(self) -> None:
        """Cancel the jobs not finished (their outcome is not reported; a running one ends
        on its own thread). Idempotent."""
        for job, (thread, _runner) in list(self._jobs.items()):
            job.cancel.set()
            thread.quit()  # ends once the job returns
        self._jobs.clear()
