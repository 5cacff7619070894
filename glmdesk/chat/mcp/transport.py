"""How glmdesk reaches one MCP server: the SDK's ``Client`` over stdio (the server behind
:mod:`~glmdesk.chat.mcp.relay`, which cuts huge answers in a process of its own), or over
streamable HTTP through :func:`capped_client`, which cuts a huge answer's long strings
(:func:`~glmdesk.chat.mcp.shrink.shrink_json`, on a worker thread) before the SDK parses
it, so that a 50 MB result costs the window no more than a small one.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from typing import Any

import anyio.to_thread
import httpx2

from glmdesk.chat.mcp.config import McpServerConfig
from glmdesk.chat.mcp.process import StderrTail
from glmdesk.chat.mcp.relay import relay_command
from glmdesk.chat.mcp.results import MAX_IMAGE_BYTES, MAX_RESULT_CHARS
from glmdesk.chat.mcp.shrink import shrink_json

#: The longest base64 ``data``/``blob`` string kept, in bytes (an image of
#: :data:`~glmdesk.chat.mcp.results.MAX_IMAGE_BYTES`).
BLOB_LIMIT = MAX_IMAGE_BYTES * 4 // 3 + 4
#: The largest server-sent event the SDK takes, in bytes (after cutting).
MAX_SSE_EVENT_BYTES = BLOB_LIMIT + (1 << 20)


def client(config: McpServerConfig, stderr: StderrTail | None, limit: int = MAX_RESULT_CHARS) -> Any:
    """The SDK's ``mcp.Client`` of ``config`` (not yet entered).

    Args:
        config: A stdio (``command``) or streamable HTTP (``url``) server.
        stderr: Where a stdio server's stderr goes.
        limit: The most characters of one string of an HTTP answer that reach the SDK.
    """
    from mcp import Client, StdioServerParameters

    if config.command:
        from mcp.client.stdio import stdio_client

        path = config.env.get("PATH", os.environ.get("PATH"))
        command, *args = relay_command(config.command, config.args, limit, BLOB_LIMIT, path)
        params = StdioServerParameters(command=command, args=args, env=dict(config.env) or None)
        return Client(stdio_client(params, errlog=stderr.writer if stderr else sys.stderr), cache=None)
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT

    http = capped_client(
        headers=dict(config.headers),
        timeout=httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT),
        limit=limit,
    )
    return Client(
        streamable_http_client(config.url, http_client=http, max_sse_event_size=MAX_SSE_EVENT_BYTES),
        cache=None,
    )


def capped_client(
    headers: dict[str, str] | None = None,
    timeout: httpx2.Timeout | None = None,
    limit: int = MAX_RESULT_CHARS,
    blob_limit: int = BLOB_LIMIT,
    transport: httpx2.AsyncBaseTransport | None = None,
) -> httpx2.AsyncClient:
    """An HTTP client whose JSON and server-sent-event answers reach the caller with
    every string longer than ``limit`` characters cut (see the module docstring).

    Answers are asked for uncompressed (``Accept-Encoding: identity``); one that comes
    compressed anyway, or of another type, is passed on unchanged. The cutting is done by
    the client's event hooks, so its transport (and the proxies of the environment) stay
    httpx's own.

    Args:
        headers: Headers of every request (an HTTP server's configured ``headers``).
        timeout: httpx's time limits.
        limit: The most characters kept of one string.
        blob_limit: The most bytes of one base64 ``data``/``blob`` string.
        transport: Another transport (tests).
    """

    async def uncompressed(request: httpx2.Request) -> None:
        request.headers["Accept-Encoding"] = "identity"

    async def cut_answer(response: httpx2.Response) -> None:
        kind = response.headers.get("content-type", "")
        if response.headers.get("content-encoding", "identity").lower() not in ("", "identity"):
            return
        inner = response.stream
        if not isinstance(inner, httpx2.AsyncByteStream):
            return
        if kind.startswith("application/json"):
            response.stream = _JsonBody(inner, limit, blob_limit)
        elif kind.startswith("text/event-stream"):
            response.stream = _EventLines(inner, limit, blob_limit)
        else:
            return
        response.headers.pop("content-length", None)

    return httpx2.AsyncClient(
        headers=headers or None,
        timeout=timeout if timeout is not None else httpx2.Timeout(30.0),
        transport=transport,
        event_hooks={"request": [uncompressed], "response": [cut_answer]},
    )


class _JsonBody(httpx2.AsyncByteStream):
    """A JSON answer, read whole and cut when larger than ``limit`` bytes."""

    def __init__(self, inner: httpx2.AsyncByteStream, limit: int, blob_limit: int) -> None:
        self._inner, self._limit, self._blob_limit = inner, limit, blob_limit

    async def __aiter__(self) -> AsyncIterator[bytes]:
        parts: list[bytes] = []
        async for chunk in self._inner:
            parts.append(chunk)
        body = b"".join(parts)
        if len(body) > self._limit:
            body = await anyio.to_thread.run_sync(shrink_json, body, self._limit, self._blob_limit)
        yield body

    async def aclose(self) -> None:
        await self._inner.aclose()


class _EventLines(httpx2.AsyncByteStream):
    """A server-sent-event stream, passed on a line at a time as lines complete; a
    ``data:`` line longer than ``limit`` bytes is cut first."""

    def __init__(self, inner: httpx2.AsyncByteStream, limit: int, blob_limit: int) -> None:
        self._inner, self._limit, self._blob_limit = inner, limit, blob_limit

    def _cut_lines(self, block: bytes) -> bytes:
        lines = block.split(b"\n")
        for n, line in enumerate(lines):
            if len(line) > self._limit and line.startswith(b"data:"):
                head = 6 if line.startswith(b"data: ") else 5
                lines[n] = line[:head] + shrink_json(line[head:], self._limit, self._blob_limit)
        return b"\n".join(lines)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        pending = bytearray()
        async for chunk in self._inner:
            newline = chunk.rfind(b"\n")
            if newline < 0:
                pending += chunk
                continue
            block = bytes(pending) + chunk[: newline + 1]
            pending = bytearray(chunk[newline + 1 :])
            if len(block) > self._limit:
                block = await anyio.to_thread.run_sync(self._cut_lines, block)
            yield block
        if pending:
            block = bytes(pending)
            if len(block) > self._limit:
                block = await anyio.to_thread.run_sync(self._cut_lines, block)
            yield block

    async def aclose(self) -> None:
        await self._inner.aclose()
