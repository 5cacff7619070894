"""A stdio MCP server run behind a small relay process that cuts its huge answers.

``python -I -S relay.py LIMIT BLOB_LIMIT -- COMMAND [ARGS...]`` starts ``COMMAND``,
passes glmdesk's messages to it unchanged and its answers back line by line; a line (one
JSON-RPC message) longer than ``LIMIT`` bytes has its long strings cut first
(:func:`~glmdesk.chat.mcp.shrink.shrink_json`: the first ``LIMIT`` characters and a
mark of the full length). The cutting costs glmdesk nothing: it runs in the relay's own
process, and the SDK then reads short lines (its stdio reader joins a long line's
pieces again and again, so 50 MB took minutes, and its parse held glmdesk's GIL).

The server's stderr and environment are the relay's; the relay is the process the SDK
starts in a session of its own, so the server is in its process group and ends with it.
The relay exits with the server's exit status when the server closes its output.

Run as a script by path (no package import, standard library only, so ``-I -S`` starts
it fast and it works whatever ``PYTHONPATH`` the SDK's environment leaves out).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

#: Bytes read from the server per read.
CHUNK = 1 << 16


def relay_command(
    command: str, args: tuple[str, ...], limit: int, blob_limit: int, path: str | None
) -> list[str]:
    """The command line that runs ``command`` behind the relay, or ``[command, *args]``
    when it cannot be: a frozen app has no Python to run it with; a command not found on
    ``path`` is left to fail as itself, so the user reads that it was not found; on
    Windows the SDK resolves commands its own way (``.cmd`` shims), so it is left to it."""
    if os.name != "posix" or getattr(sys, "frozen", False) or shutil.which(command, path=path) is None:
        return [command, *args]
    relay = str(Path(__file__).resolve())
    return [sys.executable, "-I", "-S", relay, str(limit), str(blob_limit), "--", command, *args]


def _shrink_json():
    """:func:`glmdesk.chat.mcp.shrink.shrink_json`, loaded from its file (no package)."""
    spec = importlib.util.spec_from_file_location("_glmdesk_shrink", Path(__file__).with_name("shrink.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.shrink_json


def _forward_input(server: subprocess.Popen) -> None:
    """glmdesk's messages to the server, as they come; closes its input at our EOF."""
    source, sink = sys.stdin.fileno(), server.stdin
    assert sink is not None
    try:
        while chunk := os.read(source, CHUNK):
            sink.write(chunk)
            sink.flush()
    except (BrokenPipeError, OSError):
        pass
    finally:
        try:
            sink.close()
        except OSError:
            pass


def main(argv: list[str] | None = None) -> int:
    """Run the relay (see the module docstring); returns the server's exit status."""
    argv = sys.argv[1:] if argv is None else argv
    split = argv.index("--")
    limit, blob_limit, command = int(argv[0]), int(argv[1]), argv[split + 1 :]
    shrink_json = _shrink_json()
    try:
        server = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    except OSError as exc:
        print(f"{command[0]}: {exc.strerror or exc}", file=sys.stderr, flush=True)
        return 127
    threading.Thread(target=_forward_input, args=(server,), daemon=True).start()
    source, sink = server.stdout, sys.stdout.buffer
    assert source is not None
    pending = bytearray()
    while chunk := source.read(CHUNK):
        newline = chunk.rfind(b"\n")
        if newline < 0:
            pending += chunk
            continue
        pending += chunk[: newline + 1]
        block, pending = bytes(pending), bytearray(chunk[newline + 1 :])
        if len(block) > limit:
            lines = block.split(b"\n")
            block = b"\n".join(
                shrink_json(line, limit, blob_limit) if len(line) > limit else line for line in lines
            )
        sink.write(block)
        sink.flush()
    if pending:
        sink.write(shrink_json(bytes(pending), limit, blob_limit))
        sink.flush()
    return server.wait()


if __name__ == "__main__":
    status = main()
    sys.stdout.flush()
    os._exit(status)  # not sys.exit: the input thread may still hold stdin's lock
