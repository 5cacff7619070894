"""A slider paired with a spin box for one float setting, and the sidebar's caption label."""

from __future__ import annotations

from PySide6.QtCore import Qt, Slot
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QDoubleSpinBox, QHBoxLayout, QLabel, QSlider, QWidget


def caption(text: str) -> QLabel:
    """A small, quiet, wrapped label that explains the row above it."""
    label = QLabel(text)
    label.setWordWrap(True)
    label.setForegroundRole(QPalette.ColorRole.PlaceholderText)
    font = label.font()
    font.setPointSizeF(max(6.0, font.pointSizeF() * 0.9))
    label.setFont(font)
    return label


class SliderSpin(QWidget):
    """A slider and a spin box showing one float value (the spin box is the source of truth)."""

    def __init__(self, minimum: float, maximum: float, step: float, decimals: int, slider_min=None) -> None:
        super().__init__()
        self.scale = round(1 / step)
        self.spin = QDoubleSpinBox()
        self.spin.setRange(minimum, maximum)
        self.spin.setSingleStep(step)
        self.spin.setDecimals(decimals)
        self.spin.setKeyboardTracking(False)
        self.slider = QSlider(Qt.Orientation.Horizontal)
        low = minimum if slider_min is None else slider_min
        self.slider.setRange(round(low * self.scale), round(maximum * self.scale))
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.slider, 1)
        layout.addWidget(self.spin)
        self.slider.valueChanged.connect(self._slider_moved)
        self.spin.valueChanged.connect(self._spin_changed)

    @Slot(int)
    def _slider_moved(self, value: int) -> None:
        self.spin.setValue(value / self.scale)

    @Slot(float)
    def _spin_changed(self, value: float) -> None:
        self.slider.blockSignals(True)
        self.slider.setValue(round(value * self.scale))
        self.slider.blockSignals(False)

    def value(self) -> float:
        """The value, rounded to the spin box's decimals."""
        return round(self.spin.value(), self.spin.decimals())

    def set_value(self, value: float) -> None:
        """Show ``value`` in both controls."""
        self.spin.setValue(value)
