"""Edit a sent message: the edited text is sent again as another version of it."""

from __future__ import annotations

from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QPlainTextEdit, QVBoxLayout, QWidget


class EditDialog(QDialog):
    """A text box with the message's text, Send and Cancel.

    Args:
        text: The message as sent.
        parent: Parent widget.
    """

    def __init__(self, text: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("edit_dialog")
        self.setWindowTitle(self.tr("Edit message"))
        self.editor = QPlainTextEdit(text)
        note = QLabel(
            self.tr(
                "Sending makes a new version of this message; the earlier one and its answers stay, one click away."
            )
        )
        note.setWordWrap(True)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
        self.send_button = buttons.addButton(self.tr("Send"), QDialogButtonBox.ButtonRole.AcceptRole)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        self.editor.textChanged.connect(lambda: self.send_button.setEnabled(bool(self.text().strip())))
        layout = QVBoxLayout(self)
        layout.addWidget(self.editor, 1)
        layout.addWidget(note)
        layout.addWidget(buttons)
        self.resize(560, 300)

    def text(self) -> str:
        """The edited text."""
        return self.editor.toPlainText()
