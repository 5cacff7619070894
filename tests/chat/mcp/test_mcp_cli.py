"""``glmdesk chat --remote URL --mcp time --approve ...`` against a local OpenAI-compatible
server that answers with a tool call; ``glmdesk mcp list`` and ``glmdesk mcp call``."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from glmdesk.chat.mcp.config import McpConfig
from glmdesk.core import paths
from tests.chat.mcp.conftest import FAULTS, TIME
from tests.helpers.cli import run_cli

CALL = {"timezone": "Asia/Tokyo"}


class OpenAiServer:
    """A scripted ``/v1`` server: the first answer calls ``get_current_time``, the next
    one says text. Keeps every chat request's body."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                self._json({"object": "list", "data": [{"id": "glm-4.5-air", "object": "model"}]})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                owner.requests.append(body)
                if len(owner.requests) == 1:
                    call = {"index": 0, "id": "call_1", "type": "function",
                            "function": {"name": "get_current_time", "arguments": json.dumps(CALL)}}  # fmt: skip
                    deltas = [({"role": "assistant", "tool_calls": [call]}, None), ({}, "tool_calls")]
                else:
                    deltas = [({"role": "assistant", "content": "It is late in Tokyo."}, None), ({}, "stop")]
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                for delta, finish in deltas:
                    chunk = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "glm-4.5-air",
                             "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}  # fmt: skip
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")

            def _json(self, data):
                raw = json.dumps(data).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def openai_server():
    server = OpenAiServer()
    yield server
    server.close()


@pytest.fixture
def configured():
    from glmdesk.chat.mcp.config import MemorySecrets

    McpConfig((TIME, FAULTS)).save(paths.config_dir() / "mcp.json", MemorySecrets())


def test_chat_with_always_sends_the_tools_result_in_the_second_request(openai_server, configured):
    out = run_cli(
        "chat",
        "--remote",
        openai_server.url,
        "--mcp",
        "time",
        "--approve",
        "always",
        "--prompt",
        "Time in Tokyo?",
    )
    assert out.returncode == 0, out.stderr
    first, second = openai_server.requests
    offered = {t["function"]["name"] for t in first["tools"]}
    assert {"get_current_time", "convert_time"} <= offered
    tool_messages = [m for m in second["messages"] if m["role"] == "tool"]
    assert len(tool_messages) == 1 and '"timezone": "Asia/Tokyo"' in tool_messages[0]["content"]
    assert "+09:00" in tool_messages[0]["content"]
    assert "It is late in Tokyo." in out.stdout


def test_chat_with_ask_shows_the_command_then_the_call_and_a_denial_reaches_the_model(
    openai_server, configured
):
    out = run_cli(
        "chat", "--remote", openai_server.url, "--mcp", "time", "--prompt", "Time in Tokyo?",
        input_text="y\nn not now, thanks\n",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "mcp_server_time" in out.stdout and '"timezone": "Asia/Tokyo"' in out.stdout
    tool = next(m for m in openai_server.requests[1]["messages"] if m["role"] == "tool")
    assert tool["content"] == "The user declined to run this tool call. not now, thanks"


def test_chat_with_never_runs_no_call(openai_server, configured):
    out = run_cli(
        "chat",
        "--remote",
        openai_server.url,
        "--mcp",
        "time",
        "--approve",
        "never",
        "--prompt",
        "Time?",
        input_text="y\n",
    )
    assert out.returncode == 0, out.stderr
    tool = next(m for m in openai_server.requests[1]["messages"] if m["role"] == "tool")
    assert "declined" in tool["content"] and "--approve never" in tool["content"]


def test_an_unknown_server_is_refused_with_a_sentence(openai_server, configured):
    out = run_cli("chat", "--remote", openai_server.url, "--mcp", "nope", "--prompt", "x")
    assert out.returncode == 2 and "no MCP server called nope" in out.stderr


def test_mcp_list_and_call(configured):
    listed = run_cli("mcp", "list", "time", input_text="y\n")
    assert listed.returncode == 0, listed.stderr
    assert "ready, 2 tools" in listed.stdout and "get_current_time  [read-only]" in listed.stdout
    called = run_cli(
        "mcp", "call", "time", "get_current_time", json.dumps({"timezone": "UTC"}), input_text="y\n"
    )
    assert called.returncode == 0 and '"timezone": "UTC"' in called.stdout  # command agreed before: one y
    denied = run_cli("mcp", "call", "faults", "echo", '{"text": "hi"}', input_text="y\nn\n")
    assert denied.returncode == 1 and "echo: hi" not in denied.stdout
    always = run_cli("mcp", "call", "faults", "echo", '{"text": "hi"}', "--approve", "always")
    assert always.returncode == 0 and "echo: hi" in always.stdout
    bad = run_cli("mcp", "call", "time", "get_current_time", "[1]", "--approve", "always")
    assert bad.returncode == 2 and "JSON object" in bad.stderr
