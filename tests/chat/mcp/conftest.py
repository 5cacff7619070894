"""Servers for the MCP tests: the real ``mcp-server-time`` over stdio, and the SDK-built
test server (tests/helpers/mcp_test_server.py) over stdio and streamable HTTP, and a
hand-written one that answers with malformed results (tests/helpers/mcp_bad_server.py)."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from glmdesk.chat.mcp.config import McpConfig, McpServerConfig
from glmdesk.chat.mcp.hub import McpHub

TEST_SERVER = Path(__file__).resolve().parents[2] / "helpers" / "mcp_test_server.py"
BAD_SERVER = TEST_SERVER.with_name("mcp_bad_server.py")

TIME = McpServerConfig(
    "time", command=sys.executable, args=("-m", "mcp_server_time", "--local-timezone", "UTC")
)
FAULTS = McpServerConfig("faults", command=sys.executable, args=(str(TEST_SERVER),), timeout_s=3.0)
MISSING = McpServerConfig("missing", command="/nonexistent/glmdesk-no-such-server")
BAD = McpServerConfig("bad", command=sys.executable, args=(str(BAD_SERVER),), timeout_s=5.0)


@pytest.fixture
def hub():
    hub = McpHub(McpConfig((TIME, FAULTS, MISSING, BAD)), consent=lambda _s: True)
    yield hub
    hub.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def http_server_url():
    """The test server on streamable HTTP at 127.0.0.1 (its own process); ready once
    uvicorn says it is running."""
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, str(TEST_SERVER), "--http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    seen = []
    for line in proc.stderr:  # blocks until uvicorn writes (or the process ends)
        seen.append(line)
        if "Uvicorn running on" in line:
            break
    else:
        raise RuntimeError("the HTTP test server did not start:\n" + "".join(seen))
    threading.Thread(target=proc.stderr.read, daemon=True).start()  # keep its pipe drained
    yield f"http://127.0.0.1:{port}/mcp"
    proc.terminate()
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:  # uvicorn waits for open sessions
        proc.kill()
        proc.wait(5)
