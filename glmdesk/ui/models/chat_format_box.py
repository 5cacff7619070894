"""The Open model dialog's prompt format row: the format read from the chosen folder's
chat template and why, a choice of another format, and a template file of the user's
(``LoadSettings.chat_format`` and ``chat_template``;
:mod:`glmdesk.engine.families.template_format`)."""

from __future__ import annotations

from PySide6.QtCore import Slot
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from glmdesk.core.settings import CHAT_FORMATS, LoadSettings
from glmdesk.engine.families.template_format import is_glm_template, model_template, template_format


class ChatFormatBox(QWidget):
    """The prompt format choice and the chat template file.

    Args:
        current: The settings to start from (their ``chat_format``, ``chat_template``).
        parent: Parent widget.
    """

    def __init__(self, current: LoadSettings, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("chat_format_box")
        self.format_combo = QComboBox()
        self.format_combo.setObjectName("chat_format")
        names = self.format_names()
        for key in CHAT_FORMATS:
            self.format_combo.addItem(names[key], key)
        self.format_combo.setCurrentIndex(max(0, self.format_combo.findData(current.chat_format)))
        self.format_combo.setToolTip(
            self.tr(
                "How the model is prompted and its reasoning and tool calls read. Automatic reads it "
                "from the model's chat template, whatever its config says."
            )
        )
        self.template_edit = QLineEdit(current.chat_template or "")
        self.template_edit.setObjectName("chat_template")
        self.template_edit.setPlaceholderText(self.tr("The model's own chat template"))
        choose = QPushButton(self.tr("Template..."))
        choose.setToolTip(self.tr("A chat template file (.jinja or tokenizer_config.json) to use instead"))
        choose.clicked.connect(self._choose_template)
        self.detected = QLabel()
        self.detected.setObjectName("chat_format_detected")
        self.detected.setWordWrap(True)
        self.detected.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.format_combo, 1)
        row.addWidget(self.template_edit, 1)
        row.addWidget(choose)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(row)
        layout.addWidget(self.detected)
        self._model = ""
        self.template_edit.textChanged.connect(self._update_detected)
        self.set_model(current.model or "")

    def format_names(self) -> dict[str, str]:
        """Each format in the user's language."""
        return {
            "auto": self.tr("Automatic (from the chat template)"),
            "glm45": self.tr("GLM-4.5/4.6/4.7: reasoning, XML tool calls"),
            "think": self.tr("GLM-Z1: reasoning, no tool calls"),
            "plain": self.tr("The chat template only"),
        }

    def values(self) -> dict[str, str | None]:
        """``chat_format`` and ``chat_template`` for :class:`LoadSettings`."""
        template = self.template_edit.text().strip()
        return {"chat_format": self.format_combo.currentData(), "chat_template": template or None}

    def set_model(self, model: str) -> None:
        """Say which format the chat template of ``model`` (a folder) is read as."""
        self._model = model.strip()
        self._update_detected()

    @Slot()
    def _update_detected(self) -> None:
        template = self._template_text()
        if template is None:
            self.detected.setText(self.tr("The format is read from the chat template when the model loads."))
            return
        if not template:
            self.detected.setText(self.tr("No chat template found: the model's family decides the format."))
            return
        if not is_glm_template(template):
            self.detected.setText(self.tr("Not a GLM chat template: prompted by it as it is."))
            return
        kind, _reason = template_format(template)
        why = {
            "glm45": self.tr("it writes tool calls with <arg_key> and <arg_value>"),
            "think": self.tr("it writes reasoning in <think> and no XML tool calls"),
            "plain": self.tr("it writes no reasoning markers and no XML tool calls"),
        }[kind]
        self.detected.setText(
            self.tr("Automatic reads the chat template as {format}: {why}.").format(
                format=self.format_names()[kind], why=why
            )
        )

    def _template_text(self) -> str | None:
        """The template the model would be prompted with (the picked file's, else the
        folder's or the GGUF file's ``tokenizer.chat_template``), ``""`` when there is
        none, ``None`` when it is not read here (a hub id, nothing there: read at load)."""
        picked = self.template_edit.text().strip()
        try:
            if picked:
                from glmdesk.engine.families.template_format import read_template_file

                return read_template_file(picked)
            return model_template(self._model) if self._model else None
        except Exception:  # an unreadable file: said at load, with the reason
            return None

    @Slot()
    def _choose_template(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self,
            self.tr("Choose a chat template"),
            self.template_edit.text() or self._model,
            self.tr("Chat templates (*.jinja *.json)"),
        )
        if path:
            self.template_edit.setText(path)
