"""Loading progress in the status bar: the stage, a bar (busy when the size is unknown), Cancel.

A stage whose size is unknown (``total == 0``: the first conversion of a GGUF file,
reading a hub model's metadata) shows a moving busy bar and the seconds elapsed,
updated every second, so a long step never looks frozen.
"""

from __future__ import annotations

from PySide6.QtCore import QElapsedTimer, QTimer, Signal, Slot
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
        self._busy_text = ""
        self._elapsed = QElapsedTimer()
        self._ticker = QTimer(self)
        self._ticker.setInterval(1000)
        self._ticker.timeout.connect(self._show_elapsed)
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
        self._set_busy(self.tr("Loading {name}...").format(name=name))
        self.cancel_button.setEnabled(True)
        self.show()

    def update_progress(self, stage: str, done: int, total: int) -> None:
        """Show one progress report (``total == 0``: size unknown, the bar is busy)."""
        if total > 0:
            self._ticker.stop()
            self._busy_text = ""
            self.bar.setRange(0, total)
            self.bar.setValue(min(done, total))
            self.stage_label.setText(
                self.tr("{stage}: {done} of {total}").format(
                    stage=self.stage_text(stage), done=done, total=total
                )
            )
        elif self.stage_text(stage) != self._busy_text:
            self._set_busy(self.stage_text(stage))

    def _set_busy(self, text: str) -> None:
        self._busy_text = text
        self.bar.setRange(0, 0)  # Qt's busy indicator
        self.stage_label.setText(text)
        self._elapsed.start()
        self._ticker.start()

    @Slot()
    def _show_elapsed(self) -> None:
        seconds = self._elapsed.elapsed() // 1000
        if self._busy_text and seconds >= 1:
            self.stage_label.setText(
                self.tr("{stage} ({seconds} s)").format(stage=self._busy_text, seconds=seconds)
            )

    def finish(self) -> None:
        """Hide the indicator."""
        self._ticker.stop()
        self._busy_text = ""
        self.hide()

    @Slot()
    def _on_cancel(self) -> None:
        self._ticker.stop()
        self._busy_text = ""
        self.cancel_button.setEnabled(False)
        self.stage_label.setText(self.tr("Cancelling..."))
        self.cancel_requested.emit()
