"""The model chip at the top of the chat column: the model's name, engine and size; a
click opens Open model."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QSizePolicy, QToolButton, QWidget

from glmdesk.ui.common.model_facts import device_text, no_break, weights_text


def size_text(footprint_mib: float) -> str:
    """A model's memory in the unit a user reads: ``"92 MiB"``, ``"1.5 GiB"``
    (``footprint_mib`` in MiB; ``""`` when unknown, 0 or less)."""
    if footprint_mib <= 0:
        return ""
    if footprint_mib < 1024:
        return f"{footprint_mib:.0f} MiB"
    return f"{footprint_mib / 1024:.1f} GiB"


class ModelChip(QToolButton):
    """A rounded button naming the model in use ("SmolLM2-135M-Instruct · llama.cpp ·
    92 MiB"); its ``clicked`` signal is the window's Open model.

    The engine is named as a user knows it (llama.cpp, transformers, server); the size is
    the weights' memory (:attr:`ModelInfo.footprint_mib`); the tooltip says the weights,
    the device and where the model lives.
    """

    ENGINES = {"llamacpp": "llama.cpp", "transformers": "transformers"}

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("model_chip")
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.setAutoRaise(True)
        self.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        self.setSizePolicy(QSizePolicy.Policy.Maximum, QSizePolicy.Policy.Fixed)
        self.show_no_model()

    def show_no_model(self) -> None:
        """No model yet: the chip invites the user to open one."""
        self.setText(self.tr("Open a model…"))
        self.setToolTip(self.tr("Open model (Ctrl+O)"))

    def show_loading(self, name: str) -> None:
        """A model is loading (``name``: its file, folder or hub id, shortened)."""
        self.setText(self.tr("Loading {name}…").format(name=no_break(name)))

    def show_model(self, info) -> None:
        """Show a loaded model (:class:`~glmdesk.engine.info.ModelInfo`)."""
        engine = self.ENGINES.get(info.engine, self.tr("server") if info.engine == "remote" else info.engine)
        parts = [no_break(info.name), engine]
        size = size_text(float(getattr(info, "footprint_mib", 0) or 0))
        if size and info.engine != "remote":
            parts.append(size)
        self.setText("  \u00b7  ".join(parts))
        where = (
            weights_text(info)
            if info.engine == "remote"
            else f"{device_text(info.device)}, {weights_text(info)}"
        )
        self.setToolTip(
            self.tr("{where}\n{location}\nClick to open another model (Ctrl+O).").format(
                where=where, location=info.location
            )
        )
