"""The window's reads and writes of the chat history, and the one place their failures show.

A plain QObject on the GUI thread, built by the window's composition root and given to
everything that touches the history (the panel, the controller, the Tools memory). It
reads with the GUI thread's :class:`History`; every write goes through a
:class:`~glmdesk.ui.history.history_writes.WriteQueue` to the history writer's own thread
(issue 19, item 4: a 2 MB message and its full-text index take seconds to store
under load), one at a time, in order.

Failures (issue 19): every :class:`HistoryError`, of the chat's writes, of the
history panel's (rename, delete, import...) and of reads, reaches
:meth:`HistoryAccess.report` and is shown once in the window's notice bar. A
write that failed (a full disk) waits at the head of the queue and is retried
every :data:`RETRY_MS` ms; the window keeps showing the conversation meanwhile.
:meth:`HistoryAccess.close` (at quit) waits for every write.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QCoreApplication, QObject, QTimer, Signal, Slot

from glmdesk.core.history import History
from glmdesk.core.history_errors import HistoryError
from glmdesk.core.history_writer import HistoryWriter
from glmdesk.ui.common.messages import error_sentence
from glmdesk.ui.history.history_writes import WriteQueue

#: Milliseconds between retries of writes that failed.
RETRY_MS = 5000


class HistoryAccess(QObject):
    """Reads and queued writes of a :class:`History`, their failures shown once.

    Args:
        history: The open database (read on the GUI thread).
        notice: Where failures are shown (a :class:`NoticeBar`), or ``None``.
        writer: Where writes run; default: a :class:`HistoryWriter` of ``history``'s file
            (a thread with its own connection).
        parent: The owning QObject (the window).

    Attributes:
        writes: The :class:`WriteQueue` (its order, ``after_writes``, ``blocked``...).

    Signals:
        drained(): Every write submitted so far is stored (or given up).
    """

    drained = Signal()

    def __init__(
        self,
        history: History,
        notice=None,
        writer: HistoryWriter | None = None,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.history = history
        self.notice = notice
        self.writes = WriteQueue(writer if writer is not None else HistoryWriter(history), RETRY_MS, self)
        self._reported: str | None = None  # the failure kind on show
        self._deferred = ""  # a failure sentence to show after the current signal chain
        self.writes.write_failed.connect(self.report)
        self.writes.write_recovered.connect(self._on_write_recovered)
        self.writes.drained.connect(self._on_drained)

    @property
    def writer(self) -> HistoryWriter:
        """The history writer (its thread and connection)."""
        return self.writes.writer

    def close(self) -> None:
        """Wait for every write (a waiting one is tried once more), then close the writer."""
        self.writes.close()

    def write(
        self, run: Callable[[History], Any], then: Callable[[Any], object] | None = None, **options: bool
    ) -> None:
        """Queue a write of the history panel or the window (failures reach :meth:`report`).

        Args:
            run: ``run(history)`` on the writer thread (one transaction).
            then: Called on the GUI thread with its result once stored.
            options: ``droppable`` (default ``True``: a failed rename is not retried) and
                ``again`` (default ``True``: the user acted, so a failure is news).
        """
        self.writes.submit(
            run, then=then, droppable=options.get("droppable", True), again=options.get("again", True)
        )

    def read(self, read: Callable[[], Any], again: bool = False) -> tuple[bool, Any]:
        """Run a read of the GUI thread's history: ``(True, value)``, or ``(False, None)``
        after a :class:`HistoryError` (shown once; ``again``: even if its kind is on show)."""
        try:
            return True, read()
        except HistoryError as exc:
            self.report(exc, again)
            return False, None

    @Slot(object, bool)
    def report(self, error: HistoryError, again: bool = False) -> None:
        """Show a history failure once in the window (``again``: even if this kind is on show)."""
        if (again or error.kind != self._reported) and self.notice is not None:
            self._deferred = error_sentence(error.info)
            # After the current signal chain: the window clears its notice bar as an answer starts.
            QTimer.singleShot(0, self._show_deferred)
        self._reported = error.kind

    @Slot()
    def _show_deferred(self) -> None:
        if self._deferred and self.notice is not None:
            self.notice.show_error(self._deferred)
        self._deferred = ""

    @Slot()
    def _on_write_recovered(self) -> None:
        if self._reported is not None and self.notice is not None:
            # The controller's translation context: the sentence predates this module.
            self.notice.show_info(
                QCoreApplication.translate("HistoryController", "The chat history is saved again.")
            )
        self._reported = None

    @Slot()
    def _on_drained(self) -> None:
        if not self.writes.blocked():
            self._reported = None  # storage works: a later failure is news again
        self.drained.emit()
