"""The MCP hub against real servers: ``mcp-server-time`` and the SDK-built test server
over stdio, the test server over streamable HTTP; faults never raise and never hang."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from glmdesk.chat.mcp.config import McpConfig, McpServerConfig
from glmdesk.chat.mcp.hub import McpHub
from glmdesk.chat.mcp.results import MAX_RESULT_CHARS
from tests.chat.mcp.conftest import TIME


def test_the_time_server_lists_its_tools_and_answers_a_call(hub):
    seen = []
    hub._on_status = lambda s: seen.append((s.name, s.state))
    status = hub.ensure("time")
    assert status.state == "ready"
    by_name = {t.name: t for t in status.tools}
    assert set(by_name) == {"get_current_time", "convert_time"}
    assert by_name["get_current_time"].read_only  # the server's readOnlyHint
    assert "timezone" in by_name["get_current_time"].input_schema["properties"]
    result = hub.call("time", "get_current_time", {"timezone": "Asia/Tokyo"})
    assert '"timezone": "Asia/Tokyo"' in result.content and "+09:00" in result.content
    assert seen[:2] == [("time", "starting"), ("time", "ready")]


def test_a_tools_error_reaches_the_model_as_its_result(hub):
    result = hub.call("time", "get_current_time", {"timezone": "Nowhere/Atlantis"})
    assert result.content.startswith("The tool reported an error:") and "Nowhere/Atlantis" in result.content


def test_the_server_is_never_started_without_consent():
    asked = []
    hub = McpHub(McpConfig((TIME,)), consent=lambda s: asked.append(s.command_line()) or False)
    try:
        result = hub.call("time", "get_current_time", {"timezone": "UTC"})
        assert asked == [TIME.command_line()]
        assert hub.status("time").state == "stopped"
        assert "was not allowed to run" in result.content
    finally:
        hub.close()


def test_a_missing_command_fails_with_a_sentence(hub):
    status = hub.ensure("missing")
    assert status.state == "failed" and "was not found" in status.error
    result = hub.call("missing", "anything", {})
    assert (
        result.content.startswith("The tool could not be run:") and "missing is not running" in result.content
    )


def test_results_text_image_resource_structured(hub):
    assert hub.call("faults", "echo", {"text": "héllo"}).content == "echo: héllo"
    added = hub.call("faults", "add", {"a": 2, "b": 40})
    assert '"sum": 42' in added.content
    picture = hub.call("faults", "picture", {})
    assert picture.images and picture.images[0].startswith(b"\x89PNG") and "[image 1]" in picture.content
    notes = hub.call("faults", "notes", {})
    assert "[resource note://1]" in notes.content and "the note's text" in notes.content


def test_a_server_that_exits_mid_call_is_reported_and_restarts_next_time(hub):
    result = hub.call("faults", "die", {})
    assert "ended during the call of die" in result.content
    status = hub.status("faults")
    assert status.state == "failed"
    assert any("dying on purpose" in line for line in status.stderr_tail)
    assert hub.call("faults", "echo", {"text": "again"}).content == "echo: again"


def test_a_malformed_result_is_told_and_the_server_keeps_running(hub):
    result = hub.call("bad", "broken", {})
    assert result.content.startswith("The tool could not be run: bad's result for broken could not be read")
    assert "content: Input should be a valid list" in result.content
    assert hub.status("bad").state == "ready"


def test_a_call_past_the_time_limit_ends_with_a_note(hub):
    start = time.monotonic()
    result = hub.call("faults", "nap", {"seconds": 30}, timeout_s=1.0)
    assert time.monotonic() - start < 10
    assert "did not answer the call of nap within 1 s" in result.content
    assert hub.call("faults", "echo", {"text": "still here"}).content == "echo: still here"


def test_stop_ends_a_waiting_call_at_once(hub):
    hub.ensure("faults")
    stop = threading.Event()
    threading.Timer(0.3, stop.set).start()
    start = time.monotonic()
    result = hub.call("faults", "nap", {"seconds": 30}, stop=stop)
    assert time.monotonic() - start < 5 and "was stopped" in result.content


def test_a_50_mb_result_over_http_is_cut_with_a_note(http_server_url):
    hub = McpHub(McpConfig((McpServerConfig("web", url=http_server_url),)), consent=lambda _s: True)
    try:
        result = hub.call("web", "huge", {"megabytes": 50}, timeout_s=120)
    finally:
        hub.close()
    assert len(result.content) < MAX_RESULT_CHARS + 200
    assert "The result was cut: " in result.content and "52,428,800 characters" in result.content


def test_a_50_mb_result_over_stdio_is_cut_with_a_note(hub):
    # The relay process cuts the line before the SDK's reader sees it (that reader joins
    # a long line's pieces again and again: 50 MB took minutes, now seconds).
    start = time.monotonic()
    result = hub.call("faults", "huge", {"megabytes": 50}, timeout_s=120)
    assert "The result was cut: " in result.content and "52,428,800 characters" in result.content
    assert len(result.content) < MAX_RESULT_CHARS + 200 and time.monotonic() - start < 60


def test_the_relay_is_left_out_where_it_cannot_help(monkeypatch):
    import sys

    from glmdesk.chat.mcp.relay import relay_command

    wrapped = relay_command(sys.executable, ("-m", "x"), 1000, 2000, None)
    assert wrapped[1:4] == ["-I", "-S", str(Path(relay_command.__code__.co_filename).resolve())]
    assert wrapped[4:] == ["1000", "2000", "--", sys.executable, "-m", "x"]
    assert relay_command("/nonexistent/server", ("a",), 1000, 2000, None) == ["/nonexistent/server", "a"]
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    assert relay_command(sys.executable, (), 1000, 2000, None) == [sys.executable]


def test_a_flood_on_stderr_keeps_only_the_last_lines(hub):
    assert hub.call("faults", "shout", {"lines": 20000}).content == "done shouting"
    tail = hub.status("faults").stderr_tail
    assert len(tail) <= 20
    # one 20 MB line: its first 400 characters are kept, and the lines after it
    assert hub.call("faults", "mumble", {"megabytes": 20}).content == "done mumbling"
    lines = hub._running["faults"].stderr.lines
    settled = threading.Event()
    deadline = time.monotonic() + 20
    while list(lines)[-1:] != ["last words"] and time.monotonic() < deadline:
        settled.wait(0.05)  # the reader thread keeps up with the pipe
    assert list(lines)[-2:] == ["m" * 400, "last words"]


def _servers_processes():
    import psutil

    found = []
    for p in psutil.Process().children(recursive=True):
        try:
            line = p.cmdline()
        except psutil.Error:
            continue
        if (
            any("mcp_test_server" in a for a in line)
            and "--http" not in line
            or "child-of-test-server" in line
        ):
            found.append(p)
    return found


def test_stop_ends_the_servers_process_tree(hub):
    import psutil

    assert "child" in hub.call("faults", "spawn", {}).content
    tree = _servers_processes()
    lines = [" ".join(p.cmdline()) for p in tree]
    assert len(tree) == 3  # the relay, the server behind it and the child it started
    assert (
        sum("relay.py" in line for line in lines) == 1
        and sum("child-of-test-server" in line for line in lines) == 1
    )
    hub.stop("faults")
    assert hub.status("faults").state == "stopped"
    gone, alive = psutil.wait_procs(tree, timeout=10)
    assert not alive


def test_streamable_http_server(http_server_url):
    config = McpConfig((McpServerConfig("web", url=http_server_url, headers={"X-Test": "1"}),))
    hub = McpHub(config, consent=lambda _s: True)
    try:
        status = hub.ensure("web")
        assert status.state == "ready", status
        assert {"echo", "add", "nap"} <= {t.name for t in status.tools}
        assert hub.call("web", "echo", {"text": "over http"}).content == "echo: over http"
        assert "did not answer" in hub.call("web", "nap", {"seconds": 20}, timeout_s=1.0).content
    finally:
        hub.close()


def test_servers_end_with_glmdesk_their_whole_process_tree(tmp_path):
    """A process that made a hub, started a server that started a child, and then
    simply ended: the exit hook stops every server and its group."""
    import json
    import os
    import subprocess
    import sys

    import psutil

    script = tmp_path / "app.py"
    script.write_text(
        "import json, sys\n"
        "from glmdesk.chat.mcp.config import McpConfig\n"
        "from glmdesk.chat.mcp.hub import McpHub\n"
        "from tests.chat.mcp.conftest import FAULTS\n"
        "hub = McpHub(McpConfig((FAULTS,)), consent=lambda _s: True)\n"
        "print(hub.call('faults', 'spawn', {}).content, flush=True)\n"
        "import psutil\n"
        "print(json.dumps([p.pid for p in psutil.Process().children(recursive=True)]), flush=True)\n"
    )
    root = Path(__file__).resolve().parents[3]
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(root)},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    said, pids = done.stdout.splitlines()[-2:]
    assert said.startswith("child ") and len(json.loads(pids)) == 3  # relay, server, child
    _gone, alive = psutil.wait_procs(
        [psutil.Process(p) for p in json.loads(pids) if psutil.pid_exists(p)], timeout=10
    )
    assert not alive
