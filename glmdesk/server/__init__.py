"""``glmdesk serve``: one loaded model behind an OpenAI-compatible HTTP API.

FastAPI + uvicorn over any :class:`~glmdesk.engine.backends.base.Backend`:
``GET /v1/models``, ``POST /v1/chat/completions``, ``POST /v1/completions``,
``GET /health``, following what vLLM and OpenAI do (server-sent events, ``usage``,
OpenAI-shaped errors). One answer at a time from a bounded FIFO queue; concurrent
throughput is the job of vLLM or SGLang (see the README).
"""

from glmdesk.server.config import ServeSettings

__all__ = ["ServeSettings"]
