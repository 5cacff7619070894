"""The sidebar's "Thinking" switch: reasoning on or off for the next answer.

A checkbox in the Sampling section. For a model whose template has a thinking switch
(GLM-4.5/4.6/4.7's ``enable_thinking``; ``Capabilities.thinking_switch``) it sets
``SamplingParams.enable_thinking`` of the next answer (off: the template's
``/nothink`` and empty ``<think></think>``); for any other model it is greyed and
unticked (that model does not think on request), and its tooltip and the caption under
it say why. The user's choice is kept while greyed, so a GLM-4.5 model loaded later
finds it as the user left it.
"""

from __future__ import annotations

from PySide6.QtCore import Signal, Slot
from PySide6.QtWidgets import QCheckBox, QVBoxLayout, QWidget

from glmdesk.ui.sidebar.slider_spin import ReasonLine


class ThinkingSwitch(QWidget):
    """The switch and the caption that says why it is greyed.

    Signals:
        toggled_value(): The user turned it on or off.
    """

    toggled_value = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.box = QCheckBox(self.tr("Thinking"))
        self.box.setChecked(True)
        self.reason = ReasonLine("")
        self.reason.setObjectName("thinking_reason")
        column = QVBoxLayout(self)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(0)
        column.addWidget(self.box)
        column.addWidget(self.reason)
        self.box.toggled.connect(self._on_toggled)
        self._updating = False
        self._choice = True  # the user's last choice, shown again when a model has the switch
        self.set_available(False, self.tr("Load a model first."))

    def set_available(self, available: bool, reason: str = "") -> None:
        """Enable the switch for a model that has one (showing the user's choice), else
        grey and untick it with ``reason`` in its tooltip and caption; emits nothing."""
        self.box.setEnabled(available)
        self._show_checked(self._choice if available else False)
        tip = (
            self.tr(
                "On: the model reasons first (shown as Thinking). Off: it answers at once. From the next answer."
            )
            if available
            else reason
        )
        self.box.setToolTip(tip)
        self.reason.setText("" if available else reason)
        self.reason.setVisible(not available and bool(reason))

    def value(self) -> bool | None:
        """``SamplingParams.enable_thinking`` for the next answer: the switch's state, or
        ``None`` (the model's own setting) while it is greyed."""
        return self.box.isChecked() if self.box.isEnabled() else None

    def show_value(self, enable: bool | None) -> None:
        """Show a saved state (``None``: leave it as it is); emits nothing."""
        if enable is None:
            return
        self._choice = enable
        if self.box.isEnabled():
            self._show_checked(enable)

    def _show_checked(self, checked: bool) -> None:
        self._updating = True
        try:
            self.box.setChecked(checked)
        finally:
            self._updating = False

    @Slot(bool)
    def _on_toggled(self, checked: bool) -> None:
        if not self._updating:
            self._choice = checked
            self.toggled_value.emit()
