"""The window's history writes, in order, off the GUI thread (issue 19, items 3 and 4).

A :class:`WriteQueue` hands each write to the
:class:`~glmdesk.core.history_writer.HistoryWriter` (its own thread and
connection) one at a time and learns the outcome through a queued signal, so the
GUI thread never waits for SQLite: storing a 2 MB message and its full-text index
(250 ms idle, seconds under load) happens while the window keeps answering.

Rules:

- Writes run one at a time, in the order submitted; a write is a callable
  ``write(history)`` on the writer's history, usually one transaction.
- A write that fails with a :class:`HistoryError` is reported (:attr:`WriteQueue.write_failed`,
  which the history controller shows once in the window). A *droppable* write (a
  checkpoint, the start of a round, a rename) is then given up; any other write
  stays at the head of the queue, and the queue waits and tries it again every
  ``retry_ms`` ms, so later writes never overtake it.
- ``KeyError`` (its conversation was erased meanwhile) ends a write silently.
- Reads that must see what was written wait for the queue (:meth:`WriteQueue.after_writes`);
  :meth:`WriteQueue.flush` waits in place (quit, tests).
"""

from __future__ import annotations

import collections
import concurrent.futures
import dataclasses
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from PySide6.QtCore import QObject, QTimer, Signal, Slot

from glmdesk.core.history_errors import HistoryError
from glmdesk.core.history_writer import HistoryWriter


@dataclasses.dataclass(eq=False)
class Write:
    """One queued write and what to do when it is stored."""

    run: Callable[[Any], Any]
    then: Callable[[Any], object] | None = None  # on the GUI thread, with the result
    droppable: bool = False  # a failure is reported, not retried
    again: bool = False  # report a failure even if its kind was reported before
    quiet: bool = False  # storing it changes nothing shown (a checkpoint): no ``drained`` for it
    retried: bool = False  # it failed at least once
    future: Future | None = None
    handled: bool = False


class WriteQueue(QObject):
    """Runs history writes on the writer thread, in order, retrying failed ones.

    Args:
        writer: The history writer (a thread with its own connection).
        retry_ms: Milliseconds between tries of a write that failed.
        parent: The owning QObject.

    Signals:
        write_failed(HistoryError, bool): A write failed (the error, whether to report it
            even if this kind was reported before).
        write_recovered(): A write that had failed is stored now.
        drained(): Writes were stored (not only quiet ones) and nothing is queued any more.
    """

    write_failed = Signal(object, bool)
    write_recovered = Signal()
    drained = Signal()
    _done = Signal(object, object)  # (Write, the Future of this try), from the writer thread

    def __init__(self, writer: HistoryWriter, retry_ms: int, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.writer = writer
        self._queue: collections.deque[Write] = collections.deque()
        self._in_flight: Write | None = None
        self._blocked = False  # the head failed and waits for its retry
        self._after: list[Callable[[], None]] = []
        self._stored = False  # a write that is not quiet was stored since the last ``drained``
        self._retry = QTimer(self)
        self._retry.setSingleShot(True)
        self._retry.setInterval(retry_ms)
        self._retry.timeout.connect(self.retry)
        self._done.connect(self._on_done)

    # -- state ----------------------------------------------------------------------
    def pending(self) -> int:
        """Writes not stored yet (queued, in flight or waiting for a retry)."""
        return len(self._queue)

    def blocked(self) -> bool:
        """Whether a failed write waits for its retry (then nothing after it runs)."""
        return self._blocked

    def busy(self) -> bool:
        """Whether a write is running or about to run (reads would not see it yet)."""
        return self._in_flight is not None or (bool(self._queue) and not self._blocked)

    # -- submitting -------------------------------------------------------------------
    def submit(
        self,
        run: Callable[[Any], Any],
        *,
        then: Callable[[Any], object] | None = None,
        droppable: bool = False,
        again: bool = False,
        quiet: bool = False,
    ) -> None:
        """Queue ``run(history)`` after every write before it (see the module docstring).

        Args:
            run: The write, run on the writer thread with the writer's history.
            then: Called on the GUI thread with the result once it is stored.
            droppable: Give it up after one failure instead of retrying it.
            again: Report a failure even if its kind was reported before (the user acts anew).
            quiet: Storing it changes nothing the window shows (a checkpoint of the answer
                being written): it alone does not emit :attr:`drained`.
        """
        self._queue.append(Write(run, then, droppable, again, quiet))
        self._pump()

    def after_writes(self, read: Callable[[], None]) -> None:
        """Run ``read`` now if no write is running or due, else once they are stored or waiting."""
        if self.busy():
            self._after.append(read)
        else:
            read()

    def retry(self, again: bool = False) -> None:
        """Try the write that failed now (``again``: report it anew if it fails again)."""
        self._retry.stop()
        if self._blocked:
            self._blocked = False
            self._queue[0].again = self._queue[0].again or again
        self._pump()

    def flush(self, timeout_s: float | None = None) -> bool:
        """Wait here until every queued write is stored or the head failed (quit, tests).

        Args:
            timeout_s: Most seconds to wait for one write; ``None`` waits as long as it takes.

        Returns:
            Whether nothing waits any more.
        """
        while self._in_flight is not None or (self._queue and not self._blocked):
            if self._in_flight is None:
                self._pump()
                continue
            write = self._in_flight
            future = write.future
            if future is None:  # _pump submits a write as it puts it in flight
                raise RuntimeError("A history write is in flight without having been submitted.")
            done, _ = concurrent.futures.wait([future], timeout=timeout_s)
            if not done:
                break
            self._on_done(write, future)
        return not self._queue

    def close(self) -> None:
        """Try a waiting write once more, wait for every write, close the writer (idempotent)."""
        self._retry.stop()
        if self._blocked:
            self.retry()
        self.flush()
        self._retry.stop()
        self.writer.close()

    # -- running ------------------------------------------------------------------------
    def _pump(self) -> None:
        if self._in_flight is not None or self._blocked:
            return
        if not self._queue:
            self._run_after()
            return
        write = self._queue[0]
        self._in_flight = write
        write.future = self.writer.submit(write.run)
        write.future.add_done_callback(lambda future, write=write: self._emit_done(write, future))

    def _emit_done(self, write: Write, future: Future) -> None:
        try:
            self._done.emit(write, future)  # queued to the GUI thread (direct when written in place)
        except RuntimeError:  # the queue was deleted meanwhile (window closing)
            pass

    @Slot(object, object)
    def _on_done(self, write: Write, future: Future) -> None:
        if write.handled or write is not self._in_flight or future is not write.future:
            return  # flush() took it already (or it is an earlier try's news)
        write.handled = True
        self._in_flight = None
        error = future.exception()
        if isinstance(error, HistoryError):
            self._failed(write, error)
            return
        self._queue.popleft()
        if error is not None and not isinstance(error, KeyError):
            self._pump()
            raise error  # glmdesk's own mistake: not to be hidden
        if write.retried:
            self.write_recovered.emit()
        if error is None and write.then is not None:
            write.then(future.result())
        self._stored = self._stored or not write.quiet
        if not self._queue and self._stored:
            self._stored = False
            self.drained.emit()
        self._pump()

    def _failed(self, write: Write, error: HistoryError) -> None:
        if write.droppable:
            self._queue.popleft()
        else:
            write.retried, write.handled, write.future = True, False, None
            self._blocked = True
            self._retry.start()
        self.write_failed.emit(error, write.again)
        write.again = False
        self._pump()
        if self._blocked:
            self._run_after()  # what is stored will not change before the retry

    def _run_after(self) -> None:
        reads, self._after = self._after, []
        for read in reads:
            read()
