"""The memory plot's scale, time axis and hover values."""

from __future__ import annotations

from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QMouseEvent
from PySide6.QtWidgets import QApplication

from glmdesk.engine.memory import MemoryProbe
from glmdesk.ui.sidebar.memory_gauge import MemoryGauge, scale_step

WAIT_MS = 10_000


def test_scale_steps_are_round_mib_or_gib() -> None:
    assert scale_step(300) == 100
    assert scale_step(700) == 500
    assert scale_step(1000) == 500
    assert scale_step(3 * 1024) == 1024
    assert scale_step(20 * 1024) == 10 * 1024
    assert scale_step(141 * 1024) == 50 * 1024
    assert scale_step(0) == 0.5


def test_hover_shows_the_values_of_the_sample_under_the_mouse(qtbot) -> None:
    gauge = MemoryGauge(MemoryProbe())
    qtbot.addWidget(gauge)
    gauge.resize(360, 200)
    gauge.show()
    qtbot.waitUntil(lambda: gauge.probe.fallback != "probing", timeout=WAIT_MS)
    gauge.set_weights_bytes(200 * 1024 * 1024)
    for _ in range(4):
        gauge.poll()
    plot = gauge.plot
    qtbot.waitExposed(plot)
    area = plot._area()
    top, step = plot.top_mib()
    assert top >= max(s.used_mib for s in gauge.history) and top % step == 0

    newest = plot.sample_index_at(area.right())
    assert newest == len(gauge.history) - 1
    assert plot.sample_index_at(area.left() - 20) is None  # on the scale's labels
    text = plot.tooltip_text(newest)
    assert text.startswith("now") and "weights 200 MiB" in text and "used " in text
    assert plot.tooltip_text(newest - 2).startswith("1 s ago")

    event = QMouseEvent(
        QMouseEvent.Type.MouseMove,
        QPointF(area.right() - 1, area.center().y()),
        QPointF(plot.mapToGlobal(QPoint(int(area.right() - 1), int(area.center().y())))),
        Qt.MouseButton.NoButton,
        Qt.MouseButton.NoButton,
        Qt.KeyboardModifier.NoModifier,
    )
    QApplication.sendEvent(plot, event)
    assert plot.hover_index == newest
    image = plot.grab().toImage()  # paints the axes, bands and hover line without error
    assert not image.isNull()
    gauge.stop()
