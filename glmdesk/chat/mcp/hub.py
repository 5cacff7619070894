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
import concurrent.futures
import threading
import time
import weakref
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from glmdesk.chat.events import ToolResult
from glmdesk.chat.mcp.config import McpConfig, McpServerConfig
from glmdesk.chat.mcp.process import StderrTail, children, end_group, new_group
from glmdesk.chat.mcp.results import MAX_RESULT_CHARS, error_result, tool_result
from glmdesk.chat.mcp.status import STATES, McpTool, ServerStatus, tool_of

__all__ = ["STATES", "START_TIMEOUT_S", "McpHub", "McpTool", "McpUnavailable", "ServerStatus"]

#: Longest wait for a server to start and list its tools, in s.
START_TIMEOUT_S = 60.0


class McpUnavailable(ValueError):
    """A request to a server that could not be answered; the message is one sentence."""


class _Running:
    """One server's task on the hub's loop."""

    def __init__(self, config: McpServerConfig) -> None:
        self.config = config
        self.client: Any = None
        self.ready = threading.Event()
        self.stop: asyncio.Event | None = None
        self.task: asyncio.Task | None = None
        self.stderr: StderrTail | None = None
        self.group = 0  # the stdio server's process group (its pid), once known


def _sentence(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_sentence(e) for e in exc.exceptions)
    if isinstance(exc, FileNotFoundError):
        return f"the command {exc.filename or ''} was not found".replace("  ", " ")
    from pydantic import ValidationError

    if isinstance(exc, ValidationError):  # the SDK could not read what the server sent
        found = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'it'}: {e['msg']}" for e in exc.errors()[:3]
        )
        return f"it is not what MCP allows ({found})"
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
            running.stderr = StderrTail() if running.config.command else None
            before = children()
            from glmdesk.chat.mcp.transport import client as sdk_client

            async with sdk_client(running.config, running.stderr) as client:
                if running.stderr is not None:
                    running.stderr.close_writer()
                    running.group = new_group(before, running.config.args)
                listed = await asyncio.wait_for(client.list_tools(), START_TIMEOUT_S)
                tools = tuple(tool_of(name, t) for t in listed.tools)
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
                await _off_loop(end_group, running.group)
            with self._lock:
                if self._running.get(name) is running:
                    del self._running[name]
                current = self._status.get(name)
            if failed is not None:
                tail = await _off_loop(running.stderr.settle) if running.stderr is not None else ()
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
            limit: The most characters of the result the model reads (at most
                :data:`~glmdesk.chat.mcp.results.MAX_RESULT_CHARS`: longer strings are
                cut before the answer is parsed, by the relay or the HTTP client).
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
                if _malformed(exc):
                    return error_result(f"{server}'s result for {tool} could not be read: {_sentence(exc)}.")
                return error_result(f"{server} answered the call of {tool} with an error: {_sentence(exc)}.")
        try:
            return tool_result(result, limit)
        except Exception as exc:  # noqa: BLE001 - a malformed result
            return error_result(f"{server}'s result for {tool} could not be read ({_sentence(exc)}).")

    def request(
        self, server: str, send: Callable[[Any], Awaitable[Any]], timeout_s: float | None = None
    ) -> Any:
        """``await send(client)`` with ``server``'s SDK client (started if needed), for
        what is not a tool call: its prompts and resources.

        Args:
            send: Given the ``mcp.Client``, returns the awaitable request.
            timeout_s: The time limit, in s (default: the server's ``timeoutSeconds``).

        Raises:
            McpUnavailable: the server is not running, did not answer in time, or failed
                (one sentence).
        """
        status = self.ensure(server)
        config = self.config.server(server)
        with self._lock:
            running = self._running.get(server)
        client = running.client if running is not None else None
        if status.state != "ready" or config is None or client is None:
            raise McpUnavailable(f"The MCP server {server} is not running ({status.summary()}).")
        seconds = timeout_s if timeout_s is not None else config.timeout_s
        future = self._submit(asyncio.wait_for(send(client), seconds))
        try:
            return future.result(seconds + 2.0)
        except (TimeoutError, concurrent.futures.TimeoutError):
            future.cancel()
            raise McpUnavailable(f"The MCP server {server} did not answer within {seconds:g} s.") from None
        except Exception as exc:  # noqa: BLE001 - the SDK's errors, a dead connection...
            raise McpUnavailable(
                f"The MCP server {server} answered with an error: {_sentence(exc)}."
            ) from None

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


async def _off_loop(work: Callable[..., Any], *args: Any) -> Any:
    """``work(*args)`` on a worker thread, or here when glmdesk is ending (no new threads
    then: the servers' helpers must still be ended)."""
    try:
        return await asyncio.to_thread(work, *args)
    except RuntimeError:
        return work(*args)


def _malformed(exc: BaseException) -> bool:
    """Whether ``exc`` says the server's answer was not a valid MCP message."""
    from pydantic import ValidationError

    return isinstance(exc, ValidationError)


def _closed(exc: BaseException) -> bool:
    """Whether ``exc`` says the connection to the server ended (JSON-RPC -32000)."""
    from mcp.shared.exceptions import MCPError

    return isinstance(exc, MCPError) and exc.code == -32000


def _alive(running: _Running) -> bool:
    task = running.task
    return task is not None and not task.done()
