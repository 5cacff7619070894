"""The sidebar's sampling controls, one per row of the sampling table.

Each :class:`~glmdesk.core.sampling_fields.SamplingField` row becomes a
:class:`SamplingControl`: a slider with a spin box, a spin box or a text entry, with
the row's range, step, tooltip and texts translated in the ``Sidebar`` context (the
rows mark their strings for lupdate in that context).
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QCoreApplication
from PySide6.QtGui import QRegularExpressionValidator
from PySide6.QtWidgets import QDoubleSpinBox, QLineEdit, QSpinBox

from glmdesk.core.sampling_fields import SamplingField
from glmdesk.ui.sidebar.slider_spin import SliderSpin

#: The translation context of the rows' strings (``QT_TRANSLATE_NOOP("Sidebar", ...)``).
CONTEXT = "Sidebar"

#: The widgets a row can become.
Control = SliderSpin | QLineEdit | QSpinBox | QDoubleSpinBox


def translated(text: str) -> str:
    """``text`` (a row's English string) in the interface language; empty stays empty."""
    return QCoreApplication.translate(CONTEXT, text) if text else ""


class SamplingControl:
    """One sampling field's control, built from its row.

    Args:
        row: The field's row.

    Attributes:
        row: The row.
        widget: The control to place in a form (a :class:`SliderSpin`, ``QSpinBox``,
            ``QDoubleSpinBox`` or ``QLineEdit``).
        label: The row's label, translated.
    """

    def __init__(self, row: SamplingField) -> None:
        self.row = row
        self.label = translated(row.label)
        self.widget = self._build()
        if row.tooltip:
            self.widget.setToolTip(translated(row.tooltip))

    def _build(self) -> Control:
        row = self.row
        low, high = row.bounds
        if row.control == "slider":
            return SliderSpin(low, high, row.step, row.decimals, slider_min=row.slider_minimum)
        if row.control == "entry":  # a whole number 0 or more, or empty (None)
            entry = QLineEdit()
            entry.setPlaceholderText(translated(row.special_text))
            entry.setValidator(QRegularExpressionValidator(rf"\d{{0,{len(str(int(row.maximum or 0)))}}}"))
            return entry
        spin: QSpinBox | QDoubleSpinBox
        if row.type is int:
            spin = QSpinBox()
            spin.setRange(int(low), int(high))
            if row.step != 1:
                spin.setSingleStep(int(row.step))
        else:
            spin = QDoubleSpinBox()
            spin.setDecimals(row.decimals)
            spin.setRange(low, high)
            if row.step != 1:
                spin.setSingleStep(row.step)
        spin.setKeyboardTracking(False)
        if row.special_text:
            spin.setSpecialValueText(translated(row.special_text))
        if row.suffix:
            spin.setSuffix(translated(row.suffix))
        return spin

    def value(self) -> int | float | None:
        """The value shown (floats rounded to the row's decimals; an empty entry is ``None``)."""
        widget = self.widget
        if isinstance(widget, SliderSpin):
            return widget.value()
        if isinstance(widget, QLineEdit):
            text = widget.text().strip()
            return int(text) if text else None
        if isinstance(widget, QDoubleSpinBox):
            return round(widget.value(), self.row.decimals)
        return widget.value()

    def set_value(self, value: int | float | None) -> None:
        """Show ``value``.

        Raises:
            TypeError: if ``value`` is ``None`` and the control is not an entry (only an
                entry can be empty).
        """
        widget = self.widget
        if isinstance(widget, QLineEdit):
            widget.setText("" if value is None else str(value))
            return
        if value is None:
            raise TypeError(f"The sampling field {self.row.name} cannot be empty.")
        if isinstance(widget, SliderSpin):
            widget.set_value(value)
        elif isinstance(widget, QSpinBox):
            widget.setValue(int(value))
        else:
            widget.setValue(value)

    def on_edited(self, slot: Callable[[], None]) -> None:
        """Call ``slot`` when the user changes the value (an entry: when editing finishes)."""
        widget = self.widget
        if isinstance(widget, SliderSpin):
            widget.spin.valueChanged.connect(slot)
        elif isinstance(widget, QLineEdit):
            widget.editingFinished.connect(slot)
        else:
            widget.valueChanged.connect(slot)

    def shown(self, value: int | float | None) -> str:
        """``value`` as the control writes it (``0.80`` for two decimals), for sentences."""
        if value is None:
            return ""
        if self.row.type is float:
            return f"{value:.{self.row.decimals}f}"
        return str(value)

    def refusal(self, value: int | float | None, kept: int | float | None) -> str:
        """The sidebar's sentence when the row refuses ``value`` (``kept`` stays in force),
        or ``""`` when the row accepts it or has no sentence of its own."""
        if not self.row.refused:
            return ""
        try:
            self.row.check(value)
        except ValueError:
            return translated(self.row.refused).format(
                value=self.shown(value), kept=self.shown(kept), maximum=self.row.maximum
            )
        return ""
