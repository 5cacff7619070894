"""Choose a model: a folder, a ``.gguf`` file or a hub id, the engine, and how to load it.

The engine part (:mod:`glmdesk.ui.models.engine_choice`) asks the backends' registry which
engine runs the choices and why, and builds each engine's own options from its spec;
the dialog names no engine itself.

Quantization, precision and device choices that cannot work on this machine are
disabled and their reasons are shown (from :func:`glmdesk.engine.backends.availability`,
which the worker computes off the GUI thread). Running a folder's own Python code is an
explicit choice naming that folder, off by default, and cleared whenever the
model changes.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from PySide6.QtCore import QCoreApplication, Qt, Slot
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from glmdesk.core.errors import ErrorInfo
from glmdesk.core.settings import DEVICES, PRECISIONS, QUANTIZATIONS, WEIGHT_ONLY_QUANTIZATIONS, LoadSettings
from glmdesk.engine.backends import specs
from glmdesk.ui.common.combo_items import combo_item
from glmdesk.ui.common.messages import option_reason
from glmdesk.ui.common.screen_fit import scrolled
from glmdesk.ui.models.chat_format_box import ChatFormatBox
from glmdesk.ui.models.engine_choice import EngineChoiceMixin
from glmdesk.ui.models.fit_forecast import FitForecast
from glmdesk.ui.models.recent_models import recent_label
from glmdesk.ui.models.remote_server_box import RemoteServerBox


class OpenModelDialog(EngineChoiceMixin, QDialog):
    """Asks for a model and load options.

    Args:
        current: The settings to start from (the model loaded now).
        availability: ``{"quantization:4bit": None or ErrorInfo, ...}``
            (:func:`glmdesk.engine.backends.availability`).
        parent: Parent widget.
        recent: Models loaded lately, newest first (``None``: the embedded model),
            offered in a "Recent" list that fills in the model.
        fit_budget: Reads the memory a load may use, for the "Will it fit" forecast
            (:class:`~glmdesk.ui.models.fit_forecast.FitForecast`; default: NVML and psutil).
    """

    def __init__(
        self,
        current: LoadSettings | None = None,
        availability: dict[str, ErrorInfo | None] | None = None,
        parent: QWidget | None = None,
        recent: list[str | None] | None = None,
        fit_budget=None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("open_model_dialog")
        self.setWindowTitle(self.tr("Open model"))
        self.setMinimumWidth(520)
        current = current or LoadSettings()
        self._availability = availability or {}

        row = self._build_model_row(current)
        self._build_load_options(current)
        self._build_engine_choice(current)
        self._build_trust(current)
        self._build_recent(recent)
        self.chat_format_box = ChatFormatBox(current)
        self.fit_forecast = FitForecast(fit_budget)
        buttons = self._lay_out(row, self.recent_combo.count() > 1, current)
        self._connect_updates(buttons, current)
        self.fit_forecast.attach(self)
        self.resize(self.sizeHint())  # all rows shown: Qt's own first size stops at 2/3 of the screen

    def _build_model_row(self, current: LoadSettings) -> QHBoxLayout:
        """The model: its line edit and the Folder, .gguf file and Embedded buttons."""
        self.model_edit = QLineEdit(current.model or "")
        self.model_edit.setPlaceholderText(self.tr("Empty: the embedded default model"))
        self.model_edit.setToolTip(
            self.tr("A model folder, a .gguf file, or a hub id such as THUDM/chatglm3-6b")
        )
        folder_button = QPushButton(self.tr("Folder..."))
        file_button = QPushButton(self.tr(".gguf file..."))
        embedded_button = QPushButton(self.tr("Embedded"))
        embedded_button.setToolTip(self.tr("SmolLM2-135M-Instruct, shipped with glmdesk"))
        row = QHBoxLayout()
        row.addWidget(self.model_edit, 1)
        row.addWidget(folder_button)
        row.addWidget(file_button)
        row.addWidget(embedded_button)
        folder_button.clicked.connect(self._choose_folder)
        file_button.clicked.connect(self._choose_file)
        embedded_button.clicked.connect(self.model_edit.clear)
        return row

    def _build_load_options(self, current: LoadSettings) -> None:
        """Quantization, precision, device, then :meth:`_build_decode_options`."""
        self.quantization_combo = self._combo(
            "quantization",
            QUANTIZATIONS,
            current.quantization,
            {
                "none": self.tr("None"),
                "8bit": self.tr("8-bit (bitsandbytes LLM.int8)"),
                "4bit": self.tr("4-bit NF4 (bitsandbytes)"),
                "int8-wo": self.tr("int8 weight-only (torch on the CPU, torchao on a GPU)"),
                "int4-wo": self.tr("int4 weight-only (torch on the CPU, torchao tinygemm on a GPU)"),
            },
        )
        self.precision_combo = self._combo(
            "precision",
            PRECISIONS,
            current.precision,
            {
                "auto": self.tr("Automatic"),
                "fp32": "fp32",
                "bf16": "bf16",
                "fp16": "fp16",
            },
        )
        self.device_combo = self._combo(
            "device",
            DEVICES,
            current.device,
            {
                "auto": self.tr("Automatic"),
                "cpu": self.tr("CPU"),
                "cuda": self.tr("GPU (CUDA)"),
            },
        )
        self._build_decode_options(current)

    def _build_decode_options(self, current: LoadSettings) -> None:
        """CPU threads, the fused decode step and its compiled form (with why not)."""
        self.threads_spin = QSpinBox()
        self.threads_spin.setRange(0, max(64, os.cpu_count() or 1))
        self.threads_spin.setSpecialValueText(self._automatic_threads_text("transformers"))
        self.threads_spin.setValue(current.threads)
        self.threads_spin.setToolTip(self.tr("Threads for the CPU's matrix kernels"))
        self.fused_check = QCheckBox(self.tr("Fused decode step"))
        self.fused_check.setChecked(current.fused_decode)
        self.fused_check.setToolTip(
            self.tr(
                "On the CPU, run each layer's query/key/value and gate/up projections as one "
                "and decode without transformers' per-layer overhead (Llama and GLM models; "
                "same answers, faster)"
            )
        )
        self.compile_check = QCheckBox(self.tr("Compile the decode step"))
        self._compile_reason = self._availability.get("decode:compile")
        self.compile_check.setChecked(
            current.compile_decode and current.fused_decode and not self._compile_reason
        )
        self.compile_check.setEnabled(current.fused_decode and not self._compile_reason)
        self.compile_check.setToolTip(
            option_reason(self._compile_reason)
            if self._compile_reason
            else self.tr(
                "torch.compile of the decode step on static KV buffers (Llama and GLM models; every KV "
                "cache but the quantized one; CUDA graphs on a GPU): faster tokens, but each load takes "
                "about 30 s longer (1-3 minutes the first time) and needs a C++ compiler on the CPU"
            )
        )
        self.fused_check.toggled.connect(self._on_fused_toggled)

    def _build_trust(self, current: LoadSettings) -> None:
        """The per-folder choice to run a folder's own code, and its warning."""
        self.trust_check = QCheckBox()
        self.trust_check.setChecked(False)
        self._trusted_folder = current.model if current.trust_remote_code else None
        self.trust_note = QLabel(
            self.tr(
                "Only for folders you trust: the model's own code runs with your permissions. "
                "ChatGLM2/3 and GLM-4 run without it."
            )
        )
        self.trust_note.setWordWrap(True)
        self.trust_note.setForegroundRole(QPalette.ColorRole.PlaceholderText)

    def _build_recent(self, recent: list[str | None] | None) -> None:
        """The Recent list: models loaded lately, then models downloaded and not loaded
        lately, each filling in the model when chosen."""
        self.recent_combo = QComboBox()
        self.recent_combo.setObjectName("recent_models")
        self.recent_combo.addItem(self.tr("Choose a recent model..."), None)
        for model in recent or []:
            self.recent_combo.addItem(recent_label(model), model or "")
            self.recent_combo.setItemData(
                self.recent_combo.count() - 1, model or recent_label(model), Qt.ItemDataRole.ToolTipRole
            )
        for pulled in _pulled_models():  # downloaded with Get a model / glmdesk pull, not loaded lately
            path = str(pulled.model_path)
            if path not in (recent or []):
                label = self.tr("{name} (downloaded)").format(name=f"{pulled.repo}:{pulled.quant}")
                self.recent_combo.addItem(label, path)
                self.recent_combo.setItemData(
                    self.recent_combo.count() - 1, path, Qt.ItemDataRole.ToolTipRole
                )
        self.recent_combo.activated.connect(self._on_recent_chosen)

    def _lay_out(self, row: QHBoxLayout, has_recent: bool, current: LoadSettings) -> QDialogButtonBox:
        """The form, the remote server box, the notes and the Open/Cancel buttons."""
        form = self.options_form = QFormLayout()
        if has_recent:
            form.addRow(self.tr("Recent"), self.recent_combo)
        else:
            self.recent_combo.hide()
        form.addRow(self.tr("Model"), row)
        form.addRow(self.tr("Engine"), self.engine_combo)
        form.addRow("", self.engine_note)
        form.addRow("", self.vision_note)
        for box in self.engine_options.values():
            form.addRow("", box)
        form.addRow(self.tr("Quantization"), self.quantization_combo)
        form.addRow(self.tr("Precision"), self.precision_combo)
        form.addRow(self.tr("Device"), self.device_combo)
        form.addRow(self.tr("CPU threads"), self.threads_spin)
        form.addRow("", self.fused_check)
        form.addRow("", self.compile_check)
        form.addRow(self.tr("Prompt format"), self.chat_format_box)
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Open | QDialogButtonBox.StandardButton.Cancel
        )
        self.remote_box = RemoteServerBox(current)
        self.local_options = QWidget()  # greyed out as a whole while the model comes from a server
        form.setContentsMargins(0, 0, 0, 0)
        self.local_options.setLayout(form)
        self.local_reason = QLabel()
        self.local_reason.setWordWrap(True)
        self.local_reason.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        body = QWidget()  # scrolls when the screen is shorter than the dialog
        body.setObjectName("open_model_body")
        layout = QVBoxLayout(body)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.local_options)
        layout.addWidget(self.remote_box)
        layout.addWidget(self.local_reason)
        layout.addWidget(self.reasons_label)
        layout.addWidget(self.trust_check)
        layout.addWidget(self.trust_note)
        applies = QLabel(
            self.tr(
                "The model, precision, quantization and threads apply when loading finishes; "
                "the current model stays in use until then."
            )
        )
        applies.setWordWrap(True)
        layout.addWidget(applies)
        layout.addWidget(self.fit_forecast)
        layout.addStretch(1)
        outer = QVBoxLayout(self)
        outer.addWidget(scrolled(body), 1)
        outer.addWidget(buttons)  # always on the screen
        return buttons

    def _connect_updates(self, buttons: QDialogButtonBox, current: LoadSettings) -> None:
        """Wire the buttons and the updates that enable, disable and explain options."""
        self.model_edit.textChanged.connect(self._update_trust)
        self.model_edit.textChanged.connect(self.chat_format_box.set_model)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        self.device_combo.currentIndexChanged.connect(self._update_weight_only)
        self._update_weight_only()
        for signal in (
            self.model_edit.textChanged,
            self.engine_combo.currentIndexChanged,
            self.quantization_combo.currentIndexChanged,
            self.compile_check.toggled,
            self.device_combo.currentIndexChanged,
        ):
            signal.connect(self._update_engine)
        self._update_engine()
        self._update_trust()
        if self._trusted_folder and self._trusted_folder == current.model:
            self.trust_check.setChecked(True)
        self.remote_box.toggled.connect(self._on_remote_toggled)
        self._on_remote_toggled(self.remote_box.isChecked())

    @Slot(bool)
    def _on_remote_toggled(self, remote: bool) -> None:
        """Grey out this computer's load options while the model comes from a server, and say why."""
        self.local_options.setEnabled(not remote)
        self.trust_check.setVisible(not remote)
        self.trust_note.setVisible(not remote)
        reason = (
            self.tr(
                "The model, engine, precision, quantization and threads above are for models on this "
                "computer: a server loads its model with its own, and keeps its own KV cache."
            )
            if remote
            else ""
        )
        self.local_options.setToolTip(reason)
        self.local_reason.setText(reason)
        self.local_reason.setVisible(remote)

    @Slot(int)
    def _on_recent_chosen(self, index: int) -> None:
        model = self.recent_combo.itemData(index)
        if model is not None:
            self.model_edit.setText(model)

    def _combo(self, group: str, keys: Iterable[str], current: str, names: dict[str, str]) -> QComboBox:
        combo = QComboBox()
        for key in keys:
            combo.addItem(names.get(key, key), key)
        for row in range(combo.count()):
            key = f"{group}:{combo.itemData(row)}"
            reason = self._availability.get(key)
            if reason:
                combo_item(combo, row).setEnabled(False)
                combo_item(combo, row).setToolTip(option_reason(reason))
        index = combo.findData(current)
        if index < 0 or not combo_item(combo, index).isEnabled():
            index = 0
        combo.setCurrentIndex(index)
        return combo

    def _runs_on_gpu(self) -> bool:
        """Whether the device choice means CUDA (``auto`` does when a GPU was found)."""
        device = self.device_combo.currentData()
        gpu_found = "device:cuda" in self._availability and not self._availability["device:cuda"]
        return device == "cuda" or (device == "auto" and gpu_found)

    @Slot()
    def _update_weight_only(self) -> None:
        """Grey out the weight-only int8/int4 choices while the device is a GPU and
        torchao, which runs them there, is missing (``quantization:torchao``)."""
        combo = self.quantization_combo
        blocked = self._runs_on_gpu() and bool(self._availability.get("quantization:torchao"))
        for key in WEIGHT_ONLY_QUANTIZATIONS:
            row = combo.findData(key)
            if row < 0 or self._availability.get(f"quantization:{key}"):
                continue  # absent, or unavailable for its own reason (kept)
            item = combo_item(combo, row)
            item.setEnabled(not blocked)
            item.setToolTip(
                self.tr(
                    "On a GPU this needs torchao (pip install 'glmdesk[cuda-quant]'): choose the CPU "
                    "device, or 8-bit or 4-bit NF4."
                )
                if blocked
                else ""
            )
        if blocked and combo.currentData() in WEIGHT_ONLY_QUANTIZATIONS:
            combo.setCurrentIndex(combo.findData("none"))

    def _reasons_text(self) -> str:
        lines = []
        names = {
            "decode:compile": self.tr("Compile the decode step"),
            "quantization:torchao": self.tr("Weight-only int8/int4 on the GPU"),
        }
        for spec in specs():
            for field in spec.options:
                if field.needs and field.reason_label:
                    names[field.needs] = QCoreApplication.translate("OpenModelDialog", field.reason_label)
        kinds = {
            "device": self.tr("Device"),
            "precision": self.tr("Precision"),
            "quantization": self.tr("Quantization"),
            "engine": self.tr("Engine"),
        }
        values = {"cuda": self.tr("GPU (CUDA)"), "llamacpp": "llama.cpp"}
        for key, reason in sorted(self._availability.items()):
            if reason:
                kind, _, value = key.partition(":")
                option = names.get(key) or self.tr("{kind} {value}").format(
                    kind=kinds.get(kind, kind), value=values.get(value, value)
                )
                lines.append(
                    self.tr("{option}: {reason}").format(option=option, reason=option_reason(reason))
                )
        return "\n".join(lines)

    @Slot()
    def _choose_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(
            self, self.tr("Choose a model folder"), self.model_edit.text()
        )
        if folder:
            self.model_edit.setText(folder)

    @Slot()
    def _choose_file(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self, self.tr("Choose a GGUF file"), self.model_edit.text(), self.tr("GGUF models (*.gguf)")
        )
        if path:
            self.model_edit.setText(path)

    @Slot()
    def _update_trust(self) -> None:
        text = self.model_edit.text().strip()
        is_folder = bool(text) and Path(text).expanduser().is_dir()
        self.trust_check.setChecked(False)  # a new folder is never trusted by default
        self.trust_check.setEnabled(is_folder)
        name = Path(text).expanduser().name if is_folder else ""
        if is_folder:
            self.trust_check.setText(
                self.tr("Run the Python code shipped in the folder \u201c{folder}\u201d").format(folder=name)
            )
        else:
            self.trust_check.setText(
                self.tr("Run the Python code shipped in a model folder (choose a folder first)")
            )
        self.trust_check.setToolTip(str(Path(text).expanduser()) if is_folder else "")

    @Slot(bool)
    def _on_fused_toggled(self, on: bool) -> None:
        self.compile_check.setEnabled(on and not self._compile_reason and self.fused_check.isEnabled())
        if not on:
            self.compile_check.setChecked(False)

    def _local_settings(self, engine: str, own_options: bool = True) -> LoadSettings:
        """The choices for a model on this computer, with ``engine`` (the Open button's
        settings, less the remote box); ``own_options=False`` leaves the engines' own
        options at their defaults (what the engine is chosen from, always valid).

        Raises:
            ValueError: with a sentence, for an engine's own option out of range.
        """
        fields: dict = {}
        for box in self.engine_options.values() if own_options else ():
            fields.update(box.values())
        return LoadSettings(
            engine=engine,
            model=self.model_edit.text().strip() or None,
            quantization=self.quantization_combo.currentData(),
            precision=self.precision_combo.currentData(),
            device=self.device_combo.currentData(),
            trust_remote_code=self.trust_check.isEnabled() and self.trust_check.isChecked(),
            threads=self.threads_spin.value(),
            fused_decode=self.fused_check.isChecked(),
            compile_decode=self.fused_check.isChecked()
            and self.compile_check.isEnabled()
            and self.compile_check.isChecked(),
            **self.chat_format_box.values(),
            **fields,
        )

    def accept(self) -> None:
        """Close with the choices, unless the server URL is malformed (said in the box) or
        the load cannot fit (the forecast says so, with the numbers)."""
        try:
            self.load_settings()
        except ValueError as exc:
            self.remote_box.status_label.setText(str(exc))
            return
        self.fit_forecast.refresh()
        if self.fit_forecast.refusal():
            return
        super().accept()

    def load_settings(self) -> LoadSettings:
        """The choices as :class:`LoadSettings` (a remote server's when that box is checked).

        Raises:
            ValueError: with a sentence, for a malformed server URL.
        """
        if self.remote_box.isChecked():
            return self.remote_box.load_settings()
        return self._local_settings(self._chosen_engine())


def _pulled_models():
    """The models pulled into glmdesk's models folder (none when it cannot be read)."""
    from glmdesk.engine.catalog.pulled import pulled_models

    try:
        return pulled_models()
    except OSError:
        return []
