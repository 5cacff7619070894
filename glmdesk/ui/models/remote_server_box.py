"""Open model's "Remote server" source: an OpenAI-compatible server's URL, its optional
API key, and the model chosen from what the server lists (``GET /v1/models``)."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from PySide6.QtCore import Signal, Slot
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QComboBox, QFormLayout, QGroupBox, QHBoxLayout, QLabel, QLineEdit, QPushButton

from glmdesk.core.errors import ErrorInfo
from glmdesk.core.settings import LoadSettings
from glmdesk.engine.backends import is_remote
from glmdesk.ui.common.messages import error_sentence
from glmdesk.ui.session.background import Background


@runtime_checkable
class _ModelList(Protocol):
    """A backend that lists a server's models (the remote one)."""

    def models(self) -> list[str]: ...


class RemoteServerBox(QGroupBox):
    """A checkable group: checked, the model comes from a server instead of this computer.

    Args:
        current: The settings to start from (a remote one fills the fields).

    Signals:
        models_listed(list): The model ids the server listed (after "List models").
        listing_failed(str): Why the server could not be asked (a sentence).
    """

    models_listed = Signal(list)
    listing_failed = Signal(str)

    def __init__(self, current: LoadSettings | None = None, parent=None) -> None:
        super().__init__(parent)
        self.setObjectName("remote_server_box")
        self.setTitle(self.tr("Remote server (vLLM, SGLang, glmdesk serve...)"))
        self.setCheckable(True)
        remote = current if current is not None and is_remote(current) else None
        self.setChecked(remote is not None)
        self.url_edit = QLineEdit((remote.remote_url or "") if remote is not None else "")
        self.url_edit.setPlaceholderText("http://gpu-box:8000/v1")
        self.key_edit = QLineEdit((remote.remote_api_key or "") if remote is not None else "")
        self.key_edit.setEchoMode(QLineEdit.EchoMode.Password)
        self.key_edit.setPlaceholderText(self.tr("Optional; kept in the system keyring"))
        self.model_combo = QComboBox()
        self.model_combo.setEditable(True)
        line = self.model_combo.lineEdit()  # an editable combo box has one
        if line is not None:
            line.setPlaceholderText(self.tr("Empty: the server's first model"))
        if remote is not None and remote.remote_model:
            self.model_combo.addItem(remote.remote_model)
        self.list_button = QPushButton(self.tr("List models"))
        self.status_label = QLabel()
        self.status_label.setWordWrap(True)
        self.status_label.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        row = QHBoxLayout()
        row.addWidget(self.model_combo, 1)
        row.addWidget(self.list_button)
        form = QFormLayout(self)
        form.addRow(self.tr("Server URL"), self.url_edit)
        form.addRow(self.tr("API key"), self.key_edit)
        form.addRow(self.tr("Model"), row)
        form.addRow("", self.status_label)
        self.list_button.clicked.connect(self.list_models)
        self._background = Background("glmdesk-list-models", self)  # asks the server

    def load_settings(self) -> LoadSettings:
        """The remote :class:`LoadSettings`.

        Raises:
            ValueError: with a sentence, for a missing or malformed URL.
        """
        model = self.model_combo.currentText().strip() or None
        return LoadSettings(
            engine="remote",
            remote_url=self.url_edit.text().strip(),
            remote_model=model,
            remote_api_key=self.key_edit.text().strip() or None,
        )

    @Slot()
    def list_models(self) -> None:
        """Ask the server for its models on a thread (the window never waits on the network)."""
        try:
            settings = self.load_settings()
        except ValueError as exc:
            self.status_label.setText(str(exc))
            return
        self.list_button.setEnabled(False)
        self.status_label.setText(self.tr("Asking the server..."))
        self._background.run(lambda _cancel: _list(settings), done=self._on_listed, failed=self._on_failed)

    def _on_failed(self, error: ErrorInfo) -> None:
        self.list_button.setEnabled(True)
        sentence = error_sentence(error)
        self.status_label.setText(sentence)
        self.listing_failed.emit(sentence)

    def _on_listed(self, ids: list[str]) -> None:
        self.list_button.setEnabled(True)
        chosen = self.model_combo.currentText().strip()
        self.model_combo.clear()
        self.model_combo.addItems(ids)
        if chosen in ids:
            self.model_combo.setCurrentText(chosen)
        self.status_label.setText(
            self.tr("1 model on this server.")
            if len(ids) == 1
            else self.tr("{count} models on this server.").format(count=len(ids))
        )
        self.models_listed.emit(ids)


def _list(settings: LoadSettings) -> list[str]:
    """The model ids the server of ``settings`` lists (on a background thread).

    Raises:
        GlmdeskError: the server could not be reached or asked.
    """
    from glmdesk.engine.backends import create_backend

    listing = LoadSettings(
        engine="remote", remote_url=settings.remote_url, remote_api_key=settings.remote_api_key
    )
    backend = create_backend(listing)  # the server's backend, from the registry
    try:
        backend.load(listing)
        return backend.models() if isinstance(backend, _ModelList) else []
    finally:
        backend.close()
