"""The window while MCP servers misbehave: the longest gap of a 10 ms GUI heartbeat per case.

Each case runs one call of a real server (the SDK-built test server of
``tests/helpers/mcp_test_server.py`` over stdio (behind glmdesk's relay) and streamable HTTP, a hand-written one
that answers with a malformed result, a command that does not exist) on a thread, as an
answer's tool loop does; the result then reaches the GUI thread through a queued signal
and is shown as the chat shows a tool's result (a ``MessageWidget`` of role
``observation``). A ``QTimer`` ticking every 10 ms on
the GUI thread records the longest interval between ticks, from the call's start until
the chat has shown its result; the idle case (nothing runs) is the machine's
own baseline. The SDK's first import (pydantic building its models: once per process,
whichever server starts first) is a case of its own, run before the others.

Goal: each case's longest gap under 50 ms besides the idle baseline.

Run: ``QT_QPA_PLATFORM=offscreen python benchmarks/mcp_faults.py [--repeat 3]``
(prints one line per case: its longest gap in its best run and in its worst, in ms, and
what the model read). A stall the code causes shows in every run; a busy machine's
scheduling shows in some, so the best run's figure is the one to compare.
"""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TEST_SERVER = ROOT / "tests" / "helpers" / "mcp_test_server.py"
BAD_SERVER = ROOT / "tests" / "helpers" / "mcp_bad_server.py"
HEARTBEAT_MS = 10


def _http_server() -> tuple[subprocess.Popen, str]:
    """The test server on streamable HTTP (its own process) and its URL."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, str(TEST_SERVER), "--http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    for line in proc.stderr:
        if "Uvicorn running on" in line:
            break
    stream = proc.stderr
    threading.Thread(target=stream.read, daemon=True).start()
    return proc, f"http://127.0.0.1:{port}/mcp"


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs of each case (default 3)")
    parser.add_argument("--megabytes", type=int, default=50, help="size of the huge results (default 50)")
    args = parser.parse_args()

    from PySide6.QtCore import QObject, QTimer, Signal
    from PySide6.QtWidgets import QApplication, QVBoxLayout, QWidget

    from glmdesk.chat.mcp.config import McpConfig, McpServerConfig
    from glmdesk.chat.mcp.hub import McpHub
    from glmdesk.ui.chat.message_widget import MessageWidget

    app = QApplication.instance() or QApplication([])
    proc, url = _http_server()
    servers = (
        McpServerConfig("faults", command=sys.executable, args=(str(TEST_SERVER),), timeout_s=2.0),
        McpServerConfig("bad", command=sys.executable, args=(str(BAD_SERVER),)),
        McpServerConfig("missing", command="/nonexistent/glmdesk-no-such-server"),
        McpServerConfig("web", url=url, timeout_s=300),
    )
    hub = McpHub(McpConfig(servers), consent=lambda _s: True)
    cases = [
        ("idle (baseline)", None, None, {}, None),
        ("the SDK's first import", "import", None, {}, None),
        ("missing command", "missing", "anything", {}, None),
        ("exits mid-call", "faults", "die", {}, None),
        ("past its time limit (2 s)", "faults", "nap", {"seconds": 30}, None),
        ("floods stderr (20,000 lines)", "faults", "shout", {"lines": 20000}, None),
        ("malformed result", "bad", "broken", {}, None),
        (f"{args.megabytes} MB result over stdio", "faults", "huge", {"megabytes": args.megabytes}, 300.0),
        (f"{args.megabytes} MB result over HTTP", "web", "huge", {"megabytes": args.megabytes}, None),
    ]

    class Relay(QObject):
        result_ready = Signal(str)

    window = QWidget()
    window.resize(800, 600)
    column = QVBoxLayout(window)
    window.show()
    relay = Relay()
    shown: list[str] = []

    def show(text: str) -> None:
        while column.count():
            item = column.takeAt(0)
            old = item.widget() if item is not None else None
            if old is not None:
                old.deleteLater()
        column.addWidget(MessageWidget("observation", text))
        shown.append(text)

    relay.result_ready.connect(show)

    try:
        for label, server, tool, arguments, timeout_s in cases:
            gaps: list[float] = []
            said = ""
            for _ in range(args.repeat):
                if server not in (None, "missing", "import"):
                    hub.ensure(server)  # started before the clock: a start is not the case
                last = [time.perf_counter()]
                gap = [0.0]

                def tick(last=last, gap=gap) -> None:
                    now = time.perf_counter()
                    gap[0] = max(gap[0], now - last[0])
                    last[0] = now

                timer = QTimer()
                timer.setInterval(HEARTBEAT_MS)
                timer.timeout.connect(tick)
                shown.clear()

                def work(server=server, tool=tool, arguments=arguments, timeout_s=timeout_s) -> None:
                    if server is None:
                        time.sleep(2.0)
                        relay.result_ready.emit("")
                        return
                    if server == "import":  # once per process, whichever server is first
                        import mcp.client.stdio  # noqa: F401
                        import mcp.client.streamable_http  # noqa: F401

                        relay.result_ready.emit("")
                        return
                    relay.result_ready.emit(hub.call(server, tool, arguments, timeout_s=timeout_s).content)

                timer.start()
                threading.Thread(target=work, daemon=True).start()
                while not shown:
                    app.processEvents()
                    time.sleep(0.001)
                for _ in range(5):  # a few more ticks after the result is shown
                    app.processEvents()
                    time.sleep(HEARTBEAT_MS / 1000)
                timer.stop()
                gaps.append(gap[0])
                said = shown[0].splitlines()[-1][:80] if shown[0] else ""
            print(
                f"{label:28s} longest GUI gap {min(gaps) * 1000:4.0f} ms"
                f" (worst run {max(gaps) * 1000:4.0f} ms)   {said[:70]}",
                flush=True,
            )
    finally:
        hub.close()
        proc.terminate()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
