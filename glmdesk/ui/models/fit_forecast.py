"""Open model's "Will it fit" line: the memory a load will take (weights, KV cache,
overhead; :mod:`glmdesk.engine.forecast`) against the GPU's free memory and the RAM
available, updated as the model, engine, precision, quantization, device and the
engine's own options (llama.cpp's context, experts in RAM) change; and the sentence
that refuses a load which cannot fit before it starts.

Free memory is read as it is now: the model in use stays loaded until the new one is
ready, so it is not counted as free.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Slot
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QAbstractButton, QComboBox, QLabel, QLineEdit, QSpinBox, QWidget

from glmdesk.engine.forecast import Budget, Forecast, ModelShape, gib, model_shape, plan_load, read_budget


def _default_budget() -> Budget:
    from glmdesk.engine.memory import MemoryProbe

    probe = MemoryProbe()
    try:
        return read_budget(probe)
    finally:
        probe.close()


class FitForecast(QLabel):
    """The forecast line (object name ``fit_forecast``).

    Args:
        budget: Reads the memory a load may use (default: NVML's free GPU memory and
            psutil's available RAM); tests pass a small one.
        parent: Parent widget.
    """

    def __init__(self, budget: Callable[[], Budget] | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("fit_forecast")
        self.setWordWrap(True)
        self._budget = budget or _default_budget
        self._shapes: dict[tuple[str | None, str], ModelShape | None] = {}
        self._dialog = None
        self.forecast: Forecast | None = None
        self._refusal = ""

    def attach(self, dialog) -> None:
        """Follow an :class:`~glmdesk.ui.models.open_model_dialog.OpenModelDialog`'s choices."""
        self._dialog = dialog
        for widget in dialog.findChildren(QWidget):
            if isinstance(widget, QComboBox):
                widget.currentIndexChanged.connect(self.refresh)
            elif isinstance(widget, QLineEdit):
                widget.textChanged.connect(self.refresh)
            elif isinstance(widget, QSpinBox):
                widget.valueChanged.connect(self.refresh)
            elif isinstance(widget, QAbstractButton) and widget.isCheckable():
                widget.toggled.connect(self.refresh)
        self.refresh()

    def refusal(self) -> str:
        """The sentence refusing the load as chosen (``""`` when it fits or cannot be sized)."""
        return self._refusal

    @Slot()
    def refresh(self) -> None:
        """Forecast the dialog's choices now and show it."""
        dialog = self._dialog
        if dialog is None or dialog.remote_box.isChecked():
            self._show(None, None)
            return
        try:
            engine = dialog.effective_engine()
            settings = dialog._local_settings(engine)
        except ValueError:
            self._show(None, None)
            return
        if engine not in ("transformers", "llamacpp"):
            self._show(None, None)
            return
        on_gpu = dialog._runs_on_gpu()
        if engine == "llamacpp" and "llamacpp:gpu" in dialog._availability:
            on_gpu = on_gpu and not dialog._availability["llamacpp:gpu"]
        key = (settings.model, engine)
        if key not in self._shapes:
            self._shapes[key] = model_shape(settings, engine)
        budget = self._budget()
        self._show(plan_load(settings, engine, on_gpu, budget, self._shapes[key]), budget)

    def _show(self, forecast: Forecast | None, budget: Budget | None) -> None:
        self.forecast = forecast
        self._refusal = ""
        if forecast is None or budget is None:  # a forecast always comes with its budget
            self.setText("")
            self.setVisible(False)
            return
        self.setVisible(True)
        parts = self.tr("weights {weights} + KV cache {kv} ({tokens} tokens) + overhead {overhead}").format(
            weights=gib(forecast.weights),
            kv=gib(forecast.kv),
            tokens=forecast.context,
            overhead=gib(forecast.overhead),
        )
        if forecast.work:  # latent attention's keys decompressed over the whole context
            parts += self.tr(" + attention work {work}").format(work=gib(forecast.work))
        if forecast.on_gpu:
            where = self.tr("{gpu} on the GPU").format(gpu=gib(forecast.gpu))
            if forecast.experts_in_ram:
                where += self.tr(", experts {ram} in system RAM").format(ram=gib(forecast.ram))
        else:
            where = self.tr("{ram} in system RAM").format(ram=gib(forecast.ram))
        have = self._have(forecast, budget)
        text = self.tr("Will it fit: {parts} = {where}; {have}.").format(parts=parts, where=where, have=have)
        short = forecast.shortfall(budget)
        if short is not None:
            self._refusal = self._refusal_text(*short)
            text += " " + self._refusal
        self.setText(text)
        self.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        self.setStyleSheet("color: #c0392b;" if short else "")  # refused: the error red

    def _have(self, forecast: Forecast, budget: Budget) -> str:
        ram = self.tr("{ram} of RAM available").format(ram=gib(budget.ram_available))
        if forecast.on_gpu and budget.gpu_free is not None:
            return self.tr("{gpu} free on the GPU, {ram}").format(gpu=gib(budget.gpu_free), ram=ram)
        return ram

    def _refusal_text(self, where: str, need: int, have: int) -> str:
        if where == "gpu":
            return self.tr(
                "It cannot fit: the GPU needs about {need} but has {have} free. Choose 4-bit quantization, "
                "a shorter context, experts in system RAM (a mixture of experts on llama.cpp) or a smaller model."
            ).format(need=gib(need), have=gib(have))
        return self.tr(
            "It cannot fit: it needs about {need} of system RAM but {have} is available. Choose a "
            "quantization, a shorter context or a smaller model."
        ).format(need=gib(need), have=gib(have))
