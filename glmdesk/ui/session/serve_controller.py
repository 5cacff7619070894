"""The window's "Serve on localhost:PORT" toggle: ``glmdesk serve`` in this process, on
its own thread, over the window's backend.

Requests from the window and from the server take turns on the one model (the
backend's lock: one answer at a time). The server follows the model in use: a newly
loaded model is served in its place. Closing the window stops the server.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Signal, Slot
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QLabel

from glmdesk.core.errors import ErrorInfo
from glmdesk.ui.session.background import Background

if TYPE_CHECKING:  # the session's type only
    from glmdesk.ui.session.chat_session import ChatSession

#: The port the toggle serves on (vLLM's and glmdesk serve's default).
DEFAULT_PORT = 8000


class ServeController(QObject):
    """Starts and stops the in-process server; counts its requests.

    Args:
        session: The window's :class:`~glmdesk.ui.session.chat_session.ChatSession`.
        port: The TCP port on 127.0.0.1 (0: any free port).
        parent: The window (owns :attr:`action` and :attr:`label`).

    Signals:
        serving_started(str): The server listens at this base URL.
        serving_stopped(): The server stopped.
        serving_failed(str): The server could not start (a sentence).
        requests_counted(int): Answers the server has started so far.
    """

    serving_started = Signal(str)
    serving_stopped = Signal()
    serving_failed = Signal(str)
    requests_counted = Signal(int)

    def __init__(self, session: ChatSession, port: int = DEFAULT_PORT, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.session = session
        self.port = port
        self.server = None
        self.url = ""
        self.requests = 0
        self._backend = None
        self._starting = False
        self._background = Background("glmdesk-serve-start", self)  # importing FastAPI, binding
        self.action = QAction(self.tr("Serve on localhost:{port}").format(port=port), parent)
        self.action.setCheckable(True)
        self.action.setToolTip(
            self.tr("Serve the loaded model over an OpenAI-compatible API on this computer")
        )
        self.action.toggled.connect(self._on_toggled)
        self.address_action = QAction(self.tr("Not serving"), parent)  # the state, in the Server menu
        self.address_action.setEnabled(False)
        self.label = QLabel()
        self.label.setObjectName("serve_label")
        self.label.hide()
        self.requests_counted.connect(self._on_requests_counted)
        session.loader.model_ready.connect(self._on_model_ready)

    def is_serving(self) -> bool:
        """True while the server listens."""
        return self.server is not None

    @Slot(bool)
    def _on_toggled(self, on: bool) -> None:
        if on and self.server is None and not self._starting:
            self.start()
        elif not on:
            self.stop()

    def start(self) -> None:
        """Start serving the backend in use (fails with a sentence when none is loaded)."""
        backend = self.session.loader.backend
        if backend is None or not self.session.is_ready():
            self.action.setChecked(False)
            self.serving_failed.emit(self.tr("Load a model first; then it can be served."))
            return
        self._starting, self._backend = True, backend
        # Importing FastAPI and binding the socket take a moment: not on the GUI thread.
        self._background.run(lambda _cancel: self._start_server(backend), self._on_started, self._on_failed)

    def _start_server(self, backend):
        """The running server (on the background thread); raises when it cannot start."""
        from glmdesk.server.app import create_app
        from glmdesk.server.config import ServeSettings
        from glmdesk.server.runner import ServerThread

        settings = ServeSettings(port=self.port)
        app = create_app(backend, settings, on_request=self.requests_counted.emit)
        return ServerThread(app, settings).start()

    def _on_failed(self, error: ErrorInfo) -> None:
        self._starting = False
        self.action.setChecked(False)
        reason = error.params.get("detail", error.message)
        self.serving_failed.emit(
            self.tr("Could not serve on localhost:{port}: {reason}").format(port=self.port, reason=reason)
        )

    def _on_started(self, server) -> None:
        self._starting = False
        if not self.action.isChecked() or self.session.is_closed():  # turned off meanwhile
            server.stop()
            return
        self.server, self.url, self.requests = server, server.url, 0
        self._show()
        self.serving_started.emit(self.url)

    @Slot(int)
    def _on_requests_counted(self, count: int) -> None:
        self.requests = count
        self._show()

    def _show(self) -> None:
        count = (
            self.tr("{count} request").format(count=self.requests)
            if self.requests == 1
            else self.tr("{count} requests").format(count=self.requests)
        )
        self.label.setText(self.tr("Serving \u00b7 {requests}").format(requests=count))  # short: a status bar
        self.label.setToolTip(self.tr("Serving at {url}").format(url=self.url))
        self.address_action.setText(self.tr("Serving at {url}").format(url=self.url))
        self.label.setVisible(self.server is not None)

    @Slot(object)
    def _on_model_ready(self, _info) -> None:
        if self.server is not None and self.session.loader.backend is not self._backend:
            self.stop(keep_checked=True)
            self.start()

    def stop(self, keep_checked: bool = False) -> None:
        """Stop serving (open answers to clients end; the window's model stays). Idempotent."""
        server, self.server = self.server, None
        if server is not None:
            server.stop(timeout_s=5)
            self.serving_stopped.emit()
        if not keep_checked and self.action.isChecked():
            self.action.blockSignals(True)
            self.action.setChecked(False)
            self.action.blockSignals(False)
        self.label.hide()
        self.address_action.setText(self.tr("Not serving"))
