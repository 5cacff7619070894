"""A stdio MCP server's process: its stderr kept as a bounded tail, and its process
group ended as a whole (a server's helpers die with it).

The SDK's ``stdio_client`` starts the server in a session of its own (POSIX), so the
server's pid names the group its children inherit; :func:`end_group` sends SIGTERM and
then SIGKILL to that group. On Windows the SDK's job object does the same.
"""

from __future__ import annotations

import collections
import os
import threading
from typing import Any

#: Lines of a server's stderr kept (each cut to :data:`STDERR_LINE_CHARS` characters).
STDERR_LINES = 20
#: The longest stderr line kept, in characters.
STDERR_LINE_CHARS = 400


class StderrTail:
    """A pipe the server writes its stderr to; a thread keeps its last
    :data:`STDERR_LINES` lines (a server that floods stderr costs a bounded amount of
    memory and no GUI time)."""

    def __init__(self) -> None:
        read_fd, write_fd = os.pipe()
        self.writer = os.fdopen(write_fd, "w")
        self.lines: collections.deque[str] = collections.deque(maxlen=STDERR_LINES)
        self._reader = os.fdopen(read_fd, "rb")
        self._thread = threading.Thread(target=self._read, daemon=True, name="mcp-stderr")
        self._thread.start()

    def _read(self) -> None:
        """Keep each line's start; a line of any length is read in pieces (a server
        that writes megabytes without a newline costs no memory)."""
        with self._reader:
            inside = False  # in the rest of a line whose start was kept
            while piece := self._reader.readline(4 * STDERR_LINE_CHARS):
                if not inside:
                    self.lines.append(piece[:STDERR_LINE_CHARS].decode("utf-8", "replace").rstrip())
                inside = not piece.endswith(b"\n")

    def settle(self, timeout_s: float = 1.0) -> tuple[str, ...]:
        """The last lines once the server's end of the pipe closed (waits at most
        ``timeout_s``: a child of the server may keep it open)."""
        self._thread.join(timeout_s)
        return tuple(self.lines)

    def close_writer(self) -> None:
        """Close glmdesk's copy of the pipe's write end (the server keeps its own)."""
        if not self.writer.closed:
            self.writer.close()


def children() -> set[int]:
    """The pids of this process's direct children."""
    import psutil

    try:
        return {p.pid for p in psutil.Process().children()}
    except psutil.Error:
        return set()


def new_group(before: set[int], args: tuple[str, ...]) -> int:
    """The process group of the server just started (a child not in ``before`` whose
    command line ends with ``args``): its pid names the group its helpers inherit
    (0 when not found)."""
    import psutil

    for pid in sorted(children() - before):
        try:
            line = psutil.Process(pid).cmdline()
        except psutil.Error:
            continue
        if line[-len(args) :] == list(args) if args else line:
            try:
                return pid if os.getpgid(pid) == pid else 0
            except OSError:
                return 0
    return 0


def end_group(group: int, grace_s: float = 2.0) -> None:
    """End every process left in ``group`` (a server's helpers that outlive it): SIGTERM,
    then SIGKILL after ``grace_s`` s. POSIX only; elsewhere the SDK's job object does it."""
    import signal

    if not hasattr(os, "killpg"):
        return
    import psutil

    try:
        os.killpg(group, signal.SIGTERM)
    except OSError:
        return  # the group is gone
    left = [p for p in psutil.process_iter() if _in_group(p, group)]
    _gone, alive = psutil.wait_procs(left, timeout=grace_s)
    if alive:
        try:
            os.killpg(group, getattr(signal, "SIGKILL", signal.SIGTERM))
        except OSError:
            pass


def _in_group(process: Any, group: int) -> bool:
    try:
        return os.getpgid(process.pid) == group
    except OSError:
        return False
