"""The running MCP servers: one asyncio loop on its own daemon thread holds every
server's ``mcp.Client`` (the official SDK; stdio and streamable HTTP).

A server starts when first needed (:meth:`McpHub.ensure`), or with glmdesk when its
``autoStart`` is set, and never before ``consent(server)`` said yes (the front end shows
the command once and remembers the answer: :class:`~glmdesk.chat.mcp.approvals.McpApprovals`).
Its :class:`ServerStatus` is ``stopped``, ``starting``, ``ready`` (with its tools) or
``failed`` (with the last lines of its stderr); ``on_status`` hears each change (on the
hub's thread). A stdio server runs in its own session (process group); stopping it, or
:meth:`McpHub.close` when glmdesk ends, ends its whole process tree (the SDK's
``stdio_client``: stdin closed, then SIGTERM, then SIGKILL to the group).

Calls (:meth:`McpHub.call`) block the calling thread (the answer's), never the loop's
other servers; they end after the server's time limit, or at once when ``stop`` is set,
and never raise: a server that cannot start, exits mid-call or answers too late gives
a result that says so (the model reads it; the card shows it).
"""

from __future__ import annotations

import asyncio
import atexit
import collections
import concurrent.futures
import os
import sys
import threading
import time
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from glmdesk.chat.events import ToolResult
from glmdesk.chat.mcp.config import McpConfig, McpServerConfig
from glmdesk.chat.mcp.results import MAX_RESULT_CHARS, error_result, tool_result

#: Longest wait for a server to start and list its tools, in s.
START_TIMEOUT_S = 60.0
#: Lines of a server's stderr kept (each cut to 400 characters).
STDERR_LINES = 20

STATES = ("stopped", "starting", "ready", "failed")


@dataclass(frozen=True)
class McpTool:
    """One tool a server offers.

    Attributes:
        server: The server's name.
        name: The tool's name on that server.
        description: What it does (may be empty).
        input_schema: JSON Schema object of its arguments.
        read_only: The server marks it read-only (``annotations.readOnlyHint``).
        title: A display name (may be empty).
    """

    server: str
    name: str
    description: str = ""
    input_schema: Mapping[str, Any] = field(default_factory=dict)
    read_only: bool = False
    title: str = ""


@dataclass(frozen=True)
class ServerStatus:
    """Where one server stands.

    Attributes:
        name: The server's name.
        state: One of :data:`STATES`.
        tools: Its tools while ``ready``.
        error: Why it failed (a sentence), else empty.
        stderr_tail: Its last lines on stderr (stdio servers).
    """

    name: str
    state: str = "stopped"
    tools: tuple[McpTool, ...] = ()
    error: str = ""
    stderr_tail: tuple[str, ...] = ()

    def summary(self) -> str:
        """One line: ``ready, 2 tools`` / ``failed: ...``."""
        if self.state == "ready":
            return f"ready, {len(self.tools)} tool{'s' if len(self.tools) != 1 else ''}"
        if self.error:
            return f"{self.state}: {self.error}"
        return self.state


class _StderrTail:
    """A pipe the server writes its stderr to; a thread keeps its last lines (a server
    that floods stderr costs a bounded amount of memory)."""

    def __init__(self) -> None:
        read_fd, write_fd = os.pipe()
        self.writer = os.fdopen(write_fd, "w")
        self.lines: collections.deque[str] = collections.deque(maxlen=STDERR_LINES)
        self._reader = os.fdopen(read_fd, "rb")
        self._thread = threading.Thread(target=self._read, daemon=True, name="mcp-stderr")
        self._thread.start()

    def _read(self) -> None:
        with self._reader:
            for line in self._reader:
                self.lines.append(line[:400].decode("utf-8", "replace").rstrip())

    def settle(self, timeout_s: float = 1.0) -> tuple[str, ...]:
        """The last lines once the server's end of the pipe closed (waits at most
        ``timeout_s``: a child of the server may keep it open)."""
        self._thread.join(timeout_s)
        return tuple(self.lines)

    def close_writer(self) -> None:
        """Close glmdesk's copy of the pipe's write end (the server keeps its own)."""
        if not self.writer.closed:
            self.writer.close()


class _Running:
    """One server's task on the hub's loop."""

    def __init__(self, config: McpServerConfig) -> None:
        self.config = config
        self.client: Any = None
        self.ready = threading.Event()
        self.stop: asyncio.Event | None = None
        self.task: asyncio.Task | None = None
        self.stderr: _StderrTail | None = None
        self.group = 0  # the stdio server's process group (its pid), once known


def _client(config: McpServerConfig, stderr: _StderrTail | None):
    from mcp import Client, StdioServerParameters

    if config.command:
        from mcp.client.stdio import stdio_client

        params = StdioServerParameters(
            command=config.command, args=list(config.args), env=dict(config.env) or None
        )
        # stdio_client's own default is sys.stderr (a stdio server always gets a tail).
        errlog = stderr.writer if stderr is not None else sys.stderr
        return Client(stdio_client(params, errlog=errlog), cache=None)
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    http = create_mcp_http_client(headers=dict(config.headers) or None)
    return Client(streamable_http_client(config.url, http_client=http), cache=None)


def _children() -> set[int]:
    import psutil

    try:
        return {p.pid for p in psutil.Process().children()}
    except psutil.Error:
        return set()


def _new_group(before: set[int], config: McpServerConfig) -> int:
    """The process group of the server just started: the SDK starts it in a session of
    its own, so its pid names the group its helpers inherit (0 when not found)."""
    import psutil

    for pid in sorted(_children() - before):
        try:
            line = psutil.Process(pid).cmdline()
        except psutil.Error:
            continue
        if line[-len(config.args) :] == list(config.args) if config.args else line:
            try:
                return pid if os.getpgid(pid) == pid else 0
            except OSError:
                return 0
    return 0


def _end_group(group: int, grace_s: float = 2.0) -> None:
    """End every process left in ``group`` (a server's helpers that outlive it): SIGTERM,
    then SIGKILL after ``grace_s``. POSIX only; elsewhere the SDK's job object does it."""
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
            os.killpg(group, signal.SIGKILL)
        except OSError:
            pass


def _in_group(process, group: int) -> bool:
    try:
        return os.getpgid(process.pid) == group
    except OSError:
        return False


def _tool(server: str, tool: Any) -> McpTool:
    annotations = getattr(tool, "annotations", None)
    schema = getattr(tool, "input_schema", None) or {"type": "object", "properties": {}}
    return McpTool(
        server=server,
        name=tool.name,
        description=tool.description or "",
        input_schema=dict(schema),
        read_only=bool(getattr(annotations, "read_only_hint", False)),
        title=getattr(tool, "title", None) or "",
    )


def _sentence(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_sentence(e) for e in exc.exceptions)
    if isinstance(exc, FileNotFoundError):
        return f"the command {exc.filename or ''} was not found".replace("  ", " ")
    text = str(exc).strip()
    return f"{exc.__class__.__name__}: {text}" if text else exc.__class__.__name__


class McpHub:
    """The servers of one :class:`~glmdesk.chat.mcp.config.McpConfig` (see the module
    docstring). Thread-safe; one per app (the window) or per command (the CLI).

    Args:
        config: The configured servers.
        consent: ``consent(server) -> bool``: may this server's command run? Asked on
            the calling thread before each first start (the front end remembers a yes).
        on_status: Told every status change (on the hub's thread).
    """

    def __init__(
        self,
        config: McpConfig,
        consent: Callable[[McpServerConfig], bool],
        on_status: Callable[[ServerStatus], None] | None = None,
    ) -> None:
        self.config = config
        self._consent = consent
        self._on_status = on_status
        self._listeners: list[Callable[[ServerStatus], None]] = []
        self._lock = threading.RLock()
        self._status: dict[str, ServerStatus] = {s.name: ServerStatus(s.name) for s in config.servers}
        self._running: dict[str, _Running] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        me = weakref.ref(self)
        atexit.register(lambda: (hub := me()) is not None and hub.close())  # servers end with glmdesk

    # --- the loop ---------------------------------------------------------------
    def _event_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                threading.Thread(target=self._loop.run_forever, daemon=True, name="mcp-hub").start()
            return self._loop

    def _submit(self, coro) -> concurrent.futures.Future:
        return asyncio.run_coroutine_threadsafe(coro, self._event_loop())

    def _set(self, status: ServerStatus) -> None:
        with self._lock:
            self._status[status.name] = status
            listeners = [f for f in (self._on_status, *self._listeners) if f is not None]
        for listener in listeners:
            try:
                listener(status)
            except Exception:  # a listener's fault is not the server's
                pass

    def add_listener(self, listener: Callable[[ServerStatus], None]) -> None:
        """Also tell ``listener`` every status change (on the hub's thread)."""
        with self._lock:
            self._listeners.append(listener)

    def reconfigure(self, config: McpConfig) -> None:
        """Use ``config`` from now on: a server removed or changed is stopped (a changed
        one starts again, with its new settings, when next needed)."""
        with self._lock:
            old = {s.name: s for s in self.config.servers}
            self.config = config
        for name, before in old.items():
            if config.server(name) != before:
                self.stop(name)
        with self._lock:
            for s in config.servers:
                self._status.setdefault(s.name, ServerStatus(s.name))
            for name in [n for n in self._status if config.server(n) is None]:
                del self._status[name]

    # --- state ------------------------------------------------------------------
    def status(self, name: str) -> ServerStatus:
        """Where ``name`` stands (``stopped`` for a server not started or not configured)."""
        with self._lock:
            return self._status.get(name, ServerStatus(name))

    def statuses(self) -> tuple[ServerStatus, ...]:
        """Every configured server's status, in the file's order."""
        return tuple(self.status(s.name) for s in self.config.servers)

    # --- lifecycle --------------------------------------------------------------
    def ensure(self, name: str, timeout_s: float = START_TIMEOUT_S) -> ServerStatus:
        """Start ``name`` unless it is ready, and wait until it is ready or failed.

        A server not configured, disabled or refused by ``consent`` is not started: its
        status is ``failed`` with a sentence that says why.
        """
        with self._lock:
            current = self._status.get(name, ServerStatus(name))
            running = self._running.get(name)
        if current.state == "ready" and running is not None:
            return current
        if running is not None and current.state == "starting":
            running.ready.wait(timeout_s)
            return self.status(name)
        config = self.config.server(name)
        if config is None:
            return ServerStatus(name, "failed", error=f"no MCP server called {name} is configured")
        if config.disabled:
            status = ServerStatus(name, "failed", error=f"the MCP server {name} is turned off")
            self._set(status)
            return status
        if not self._consent(config):
            status = ServerStatus(
                name, "stopped", error=f"the command of the MCP server {name} was not allowed to run"
            )
            self._set(status)
            return status
        if running is not None:
            self.stop(name)
        return self._start(config, timeout_s)

    def _start(self, config: McpServerConfig, timeout_s: float) -> ServerStatus:
        running = _Running(config)
        with self._lock:
            self._running[config.name] = running
        self._set(ServerStatus(config.name, "starting"))
        self._submit(self._serve(running))
        if not running.ready.wait(timeout_s):
            self.stop(config.name)
            status = ServerStatus(
                config.name,
                "failed",
                error=f"it did not start within {timeout_s:g} s",
                stderr_tail=self._tail(running),
            )
            self._set(status)
            return status
        return self.status(config.name)

    @staticmethod
    def _tail(running: _Running) -> tuple[str, ...]:
        return tuple(running.stderr.lines) if running.stderr is not None else ()

    async def _serve(self, running: _Running) -> None:
        name = running.config.name
        running.stop = asyncio.Event()
        running.task = asyncio.current_task()
        failed: BaseException | None = None
        try:
            running.stderr = _StderrTail() if running.config.command else None
            before = _children()
            async with _client(running.config, running.stderr) as client:
                if running.stderr is not None:
                    running.stderr.close_writer()
                    running.group = _new_group(before, running.config)
                listed = await asyncio.wait_for(client.list_tools(), START_TIMEOUT_S)
                tools = tuple(_tool(name, t) for t in listed.tools)
                running.client = client
                self._set(ServerStatus(name, "ready", tools))
                running.ready.set()
                await running.stop.wait()
        except asyncio.CancelledError:
            pass
        except BaseException as exc:  # noqa: BLE001 - every failure becomes a status
            failed = exc
        finally:
            running.client = None
            if running.stderr is not None:
                running.stderr.close_writer()
            if running.group:
                await asyncio.to_thread(_end_group, running.group)
            with self._lock:
                if self._running.get(name) is running:
                    del self._running[name]
                current = self._status.get(name)
            if failed is not None:
                tail = await asyncio.to_thread(running.stderr.settle) if running.stderr is not None else ()
                self._set(ServerStatus(name, "failed", error=_sentence(failed), stderr_tail=tail))
            elif current is not None and current.state != "failed":
                self._set(ServerStatus(name, "stopped"))
            running.ready.set()

    def stop(self, name: str, timeout_s: float = 10.0) -> None:
        """Stop ``name`` (its process tree) and wait for it, at most ``timeout_s``."""
        with self._lock:
            running = self._running.get(name)
            loop = self._loop
        if running is None or loop is None:
            return

        async def ask_stop():
            if running.stop is not None:
                running.stop.set()
            task = running.task
            if task is not None:
                try:
                    await asyncio.wait_for(asyncio.shield(task), timeout_s)
                except (TimeoutError, asyncio.CancelledError):
                    task.cancel()

        try:
            asyncio.run_coroutine_threadsafe(ask_stop(), loop).result(timeout_s + 2)
        except (concurrent.futures.TimeoutError, RuntimeError):
            pass

    def restart(self, name: str, timeout_s: float = START_TIMEOUT_S) -> ServerStatus:
        """Stop ``name`` and start it again (``consent`` is asked as for a first start)."""
        self.stop(name)
        return self.ensure(name, timeout_s)

    def start_auto(self) -> None:
        """Start the servers marked ``autoStart`` (in the background; each still needs
        ``consent``)."""
        for s in self.config.servers:
            if s.auto_start and not s.disabled:
                threading.Thread(target=self.ensure, args=(s.name,), daemon=True).start()

    def close(self) -> None:
        """Stop every server (glmdesk is ending) and the loop."""
        with self._lock:
            names = list(self._running)
        for name in names:
            self.stop(name)
        with self._lock:
            loop, self._loop = self._loop, None
        if loop is not None:
            loop.call_soon_threadsafe(loop.stop)

    # --- calls ------------------------------------------------------------------
    def tools(self, name: str) -> tuple[McpTool, ...]:
        """``name``'s tools, starting it if needed (``()`` when it cannot start)."""
        return self.ensure(name).tools

    def call(
        self,
        server: str,
        tool: str,
        arguments: Mapping[str, Any],
        stop: threading.Event | None = None,
        timeout_s: float | None = None,
        limit: int = MAX_RESULT_CHARS,
    ) -> ToolResult:
        """Call ``tool`` of ``server`` with ``arguments``; never raises (see the module
        docstring).

        Args:
            timeout_s: The time limit, in s (default: the server's ``timeoutSeconds``).
            stop: Ends the wait at once when set (the call is cancelled).
            limit: The most characters of the result the model reads.
        """
        status = self.ensure(server)
        config = self.config.server(server)
        if status.state != "ready" or config is None:
            return error_result(f"the MCP server {server} is not running ({status.summary()}).")
        with self._lock:
            running = self._running.get(server)
        if running is None or running.client is None:
            return error_result(f"the MCP server {server} stopped.")
        client = running.client
        seconds = timeout_s if timeout_s is not None else config.timeout_s

        async def send():
            return await client.call_tool(tool, dict(arguments), read_timeout_seconds=seconds)

        future = self._submit(send())
        deadline = time.monotonic() + seconds + 2.0  # the SDK's own limit ends it first
        while True:
            try:
                result = future.result(0.1)
                break
            except TimeoutError:  # the wait's 0.1 s, or the call's own time limit
                if future.done() or time.monotonic() > deadline:
                    future.cancel()
                    return error_result(f"{server} did not answer the call of {tool} within {seconds:g} s.")
                if stop is not None and stop.is_set():
                    future.cancel()
                    return error_result(f"the call of {tool} was stopped.")
                if running.client is None:  # the server ended while we waited
                    future.cancel()
                    return self._lost(server, tool)
            except concurrent.futures.CancelledError:
                return error_result(f"the call of {tool} was stopped.")
            except Exception as exc:  # noqa: BLE001 - the SDK's errors, a dead connection...
                if _timed_out(exc):
                    return error_result(f"{server} did not answer the call of {tool} within {seconds:g} s.")
                if running.client is None or not _alive(running) or _closed(exc):
                    return self._lost(server, tool)
                return error_result(f"{server} answered the call of {tool} with an error: {_sentence(exc)}.")
        try:
            return tool_result(result, limit)
        except Exception as exc:  # noqa: BLE001 - a malformed result
            return error_result(f"{server}'s result for {tool} could not be read ({_sentence(exc)}).")

    def _lost(self, server: str, tool: str) -> ToolResult:
        with self._lock:
            running = self._running.get(server)
        self.stop(server, 5.0)
        lines = running.stderr.settle() if running is not None and running.stderr is not None else ()
        status = self.status(server)
        lines = lines or status.stderr_tail
        tail = "\n".join(lines[-5:])
        more = f" Its last output:\n{tail}" if tail else ""
        self._set(ServerStatus(server, "failed", error="it ended during a call", stderr_tail=lines))
        return error_result(f"the MCP server {server} ended during the call of {tool}.{more}")


def _timed_out(exc: BaseException) -> bool:
    """Whether ``exc`` is the SDK's request timeout (JSON-RPC -32001 or a TimeoutError)."""
    from mcp.shared.exceptions import MCPError

    return isinstance(exc, TimeoutError) or (isinstance(exc, MCPError) and exc.code == -32001)


def _closed(exc: BaseException) -> bool:
    """Whether ``exc`` says the connection to the server ended (JSON-RPC -32000)."""
    from mcp.shared.exceptions import MCPError

    return isinstance(exc, MCPError) and exc.code == -32000


def _alive(running: _Running) -> bool:
    task = running.task
    return task is not None and not task.done()
