"""The server's endpoints, one module each: its request model (pydantic), what it turns
the body into, and ``register(app, state, guarded)`` adding its routes.
``REQUEST_MODELS`` names the bodies it reads (the field names of validation errors).

A new endpoint is one module here and one entry in :data:`ENDPOINTS`.
"""

from __future__ import annotations

from glmdesk.server.endpoints import chat_completions, completions, info

#: The endpoint modules :func:`glmdesk.server.app.create_app` registers, in order.
ENDPOINTS = (info, chat_completions, completions)
