"""``glmdesk serve`` holds its run marker while the engine answers (core/run_marker.py)."""

from __future__ import annotations

import json
import threading

import httpx

from glmdesk.core.run_marker import marker_dir
from glmdesk.server.app import create_app
from glmdesk.server.config import ServeSettings
from glmdesk.server.runner import ServerThread
from tests.helpers.fake_backend import FakeBackend
from tests.helpers.waiting import wait_until


def test_the_marker_is_held_while_the_server_answers():
    gate = threading.Event()
    backend = FakeBackend(pieces=("Hello", ", ", "world"), gate=gate)
    settings = ServeSettings(port=0, queue_size=2)
    server = ServerThread(create_app(backend, settings), settings).start()
    try:
        body = {"model": "fake-model", "stream": True, "messages": [{"role": "user", "content": "Hi"}]}
        with httpx.stream("POST", server.url + "/chat/completions", json=body, timeout=60) as response:
            lines = response.iter_lines()
            assert next(line for line in lines if '"content":"Hello"' in line)  # the answer runs
            (marker,) = marker_dir().glob("*.json")
            data = json.loads(marker.read_text())
            assert (data["engine"], data["model"], data["front_end"]) == ("fake", "fake-model", "serve")
            gate.set()
            assert any(line == "data: [DONE]" for line in lines)
        # Cleared when the answer's thread ends (just after the last event went out).
        wait_until(lambda: not list(marker_dir().glob("*.json")), timeout_s=30)
    finally:
        gate.set()
        server.stop()
