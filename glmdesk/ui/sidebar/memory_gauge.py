"""Live memory gauge: used / total, split into weights, KV cache and other, with a one-minute
plot (MiB/GiB scale, time axis, values on hover).

Readings come from :class:`glmdesk.engine.memory.MemoryProbe` (NVML on NVIDIA
machines, this process's memory otherwise) every :data:`POLL_INTERVAL_MS`. NVML is
initialised once on a plain background thread, so the first poll does not wait
for it; afterwards one poll costs well under a millisecond on the GUI thread.

With a remote backend (``Capabilities.memory_probe == "remote"``) this machine's memory
is not the model's: the gauge says "remote" and, when the server publishes a KV-cache
gauge on its Prometheus ``/metrics`` (vLLM, SGLang, glmdesk serve), that figure in
percent, read every :data:`REMOTE_POLL_S` on a thread of its own.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque

from PySide6.QtCore import QPointF, QRectF, QSize, Qt, QTimer, Slot
from PySide6.QtGui import QColor, QPainter, QPainterPath, QPalette, QPen
from PySide6.QtWidgets import QLabel, QSizePolicy, QToolTip, QVBoxLayout, QWidget

from glmdesk.engine.memory import MemoryProbe, MemoryReading
from glmdesk.ui.session.background import Background

POLL_INTERVAL_MS = 500
#: How often a remote server's ``/metrics`` is read, in s (vLLM refreshes it every few s).
REMOTE_POLL_S = 2.0
HISTORY_SECONDS = 60
WEIGHTS_COLOUR = QColor("#4e79a7")
KV_COLOUR = QColor("#f28e2b")
OTHER_COLOUR = QColor("#9c9c9c")


def _mib_text(mib: float) -> str:
    if mib >= 1024:
        return f"{mib / 1024:.1f} GiB"
    return f"{mib:.0f} MiB"


def scale_step(top_mib: float, lines: int = 3) -> float:
    """Spacing of the plot's horizontal lines, in MiB: 1, 2 or 5 times a power of two's
    MiB or GiB unit, so that about ``lines`` lines cover ``top_mib``.

    Args:
        top_mib: The largest value to show, in MiB (0 or less counts as 1).
        lines: Lines wanted above zero.
    """
    raw = max(top_mib, 1.0) / max(lines, 1)
    unit = 1024.0 if raw >= 512 else 1.0
    value = raw / unit
    power = 10 ** math.floor(math.log10(value))
    for factor in (1, 2, 5, 10):
        if factor * power >= value:
            return factor * power * unit
    return 10 * power * unit  # pragma: no cover - the loop always returns


class _Plot(QWidget):
    """Stacked area plot of the last minute (weights, KV cache, other) with a MiB/GiB scale
    on the left, a time axis below, and the values under the mouse in a tool tip."""

    LEFT = 52  # px for the scale's labels
    BOTTOM = 14  # px for the time axis

    def __init__(self, gauge: MemoryGauge) -> None:
        super().__init__(gauge)
        self._gauge = gauge
        self.hover_index: int | None = None
        self.setMinimumHeight(56)  # compact under the settings; the values are in its tool tip
        self.setMouseTracking(True)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)

    def sizeHint(self) -> QSize:  # noqa: N802 (Qt override)
        return QSize(220, 64)

    def _area(self) -> QRectF:
        return QRectF(self.rect()).adjusted(self.LEFT + 0.5, 4.5, -4.5, -self.BOTTOM - 0.5)

    def _step(self) -> float:
        area = self._area()
        capacity = HISTORY_SECONDS * 1000 // POLL_INTERVAL_MS
        return area.width() / max(capacity - 1, 1)

    def top_mib(self) -> tuple[float, float]:
        """The plot's top value and its line spacing, in MiB."""
        samples = self._gauge.history
        if not samples:
            return 1024.0, 512.0
        if samples[-1].source == "gpu":
            top = max(samples[-1].total_mib, 1.0)
            return top, scale_step(top)
        top = max(max(s.used_mib, s.weights_mib + s.kv_mib) for s in samples) * 1.05
        step = scale_step(top)
        return math.ceil(top / step) * step, step

    def sample_index_at(self, x: float) -> int | None:
        """Index into the gauge's history of the sample drawn nearest to ``x`` (px), or ``None``."""
        samples = self._gauge.history
        area = self._area()
        if not samples or not area.left() - 2 <= x <= area.right() + 2:
            return None
        step = self._step()
        offset = round((area.right() - x) / step) if step > 0 else 0
        index = len(samples) - 1 - offset
        return index if 0 <= index < len(samples) else None

    def tooltip_text(self, index: int) -> str:
        """The values of sample ``index`` in words."""
        sample = self._gauge.history[index]
        ago = (len(self._gauge.history) - 1 - index) * POLL_INTERVAL_MS / 1000
        when = self.tr("now") if ago < 0.5 else self.tr("{seconds} s ago").format(seconds=f"{ago:.0f}")
        return self.tr("{when}\nused {used}\nweights {weights}\nKV cache {kv}\nother {other}").format(
            when=when,
            used=_mib_text(sample.used_mib),
            weights=_mib_text(sample.weights_mib),
            kv=_mib_text(sample.kv_mib),
            other=_mib_text(sample.other_mib),
        )

    def mouseMoveEvent(self, event) -> None:  # noqa: N802 (Qt override)
        index = self.sample_index_at(event.position().x())
        self.hover_index = index
        if index is None:
            QToolTip.hideText()
        else:
            QToolTip.showText(event.globalPosition().toPoint(), self.tooltip_text(index), self)
        self.update()

    def leaveEvent(self, _event) -> None:  # noqa: N802 (Qt override)
        self.hover_index = None
        self.update()

    def paintEvent(self, _event) -> None:  # noqa: N802 (Qt override)
        samples = self._gauge.history
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        rect = self._area()
        palette = self.palette()
        quiet = palette.color(QPalette.ColorRole.PlaceholderText)
        painter.fillRect(rect, palette.color(QPalette.ColorRole.Base))
        top, step = self.top_mib()

        def y(value: float) -> float:
            return rect.bottom() - min(value / top, 1.0) * rect.height()

        self._draw_axes(painter, rect, top, step, y, quiet)
        if samples:
            self._draw_bands(painter, rect, samples, y)
        painter.setPen(QPen(palette.color(QPalette.ColorRole.Mid), 1))
        painter.drawRect(rect)

    def _draw_axes(self, painter: QPainter, rect: QRectF, top: float, step: float, y, quiet) -> None:
        font = painter.font()
        font.setPointSizeF(max(6.0, font.pointSizeF() * 0.8))
        painter.setFont(font)
        grid = QColor(quiet)
        grid.setAlpha(70)
        value = 0.0
        while value <= top + 1e-6:
            level = y(value)
            painter.setPen(QPen(grid, 1, Qt.PenStyle.DotLine))
            painter.drawLine(QPointF(rect.left(), level), QPointF(rect.right(), level))
            painter.setPen(quiet)
            label = QRectF(0, level - 8, self.LEFT - 4, 16)
            painter.drawText(
                label, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter, _mib_text(value)
            )
            value += step
        below = QRectF(rect.left(), rect.bottom() + 1, rect.width(), self.BOTTOM)
        painter.drawText(below, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop, self.tr("-60 s"))
        painter.drawText(below, Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignTop, self.tr("-30 s"))
        painter.drawText(below, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignTop, self.tr("now"))

    def _draw_bands(self, painter: QPainter, rect: QRectF, samples, y) -> None:
        step = self._step()
        x0 = rect.right() - step * (len(samples) - 1)
        # Stacked bands, bottom to top: weights, KV cache, other (up to "used").
        bands = (
            (lambda s: 0.0, lambda s: s.weights_mib, WEIGHTS_COLOUR),
            (lambda s: s.weights_mib, lambda s: s.weights_mib + s.kv_mib, KV_COLOUR),
            (
                lambda s: s.weights_mib + s.kv_mib,
                lambda s: max(s.used_mib, s.weights_mib + s.kv_mib),
                OTHER_COLOUR,
            ),
        )
        xs = [x0 + i * step for i in range(len(samples))]
        for low, high, colour in bands:
            path = QPainterPath(QPointF(xs[0], y(low(samples[0]))))
            for x, sample in zip(xs, samples, strict=True):
                path.lineTo(QPointF(x, y(high(sample))))
            for x, sample in zip(reversed(xs), reversed(samples), strict=True):
                path.lineTo(QPointF(x, y(low(sample))))
            path.closeSubpath()
            painter.fillPath(path, colour)
        if self.hover_index is not None and self.hover_index < len(xs):
            painter.setPen(QPen(self.palette().color(QPalette.ColorRole.Text), 1))
            x = xs[self.hover_index]
            painter.drawLine(QPointF(x, rect.top()), QPointF(x, rect.bottom()))


class MemoryGauge(QWidget):
    """Shows memory use on the model's device, refreshed about twice a second.

    Args:
        probe: Where readings come from (tests pass their own).
        parent: Parent widget.
    """

    def __init__(self, probe: MemoryProbe | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("memory_gauge")
        self.probe = probe or MemoryProbe()
        self.history: deque[MemoryReading] = deque(maxlen=HISTORY_SECONDS * 1000 // POLL_INTERVAL_MS)
        self.last_poll_ms = 0.0
        self.max_poll_ms = 0.0
        self.reading: MemoryReading | None = None
        self._weights_bytes = 0
        self._kv_bytes = 0
        self.remote_url: str | None = None  # the server's API URL while the model is remote
        self.remote_usage: float | None = None  # its KV-cache usage (0-1), when it says
        self._background = Background("glmdesk-gauge", self)  # NVML's start, /metrics reads
        self._remote_read: threading.Event | None = None  # the /metrics read running (its cancel)
        self._remote_read_at = 0.0

        self.title_label = QLabel()
        self.title_label.setObjectName("memory_title")
        font = self.title_label.font()
        font.setBold(True)
        self.title_label.setFont(font)
        self.amount_label = QLabel()
        self.amount_label.setWordWrap(True)
        self.split_label = QLabel()
        self.split_label.setWordWrap(True)
        self.split_label.setTextFormat(Qt.TextFormat.RichText)
        self.plot = _Plot(self)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 4, 8, 4)
        layout.setSpacing(2)
        layout.addWidget(self.title_label)
        layout.addWidget(self.amount_label)
        layout.addWidget(self.split_label)
        layout.addWidget(self.plot)

        self._initialised = threading.Event()  # NVML's start returned (stop waits for it)
        self._background.run(self._initialise)
        self.timer = QTimer(self)
        self.timer.setInterval(POLL_INTERVAL_MS)
        self.timer.timeout.connect(self.poll)
        self.timer.start()
        self.poll()

    def _initialise(self, _cancel: threading.Event) -> None:
        """On a background thread: start NVML (it may take seconds on a busy driver)."""
        try:
            self.probe.initialise()
        finally:
            self._initialised.set()

    def set_weights_bytes(self, value: int) -> None:
        """Bytes of the loaded model's weights (0 when none is loaded)."""
        self._weights_bytes = max(0, int(value))

    def set_device(self, device: str) -> None:
        """Watch the card the model was loaded on (``ModelInfo.device``, e.g. ``cuda:1``)."""
        self.probe.set_device(device)

    def show_capabilities(self, capabilities, device: str) -> None:
        """Follow a newly loaded model: its :class:`~glmdesk.engine.backends.base.Capabilities`
        say where its memory is (``memory_probe``); ``device`` is ``ModelInfo.device``.

        A remote model's memory is the server's: the gauge shows "remote" and the
        server's KV-cache usage when its ``/metrics`` has it; otherwise the local probe
        watches ``device``.
        """
        remote = capabilities is not None and capabilities.memory_probe == "remote"
        self.remote_url = capabilities.device if capabilities is not None and remote else None
        self.remote_usage = None
        if self._remote_read is not None:
            self._remote_read.set()  # a read still running is not reported
        self._remote_read, self._remote_read_at = None, 0.0
        for widget in (self.split_label, self.plot):
            widget.setVisible(not remote)
        if not remote:
            self.set_device(device)
        self.poll()

    def set_kv_bytes(self, value: int) -> None:
        """Bytes the KV cache holds now (from the last chunk)."""
        self._kv_bytes = max(0, int(value))

    def source_text(self) -> str:
        """What the gauge is showing, in words (``CPU, no GPU found`` without NVIDIA)."""
        reading = self.reading
        if reading is None or reading.fallback == "probing":
            return self.tr("CPU (looking for a GPU)")
        if reading.source == "gpu":
            return self.tr("GPU: {device}").format(device=reading.device)
        return self.tr("CPU, no GPU found")

    def _fallback_tooltip(self, fallback: str | None) -> str:
        if fallback == "pynvml_missing":
            return self.tr("nvidia-ml-py is not installed, so GPU memory cannot be read.")
        if fallback == "library_not_found":
            return self.tr("The NVIDIA driver's NVML library was not found.")
        if fallback == "driver_error":
            return self.tr("The NVIDIA driver did not answer.")
        if fallback == "no_device":
            return self.tr("No NVIDIA GPU was found.")
        return ""

    def _poll_remote(self, url: str) -> None:
        """Show "remote" and the server's KV-cache usage; start the next ``/metrics`` read
        of the server at ``url`` (its API URL) on a background thread when none is running
        and :data:`REMOTE_POLL_S` have passed."""
        now = time.monotonic()
        if self._remote_read is None and now - self._remote_read_at >= REMOTE_POLL_S:
            self._remote_read = self._background.run(
                lambda _cancel: _read_remote_usage(url),
                done=self._on_remote_usage,
                failed=lambda _error: self._on_remote_usage(None),
            )
            self._remote_read_at = now
        self._show_remote(url)

    def _on_remote_usage(self, usage: float | None) -> None:
        """A ``/metrics`` read came back (0-1, or ``None`` when the server does not say)."""
        self._remote_read, self.remote_usage = None, usage
        if self.remote_url is not None:
            self._show_remote(self.remote_url)

    def _show_remote(self, url: str) -> None:
        """The title and the server's KV-cache usage for the server at ``url``."""
        self.title_label.setText(self.tr("Memory: remote"))
        self.title_label.setToolTip(
            self.tr(
                "The model runs on the server at {url}; this computer's memory is not the model's."
            ).format(url=url)
        )
        if self.remote_usage is None:
            self.amount_label.setText(self.tr("On the server at {url}").format(url=url))
        else:
            self.amount_label.setText(
                self.tr("KV cache {percent} used on the server").format(
                    percent=f"{self.remote_usage:.1%}"
                    if self.remote_usage < 0.1
                    else f"{self.remote_usage:.0%}"
                )
            )

    @Slot()
    def poll(self) -> None:
        """Take one reading and repaint; never raises."""
        if self.remote_url is not None:
            self._poll_remote(self.remote_url)
            return
        started = time.perf_counter()
        try:
            reading = self.probe.read(self._weights_bytes, self._kv_bytes)
        except Exception:  # MemoryProbe never raises; a substitute probe might
            return
        self.reading = reading
        self.history.append(reading)
        if reading.source == "gpu":
            amount = self.tr("{used} of {total} used on the GPU").format(
                used=_mib_text(reading.used_mib), total=_mib_text(reading.total_mib)
            )
        else:
            amount = self.tr("This process uses {used} of {total} RAM").format(
                used=_mib_text(reading.used_mib), total=_mib_text(reading.total_mib)
            )
        self.title_label.setText(self.source_text())
        self.title_label.setToolTip(self._fallback_tooltip(reading.fallback))
        self.amount_label.setText(amount)
        self.split_label.setText(
            self.tr(
                '<span style="color:{wc}">&#9632;</span>&nbsp;weights&nbsp;{weights} '
                '<span style="color:{kc}">&#9632;</span>&nbsp;KV&nbsp;cache&nbsp;{kv} '
                '<span style="color:{oc}">&#9632;</span>&nbsp;other&nbsp;{other}'
            ).format(
                wc=WEIGHTS_COLOUR.name(),
                kc=KV_COLOUR.name(),
                oc=OTHER_COLOUR.name(),
                weights=_mib_text(reading.weights_mib),
                kv=_mib_text(reading.kv_mib),
                other=_mib_text(reading.other_mib),
            )
        )
        self.plot.update()
        self.last_poll_ms = (time.perf_counter() - started) * 1000
        self.max_poll_ms = max(self.max_poll_ms, self.last_poll_ms)

    def stop(self) -> None:
        """Stop polling and release NVML."""
        self.timer.stop()
        self._initialised.wait(timeout=2.0)
        self.probe.close()
        self._background.close()


def _read_remote_usage(url: str) -> float | None:
    """The server's KV-cache usage (0-1) or ``None``; runs on a background thread."""
    from glmdesk.engine.backends.remote.backend import read_kv_usage  # openai and httpx only when remote

    return read_kv_usage(url)
