"""``GET /health`` and ``GET /metrics`` (open, as vLLM's: Prometheus text format) and
``GET /v1/models`` (behind the API key, OpenAI's model list)."""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.responses import Response

from glmdesk.server.state import ServerState

#: What the info endpoints take in: no request body.
REQUEST_MODELS: tuple = ()


def register(app: FastAPI, state: ServerState, guarded: list) -> None:
    """``/health`` and ``/metrics`` (open, as vLLM's) and ``/v1/models`` (guarded)."""

    @app.get("/health")
    async def health() -> dict:
        return {"status": "ok", "busy": state.turns.busy, "waiting": state.turns.waiting}

    @app.get("/metrics")
    async def metrics() -> Response:
        running = state.records[-1] if state.records and not state.records[-1].ended else None
        usage = (running.kv_tokens if running else 0) / max(state.context_length, 1)
        text = (
            "# HELP glmdesk:kv_cache_usage_perc KV-cache positions held by the running answer, "
            "as a fraction of the context window (0-1).\n"
            "# TYPE glmdesk:kv_cache_usage_perc gauge\n"
            f"glmdesk:kv_cache_usage_perc {usage:.6f}\n"
            "# HELP glmdesk:num_requests_waiting Requests waiting for the model.\n"
            "# TYPE glmdesk:num_requests_waiting gauge\n"
            f"glmdesk:num_requests_waiting {state.turns.waiting}\n"
            "# HELP glmdesk:requests_total Answers started since the server started.\n"
            "# TYPE glmdesk:requests_total counter\n"
            f"glmdesk:requests_total {state.requests}\n"
        )
        return Response(text, media_type="text/plain; version=0.0.4")

    @app.get("/v1/models", dependencies=guarded)
    async def models() -> dict:
        entry = {
            "id": state.model_id,
            "object": "model",
            "created": state.created,
            "owned_by": "glmdesk",
            "max_model_len": state.context_length,
        }
        return {"object": "list", "data": [entry]}
