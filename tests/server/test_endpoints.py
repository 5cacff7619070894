"""An endpoint is one module: the app serves every module of ``server/endpoints/``, and a
module dropped there (its request model and route, nothing else edited) is served with
the server's API key, body checks and OpenAI-shaped errors."""

from __future__ import annotations

import sys

import pytest
from fastapi.testclient import TestClient

from glmdesk.server import app as server_app
from glmdesk.server import endpoints
from glmdesk.server.app import create_app
from glmdesk.server.config import ServeSettings
from glmdesk.server.endpoints import ENDPOINTS

ECHO = '''
"""``POST /v1/echo``: words given back (a test endpoint)."""

from fastapi import FastAPI, Request

from glmdesk.server.schemas import Body
from glmdesk.server.state import ServerState


class EchoRequest(Body):
    """``POST /v1/echo``: words to give back."""

    words: list[str]
    times: int = 1


REQUEST_MODELS = (EchoRequest,)


def register(app: FastAPI, state: ServerState, guarded: list) -> None:
    @app.post("/v1/echo", dependencies=guarded)
    async def echo(request: Request) -> dict:
        body = await state.bodies.read(request, EchoRequest)
        return {"model": state.model_id, "echo": " ".join(body.words * body.times)}
'''


@pytest.fixture
def echo_endpoint(tmp_path, monkeypatch):
    """The echo module written into a folder the endpoints package reads, and found."""
    (tmp_path / "echo.py").write_text(ECHO, encoding="utf-8")
    monkeypatch.setattr(endpoints, "__path__", [*endpoints.__path__, str(tmp_path)])
    monkeypatch.setattr(server_app, "ENDPOINTS", endpoints.discover())
    yield
    sys.modules.pop("glmdesk.server.endpoints.echo", None)


def test_the_app_serves_every_endpoint_module(backend):
    paths = {route.path for route in create_app(backend).routes}
    assert {"/health", "/metrics", "/v1/models", "/v1/chat/completions", "/v1/completions"} <= paths
    assert [e.__name__.rsplit(".", 1)[-1] for e in ENDPOINTS] == ["chat_completions", "completions", "info"]


def test_a_module_without_register_is_refused(tmp_path, monkeypatch):
    (tmp_path / "stray.py").write_text("X = 1\n", encoding="utf-8")
    monkeypatch.setattr(endpoints, "__path__", [*endpoints.__path__, str(tmp_path)])
    try:
        with pytest.raises(TypeError, match="stray is in the endpoints folder without register"):
            endpoints.discover()
    finally:
        sys.modules.pop("glmdesk.server.endpoints.stray", None)


def test_a_new_endpoint_module_is_served_with_the_key_and_the_body_checks(backend, echo_endpoint):
    client = TestClient(create_app(backend, ServeSettings(api_key="sesame", model_name="tiny")))
    key = {"Authorization": "Bearer sesame"}

    ok = client.post("/v1/echo", json={"words": ["hello", "there"], "times": 2}, headers=key)
    assert ok.status_code == 200
    assert ok.json() == {"model": "tiny", "echo": "hello there hello there"}

    refused = client.post("/v1/echo", json={"words": ["hello"]})
    assert refused.status_code == 401 and refused.json()["error"]["code"] == "invalid_api_key"

    wrong = client.post("/v1/echo", json={"words": "hello", "times": "twice"}, headers=key)
    error = wrong.json()["error"]
    assert wrong.status_code == 400 and error["code"] == "invalid_request"
    assert error["param"] in ("words", "times")

    missing = client.post("/v1/echo", json={}, headers=key)
    assert (
        missing.status_code == 400
        and missing.json()["error"]["message"] == "The request needs the field words."
    )
    # The existing endpoints are still there beside it.
    assert client.get("/v1/models", headers=key).json()["data"][0]["id"] == "tiny"
