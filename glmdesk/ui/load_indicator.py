"""Loading progress in the status bar: the stage, a bar (busy when the size is unknown), Cancel."""

from __future__ import annotations

from PySide6.QtCore import Signal, Slot
from PySide6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QPushButton, QWidget


class LoadIndicator(QWidget):
    """Shows a model load in progress; hidden otherwise.

    Signals:
        cancel_requested(): The user pressed Cancel.
    """

    cancel_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("load_indicator")
        self.stage_label = QLabel()
        self.bar = QProgressBar()
        self.bar.setMaximumWidth(160)
        self.bar.setMaximumHeight(16)
        self.bar.setTextVisible(False)
        self.cancel_button = QPushButton(self.tr("Cancel"))
        self.cancel_button.setToolTip(self.tr("Stop loading; the previous model stays in use"))
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.stage_label)
        layout.addWidget(self.bar)
        layout.addWidget(self.cancel_button)
        self.cancel_button.clicked.connect(self._on_cancel)
        self.hide()

    def stage_text(self, stage: str) -> str:
        """The words for a loader stage."""
        names = {
            "resolving": self.tr("Finding the model"),
            "converting": self.tr("Converting (first use only)"),
            "checking": self.tr("Checking weight files"),
            "loading": self.tr("Loading weights"),
            "quantizing": self.tr("Quantizing weights"),
            "preparing": self.tr("Preparing"),
            "compiling": self.tr("Compiling the decode step (1-2 minutes the first time)"),
            "ready": self.tr("Ready"),
        }
        return names.get(stage, stage)

    def start(self, name: str) -> None:
        """Show the indicator for loading ``name``."""
        self.stage_label.setText(self.tr("Loading {name}...").format(name=name))
        self.bar.setRange(0, 0)
        self.cancel_button.setEnabled(True)
        self.show()

    def update_progress(self, stage: str, done: int, total: int) -> None:
        """Show one progress report (``total == 0``: size unknown, the bar is busy)."""
        if total > 0:
            self.bar.setRange(0, total)
            self.bar.setValue(min(done, total))
            self.stage_label.setText(
                self.tr("{stage}: {done} of {total}").format(
                    stage=self.stage_text(stage), done=done, total=total
                )
            )
        else:
            self.bar.setRange(0, 0)
            self.stage_label.setText(self.stage_text(stage))

    def finish(self) -> None:
        """Hide the indicator."""
        self.hide()

    @Slot()
    def _on_cancel(self) -> None:
        self.cancel_button.setEnabled(False)
        self.stage_label.setText(self.tr("Cancelling..."))
        self.cancel_requested.emit()
