"""The window stays responsive while MCP servers misbehave: a 10 ms timer on the GUI
thread keeps firing while calls run on another thread (a 50 MB result over HTTP and over
stdio, a call past its time limit, a server that exits mid-call, floods stderr,
answers with a malformed result or does not exist); the longest gap between two ticks
is printed (benchmarks/mcp_faults.py measures the same with an idle baseline)."""

from __future__ import annotations

import threading
import time

import pytest
from PySide6.QtCore import QTimer

from glmdesk.chat.mcp.config import McpConfig, McpServerConfig
from glmdesk.chat.mcp.hub import McpHub
from tests.chat.mcp.conftest import BAD, FAULTS, MISSING, http_server_url  # noqa: F401 - the fixture


class GapMeter:
    """The longest gap between ticks of a 10 ms timer on the GUI thread, in s."""

    def __init__(self) -> None:
        self.last = time.perf_counter()
        self.longest = 0.0
        self.timer = QTimer()
        self.timer.setInterval(10)
        self.timer.timeout.connect(self._tick)
        self.timer.start()

    def _tick(self) -> None:
        now = time.perf_counter()
        self.longest = max(self.longest, now - self.last)
        self.last = now


@pytest.fixture(scope="module")
def servers(http_server_url):  # noqa: F811 - the imported fixture
    web = McpServerConfig("web", url=http_server_url, timeout_s=120)
    hub = McpHub(McpConfig((FAULTS, BAD, MISSING, web)), consent=lambda _s: True)
    yield hub
    hub.close()


@pytest.mark.parametrize(
    ("server", "tool", "arguments", "said"),
    [
        ("web", "huge", {"megabytes": 50}, "The result was cut"),
        ("faults", "huge", {"megabytes": 50}, "The result was cut"),
        ("faults", "nap", {"seconds": 30}, "did not answer"),
        ("faults", "die", {}, "ended during the call"),
        ("faults", "shout", {"lines": 20000}, "done shouting"),
        ("bad", "broken", {}, "could not be read"),
        ("missing", "anything", {}, "was not found"),
    ],
)
def test_the_gui_keeps_ticking_while_a_server_misbehaves(qtbot, servers, server, tool, arguments, said):
    servers.ensure(server)
    meter = GapMeter()
    results = []
    threading.Thread(
        target=lambda: results.append(
            servers.call(server, tool, arguments, timeout_s=120 if tool == "huge" else None)
        ),
        daemon=True,
    ).start()
    qtbot.waitUntil(lambda: bool(results), timeout=120000)
    meter.timer.stop()
    print(f"\n{server}/{tool}: longest GUI gap {meter.longest * 1000:.0f} ms")
    assert said in results[0].content
    assert meter.longest < 1.0
