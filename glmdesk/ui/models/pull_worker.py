"""The "Get a model" page's worker: pulls and the hub probe, off the GUI thread.

One :class:`PullWorker` lives on its own :class:`~PySide6.QtCore.QThread` for the
page's lifetime and runs pulls one after another (each a
:class:`~glmdesk.engine.catalog.pull.Puller` run); a second one on another thread
answers "is the hub reachable", so a probe never waits behind a download. Each pull
carries a job id and a ``threading.Event`` that pauses or cancels it at the next chunk.
Byte counts are reported at most :data:`PROGRESS_PER_S` times a second (a fast line
gives hundreds of chunks a second); every change of stage is reported.
"""

from __future__ import annotations

import threading
from pathlib import Path

from PySide6.QtCore import QObject, Signal, Slot

#: Progress reports of bytes per second at most (the rows repaint no faster).
PROGRESS_PER_S = 10


class PullWorker(QObject):
    """Runs pulls and probes; reports with queued signals.

    Signals:
        progressed(int, object): A job's :class:`~glmdesk.engine.catalog.pull.PullProgress`.
        pulled(int, str): A job finished; the model's folder.
        pull_stopped(int): A job was paused or cancelled (its bytes kept).
        pull_failed(int, object): A job's :class:`~glmdesk.engine.catalog.hub_files.PullError`.
        reachability_checked(bool, str): The hub answered (or not, and why).
    """

    progressed = Signal(int, object)
    pulled = Signal(int, str)
    pull_stopped = Signal(int)
    pull_failed = Signal(int, object)
    reachability_checked = Signal(bool, str)

    @Slot(int, str, str, str, str, object)
    def pull(self, job: int, repo: str, quant: str, folder: str, token: str, stop: threading.Event) -> None:
        """Plan and run one pull (``quant`` ``""``: the repository's one; ``token`` ``""``:
        the one kept in the keyring, if any)."""
        from glmdesk.engine.catalog.hub_files import PullError
        from glmdesk.engine.catalog.pull import Puller

        if stop.is_set():
            self.pull_stopped.emit(job)
            return
        import time

        from glmdesk.engine.catalog.hub_files import saved_token

        puller = Puller(
            Path(folder), token=token or saved_token()
        )  # the keyring is read here, not in the GUI
        last = [0.0]

        def report(progress) -> None:
            now = time.monotonic()
            if progress.stage != "downloading" or now - last[0] >= 1 / PROGRESS_PER_S:
                last[0] = now
                self.progressed.emit(job, progress)

        try:
            plan = puller.plan(repo, quant or None)
            result = puller.pull(plan, report, stop)
        except PullError as exc:
            self.pull_failed.emit(job, exc)
            return
        except Exception as exc:  # a full disk mid-file, a permission error: a sentence, not a traceback
            self.pull_failed.emit(job, PullError("offline", f"{type(exc).__name__}: {exc}", repo=repo))
            return
        if result is None:
            self.pull_stopped.emit(job)
        else:
            self.pulled.emit(job, str(result))

    @Slot()
    def probe(self) -> None:
        """Ask whether the hub is reachable (at most a few seconds)."""
        from glmdesk.engine.catalog.hub_files import hub_reachable

        self.reachability_checked.emit(*hub_reachable())
