"""The llama.cpp load options in Open model: context, prefill batch, memory map, GPU layers.

Each option's tooltip says what it costs. The GPU layers are offered only when the
worker found a llama-cpp-python build with GPU offload (``llamacpp:gpu`` in the
availability without a reason) and the device is not the CPU.
"""

from __future__ import annotations

from PySide6.QtWidgets import QCheckBox, QFormLayout, QSpinBox, QWidget

from glmdesk.core.settings import LLAMA_DEFAULT_N_CTX, LoadSettings
from glmdesk.ui.messages import option_reason


class LlamaCppOptions(QWidget):
    """The llama.cpp options of :class:`~glmdesk.ui.open_model_dialog.OpenModelDialog`.

    Args:
        current: Settings to start from.
        availability: The worker's option availability (``llamacpp:gpu`` read here).
        parent: Parent widget.
    """

    def __init__(self, current: LoadSettings, availability: dict, parent=None) -> None:
        super().__init__(parent)
        self.setObjectName("llamacpp_options")
        self._gpu_reason = availability.get("llamacpp:gpu")
        self.ctx_spin = QSpinBox()
        self.ctx_spin.setRange(0, 1 << 21)
        self.ctx_spin.setSingleStep(1024)
        self.ctx_spin.setSpecialValueText(
            self.tr("Automatic (the model's, at most {n})").format(n=LLAMA_DEFAULT_N_CTX)
        )
        self.ctx_spin.setValue(current.n_ctx if current.n_ctx >= 256 else 0)
        self.ctx_spin.setToolTip(
            self.tr(
                "Tokens of context llama.cpp keeps for the full KV cache: a longer context holds "
                "longer conversations and takes more memory (the gauge shows the KV cache)."
            )
        )
        self.batch_spin = QSpinBox()
        self.batch_spin.setRange(1, 8192)
        self.batch_spin.setValue(current.n_batch)
        self.batch_spin.setToolTip(
            self.tr(
                "Prompt tokens per llama.cpp call (prefill): larger batches read long prompts "
                "faster and take a larger compute buffer."
            )
        )
        self.mmap_check = QCheckBox(self.tr("Map the file into memory"))
        self.mmap_check.setChecked(current.use_mmap)
        self.mmap_check.setToolTip(
            self.tr(
                "Loads at once and shares the weights with the system's file cache; off reads the "
                "whole file into memory first."
            )
        )
        self.gpu_spin = QSpinBox()
        self.gpu_spin.setRange(-1, 999)
        self.gpu_spin.setSpecialValueText(self.tr("All"))
        self.gpu_spin.setValue(current.n_gpu_layers)
        self.gpu_spin.setToolTip(
            option_reason(self._gpu_reason)
            if self._gpu_reason
            else self.tr(
                "Layers llama.cpp keeps on the GPU: more layers decode faster and take more GPU memory."
            )
        )
        form = QFormLayout(self)
        form.setContentsMargins(0, 0, 0, 0)
        form.addRow(self.tr("Context (tokens)"), self.ctx_spin)
        form.addRow(self.tr("Prefill batch (tokens)"), self.batch_spin)
        form.addRow("", self.mmap_check)
        form.addRow(self.tr("GPU layers"), self.gpu_spin)

    def set_active(self, on: bool, gpu_device: bool) -> None:
        """Enable the options while llama.cpp is the engine (GPU layers: on a GPU build
        with a device other than the CPU)."""
        for widget in (self.ctx_spin, self.batch_spin, self.mmap_check):
            widget.setEnabled(on)
        self.gpu_spin.setEnabled(on and gpu_device and not self._gpu_reason)
