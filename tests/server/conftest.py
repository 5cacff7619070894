"""Server fixtures: the real embedded model behind a real ``glmdesk serve`` app on a
free port of 127.0.0.1 (uvicorn on its own thread), loaded once per session."""

from __future__ import annotations

import pytest

from glmdesk.core.settings import LoadSettings
from glmdesk.engine.backends.transformers import TransformersBackend
from glmdesk.server.app import create_app
from glmdesk.server.config import ServeSettings
from glmdesk.server.runner import ServerThread


@pytest.fixture(scope="session")
def backend():
    """The embedded model (SmolLM2-135M-Instruct, fp32, CPU) as a transformers backend."""
    b = TransformersBackend()
    b.load(LoadSettings())
    yield b
    b.close()


@pytest.fixture(scope="module")
def server(backend):
    """``glmdesk serve`` over :func:`backend` on a free port; stopped after the module."""
    settings = ServeSettings(port=0, queue_size=4)
    srv = ServerThread(create_app(backend, settings), settings).start()
    yield srv
    srv.stop()


@pytest.fixture
def state(server):
    """The running server's :class:`~glmdesk.server.app.ServerState`."""
    return server.server.config.app.state.glmdesk
