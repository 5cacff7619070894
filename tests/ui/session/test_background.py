"""The window's one way to run short jobs off the GUI thread: the result or the one error
path on the GUI thread, a cancelled job reports nothing, no thread left when done."""

from __future__ import annotations

import threading

from PySide6.QtCore import QObject, QThread

from glmdesk.core.errors import GlmdeskError
from glmdesk.ui.session import background
from glmdesk.ui.session.background import Background

MS = 5_000


def test_a_job_runs_off_the_gui_thread_and_reports_on_it(qtbot):
    jobs = Background("test-background")
    seen: list = []
    gui = QThread.currentThread()

    def work(_cancel):
        return QThread.currentThread() is not gui

    jobs.run(work, lambda off_gui: seen.append((off_gui, QThread.currentThread() is gui)))
    qtbot.waitUntil(lambda: bool(seen), timeout=MS)
    assert seen == [(True, True)]
    qtbot.waitUntil(lambda: not background._RUNNING, timeout=MS)  # the thread ended with its job


def test_failures_take_the_one_error_path_with_a_sentence(qtbot):
    jobs = Background("test-background")
    errors: list = []

    def broken(_cancel):
        raise OSError("port 8000 is taken")

    def worded(_cancel):
        raise GlmdeskError("load_failed", "The server did not start.", detail="no port")

    jobs.run(broken, failed=errors.append)
    jobs.run(worded, failed=errors.append)
    qtbot.waitUntil(lambda: len(errors) == 2, timeout=MS)
    messages = sorted(e.message for e in errors)
    assert messages == ["OSError: port 8000 is taken", "The server did not start."]


def test_a_cancelled_job_reports_nothing(qtbot):
    jobs = Background("test-background", QObject())
    go, started, seen = threading.Event(), threading.Event(), []

    def slow(cancel):
        started.set()
        go.wait(MS / 1000)
        return cancel.is_set()

    jobs.run(slow, seen.append)
    assert started.wait(MS / 1000) and jobs.busy()
    jobs.close()  # the window closes while the job runs
    go.set()
    qtbot.waitUntil(lambda: not background._RUNNING, timeout=MS)
    assert seen == [] and not jobs.busy()
