"""Indexing in a child process, so that the window's interpreter lock stays free.

Measured on the two-core development machine: with ``pypdf`` reading a 1,000-page PDF on a
thread of the window's process, the window's event loop stalled up to 300 ms (every Python
slot it runs waits for the lock the reading thread holds; threads alone stalled a bare ticker
60 ms). A child process (``spawn``: nothing of the window's threads or libraries is copied)
reads and writes the index; the parent thread only relays its progress and report, and
passes Cancel on.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from glmdesk.documents.indexing import IndexProgress, IndexReport, index_paths

#: Seconds the child has to stop between pages after Cancel before it is killed (a file
#: that keeps one page's reading busy must not keep the window from closing).
CANCEL_GRACE_S = 5.0

#: Document rows sent in one message.
ROWS_PER_MESSAGE = 200


def _child(database: str, files: Sequence[str], folders: Sequence[str], cancel, conn) -> None:
    """The child's work: index, sending ``("progress", IndexProgress)`` and then
    ``("report", IndexReport)`` or ``("error", str)`` through ``conn``."""
    from glmdesk.documents.store import DocumentIndex

    if hasattr(os, "nice"):
        try:
            os.nice(5)  # behind the window and the model when the cores are busy
        except OSError:
            pass
    last = [0.0]

    def progress(p: IndexProgress) -> None:  # at most 10 a second: each message costs the parent its lock
        now = time.monotonic()
        if now - last[0] >= 0.1 or p.files_done == p.files_total:
            last[0] = now
            conn.send(("progress", p))

    try:
        index = DocumentIndex(database)
        try:
            report = index_paths(index, files=files, folders=folders, cancel=cancel, progress=progress)
        finally:
            index.close()
        for field in (
            "indexed",
            "unchanged",
        ):  # in batches: one large unpickling would hold the parent's lock
            rows = getattr(report, field)
            for start in range(0, len(rows), ROWS_PER_MESSAGE):
                conn.send((field, rows[start : start + ROWS_PER_MESSAGE]))
        conn.send(("report", dataclasses.replace(report, indexed=[], unchanged=[])))
    except Exception as exc:  # noqa: BLE001 - told to the parent as a sentence, never lost
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        conn.close()


def index_in_child(
    database: str | Path,
    files: Sequence[str] = (),
    folders: Sequence[str] = (),
    cancel: threading.Event | None = None,
    progress: Callable[[IndexProgress], None] | None = None,
) -> IndexReport:
    """:func:`~glmdesk.documents.indexing.index_paths` in a child process; the caller's
    thread waits on a pipe (the interpreter lock free), relays progress and sets the child's
    cancel event when ``cancel`` is set.

    Raises:
        RuntimeError: when the child failed (its error's words) or ended without a report.
        OSError: when no child process can be started (the caller indexes in-process).
    """
    context = multiprocessing.get_context("spawn")
    receive, send = context.Pipe(duplex=False)
    child_cancel = context.Event()
    process = context.Process(
        target=_child,
        args=(str(database), list(files), list(folders), child_cancel, send),
        name="glmdesk-indexing",
        daemon=True,
    )
    process.start()
    send.close()
    rows: dict[str, list] = {"indexed": [], "unchanged": []}
    cancelled_at: float | None = None
    try:
        while True:
            if cancel is not None and cancel.is_set():
                child_cancel.set()
                cancelled_at = cancelled_at or time.monotonic()
                if time.monotonic() - cancelled_at > CANCEL_GRACE_S:  # stuck in one page: ended
                    process.kill()
                    raise RuntimeError(
                        f"the indexing process did not stop within {CANCEL_GRACE_S:.0f} s of Cancel"
                    )
            if receive.poll(0.1):
                try:
                    kind, value = receive.recv()
                except EOFError:
                    raise RuntimeError("the indexing process ended without a report") from None
                if kind == "progress":
                    if progress is not None:
                        progress(value)
                elif kind in rows:
                    rows[kind] += value
                elif kind == "report":
                    return dataclasses.replace(value, **rows)
                else:
                    raise RuntimeError(value)
            elif not process.is_alive() and not receive.poll(0):
                raise RuntimeError(
                    f"the indexing process ended without a report (exit code {process.exitcode})"
                )
    finally:
        receive.close()
        process.join(timeout=10)
        if process.is_alive():
            process.kill()
            process.join()
