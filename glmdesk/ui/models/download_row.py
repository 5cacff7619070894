"""One download on the "Get a model" page: its name, a progress bar, bytes, speed and
time left, and Pause / Resume, Cancel, and Load once it is finished."""

from __future__ import annotations

from PySide6.QtCore import Signal, Slot
from PySide6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QPushButton, QVBoxLayout, QWidget

from glmdesk.engine.forecast import gib


def _clock(seconds: float | None) -> str:
    if seconds is None:
        return "--:--"
    seconds = int(seconds)
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


class DownloadRow(QWidget):
    """A download's row (object name ``download_row``).

    Args:
        title: ``repo QUANT``.
        parent: Parent widget.

    Signals:
        pause_clicked(): Pause (or Resume, when paused) was pressed.
        cancel_clicked(): Cancel was pressed.
        load_clicked(): Load was pressed (a finished model).
    """

    pause_clicked = Signal()
    cancel_clicked = Signal()
    load_clicked = Signal()

    def __init__(self, title: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("download_row")
        self.title = QLabel(title)
        self.bar = QProgressBar()
        self.bar.setRange(0, 1000)
        self.detail = QLabel(self.tr("Waiting..."))
        self.detail.setObjectName("download_detail")
        self.detail.setWordWrap(True)
        self.pause_button = QPushButton(self.tr("Pause"))
        self.cancel_button = QPushButton(self.tr("Cancel"))
        self.load_button = QPushButton(self.tr("Load"))
        self.load_button.hide()
        self.pause_button.clicked.connect(self.pause_clicked)
        self.cancel_button.clicked.connect(self.cancel_clicked)
        self.load_button.clicked.connect(self.load_clicked)
        top = QHBoxLayout()
        top.addWidget(self.title, 1)
        for button in (self.pause_button, self.cancel_button, self.load_button):
            top.addWidget(button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 4, 0, 4)
        layout.addLayout(top)
        layout.addWidget(self.bar)
        layout.addWidget(self.detail)
        self.paused = False

    @Slot(object)
    def show_progress(self, p) -> None:
        """Show a :class:`~glmdesk.engine.catalog.pull.PullProgress`."""
        if p.total_bytes:
            self.bar.setValue(int(1000 * p.done_bytes / p.total_bytes))
        sizes = self.tr("{done} of {total}").format(done=gib(p.done_bytes), total=gib(p.total_bytes))
        if p.stage == "resuming":
            self.detail.setText(self.tr("Resuming: {sizes} already here.").format(sizes=sizes))
        elif p.stage == "verifying":
            self.detail.setText(
                self.tr("{sizes}: checking {file} against the hub's hash...").format(sizes=sizes, file=p.file)
            )
        elif p.stage == "linked":
            self.detail.setText(
                self.tr("{sizes}: {file} taken from the hub's cache.").format(sizes=sizes, file=p.file)
            )
        elif p.stage == "downloading":
            speed = self.tr("{rate}/s").format(rate=gib(int(p.bytes_per_s))) if p.bytes_per_s else "..."
            self.detail.setText(
                self.tr("{sizes}, {speed}, {eta} left (file {index} of {count})").format(
                    sizes=sizes, speed=speed, eta=_clock(p.eta_s), index=p.file_index, count=p.file_count
                )
            )

    def show_paused(self) -> None:
        """The download stopped and keeps its bytes: Resume continues it."""
        self.paused = True
        self.pause_button.setText(self.tr("Resume"))
        self.detail.setText(self.tr("Paused: what was fetched is kept; Resume goes on from there."))

    def show_running(self) -> None:
        """The download runs (again)."""
        self.paused = False
        self.pause_button.setText(self.tr("Pause"))
        self.detail.setText(self.tr("Waiting..."))

    def show_finished(self, folder: str) -> None:
        """Finished and checked: Load is offered."""
        self.bar.setValue(1000)
        self.detail.setText(self.tr("Downloaded and checked: {folder}").format(folder=folder))
        self.pause_button.hide()
        self.cancel_button.hide()
        self.load_button.show()

    def show_failed(self, sentence: str) -> None:
        """Stopped by an error; Resume tries again."""
        self.paused = True
        self.pause_button.setText(self.tr("Retry"))
        self.detail.setText(sentence)
        self.detail.setStyleSheet("color: #c0392b;")
