"""The sidebar's "Reasoning effort" choice: how hard a model thinks, for the next answer.

A combo box under the Thinking switch. Its levels are the loaded model's
(``ModelInfo.effort_levels``, read from its chat template: GLM-5.2 high / max, GLM-5.3
low / high / max), first "Model default" (the template's own choice). A chosen level goes
to the chat template as ``reasoning_effort`` (``SamplingParams.template_kwargs``) from the
next answer. For a model without levels it is greyed, and its tooltip and caption say why.
"""

from __future__ import annotations

from PySide6.QtCore import Signal, Slot
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from glmdesk.ui.sidebar.slider_spin import ReasonLine

#: The template value this choice sets.
EFFORT = "reasoning_effort"


class EffortChoice(QWidget):
    """The level box and the caption that says why it is greyed.

    Signals:
        changed(): The user chose another level.
    """

    changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.box = QComboBox()
        self.box.setObjectName("reasoning_effort")
        self.label = QLabel(self.tr("Reasoning effort"))
        self.reason = ReasonLine("")
        self.reason.setObjectName("effort_reason")
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.label)
        row.addWidget(self.box, 1)
        column = QVBoxLayout(self)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(0)
        column.addLayout(row)
        column.addWidget(self.reason)
        self._updating = False
        self.box.currentIndexChanged.connect(self._on_changed)
        self.set_levels((), self.tr("Load a model first."))

    def set_levels(self, levels: tuple[str, ...], reason: str = "") -> None:
        """Offer ``levels`` (``()``: grey the box with ``reason``); the choice goes back to
        the model's default. Emits nothing."""
        self._updating = True
        try:
            self.box.clear()
            self.box.addItem(self.tr("Model default"), None)
            for level in levels:
                self.box.addItem(level, level)
        finally:
            self._updating = False
        available = bool(levels)
        self.box.setEnabled(available)
        tip = (
            self.tr(
                "How hard the model thinks before it answers, as its chat template offers. From the next answer."
            )
            if available
            else reason
        )
        self.box.setToolTip(tip)
        self.reason.setText("" if available else reason)
        self.reason.setVisible(not available and bool(reason))

    def value(self) -> str | None:
        """The chosen level, or ``None`` (the model's default, or no levels)."""
        return self.box.currentData() if self.box.isEnabled() else None

    def template_kwargs(self, kwargs: tuple[tuple[str, object], ...]) -> tuple[tuple[str, object], ...]:
        """``kwargs`` with :data:`EFFORT` set to the chosen level (or left out)."""
        rest = tuple((k, v) for k, v in kwargs if k != EFFORT)
        level = self.value()
        return rest if level is None else (*rest, (EFFORT, level))

    @Slot(int)
    def _on_changed(self, _index: int) -> None:
        if not self._updating:
            self.changed.emit()
