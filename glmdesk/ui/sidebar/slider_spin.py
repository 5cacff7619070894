"""A slider paired with a spin box for one float setting, and the sidebar's caption labels."""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt, Slot
from PySide6.QtGui import QPainter, QPaintEvent, QPalette
from PySide6.QtWidgets import QDoubleSpinBox, QHBoxLayout, QLabel, QSizePolicy, QSlider, QWidget


def caption(text: str) -> QLabel:
    """A small, quiet, wrapped label that explains the row above it."""
    label = QLabel(text)
    label.setWordWrap(True)
    label.setForegroundRole(QPalette.ColorRole.PlaceholderText)
    font = label.font()
    font.setPointSizeF(max(6.0, font.pointSizeF() * 0.9))
    label.setFont(font)
    return label


class ReasonLine(QLabel):
    """A quiet caption kept to one line under a greyed control: its text elided to the
    width, whole in its tooltip (``text()`` stays whole)."""

    def __init__(self, text: str = "") -> None:
        super().__init__(text)
        self.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        font = self.font()
        font.setPointSizeF(max(6.0, font.pointSizeF() * 0.9))
        self.setFont(font)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self.setToolTip(text)

    def setText(self, text: str) -> None:  # noqa: N802 (Qt's name)
        super().setText(text)
        self.setToolTip(text)

    def minimumSizeHint(self) -> QSize:  # noqa: N802 (Qt's name)
        return QSize(0, super().minimumSizeHint().height())

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 (Qt's name)
        shown = self.fontMetrics().elidedText(self.text(), Qt.TextElideMode.ElideRight, self.width())
        painter = QPainter(self)
        self.style().drawItemText(
            painter,
            self.rect(),
            int(self.alignment()),
            self.palette(),
            self.isEnabled(),
            shown,
            self.foregroundRole(),
        )


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
