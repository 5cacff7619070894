"""The FastAPI application: the endpoints of :mod:`glmdesk.server.endpoints` over one
loaded backend, behind the API key, with OpenAI-shaped errors."""

from __future__ import annotations

import hmac
from collections.abc import Callable
from functools import partial

from fastapi import Depends, FastAPI, Request
from fastapi.responses import Response

from glmdesk.core.settings import CacheSettings
from glmdesk.engine.backends.base import Backend
from glmdesk.server.body import ClientGone, invalid_request
from glmdesk.server.config import ServeSettings
from glmdesk.server.endpoints import ENDPOINTS
from glmdesk.server.errors import APIError, install_handlers
from glmdesk.server.state import ServerState


def create_app(
    backend: Backend,
    settings: ServeSettings | None = None,
    cache: CacheSettings | None = None,
    on_request: Callable[[int], None] | None = None,
) -> FastAPI:
    """The OpenAI-compatible application over a loaded ``backend``.

    Args:
        backend: A loaded backend; the server never closes it.
        settings: API key, queue size, served model id (host and port are the runner's).
        cache: The KV-cache strategy of every answer (default: full).
        on_request: Called on the server's event loop with the number of answers
            started so far, each time one starts.

    Returns:
        The FastAPI app; ``app.state.glmdesk`` is its :class:`ServerState`.
    """
    settings = settings or ServeSettings()
    state = ServerState(backend, settings, cache or CacheSettings(), on_request)
    app = FastAPI(title="glmdesk", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.glmdesk = state
    models = tuple(m for endpoint in ENDPOINTS for m in endpoint.REQUEST_MODELS)
    install_handlers(app, partial(invalid_request, models=models))

    @app.exception_handler(ClientGone)
    async def _gone(request: Request, exc: ClientGone) -> Response:
        return Response(status_code=499)  # nginx's "client closed request"; nobody reads it

    guarded = [Depends(_authorizer(settings.api_key))]
    for endpoint in ENDPOINTS:
        endpoint.register(app, state, guarded)
    return app


def _authorizer(api_key: str | None) -> Callable[[Request], None]:
    """A dependency that refuses a request without ``Authorization: Bearer <api_key>``."""

    def authorized(request: Request) -> None:
        if api_key is None:
            return
        scheme, _, key = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(key.strip().encode(), api_key.encode()):
            raise APIError(
                401,
                "The API key is missing or wrong: send it as the header Authorization: Bearer KEY.",
                code="invalid_api_key",
            )

    return authorized
