"""Running the server with uvicorn: in the foreground (``glmdesk serve``) or on its own
thread (the window's "Serve on localhost" toggle, tests, benchmarks)."""

from __future__ import annotations

import threading

import uvicorn

from glmdesk.server.config import ServeSettings


def _config(app, settings: ServeSettings) -> uvicorn.Config:
    return uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=5,
        lifespan="off",
    )


class ServerThread:
    """Serves an app on a background thread until :meth:`stop`.

    Args:
        app: The ASGI app (:func:`glmdesk.server.app.create_app`).
        settings: Host and port (port 0: any free one; :attr:`port` says which).
    """

    def __init__(self, app, settings: ServeSettings) -> None:
        self.settings = settings
        self.server = uvicorn.Server(_config(app, settings))
        self.thread = threading.Thread(target=self.server.run, name="glmdesk-serve", daemon=True)
        self.port = settings.port

    def start(self, timeout_s: float = 30.0) -> ServerThread:
        """Start listening; returns once the socket is bound.

        Raises:
            OSError: when the server could not listen (the port is taken...) within
                ``timeout_s``, in s.
        """
        self.thread.start()
        deadline = timeout_s
        step = 0.02
        waited = 0.0
        while not self.server.started and self.thread.is_alive() and waited < deadline:
            self.thread.join(step)
            waited += step
        if not self.server.started:
            self.stop()
            raise OSError(f"Could not listen on {self.settings.host}:{self.settings.port}.")
        sockets = [s for server in self.server.servers for s in server.sockets]
        if sockets:
            self.port = sockets[0].getsockname()[1]
        return self

    @property
    def url(self) -> str:
        """The base URL (``http://host:port/v1``)."""
        host = f"[{self.settings.host}]" if ":" in self.settings.host else self.settings.host
        return f"http://{host}:{self.port}/v1"

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop listening, end open answers' streams, wait for the thread (at most
        ``timeout_s``, in s). Idempotent."""
        self.server.should_exit = True
        if self.thread.is_alive():
            self.thread.join(timeout_s)
        if self.thread.is_alive():
            self.server.force_exit = True
            self.thread.join(timeout_s)


def serve_forever(app, settings: ServeSettings) -> None:
    """Serve in the foreground until Ctrl+C (uvicorn's own signal handling)."""
    uvicorn.Server(_config(app, settings)).run()
