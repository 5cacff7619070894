"""Reading a request's body: its size limit while it arrives, the bytes many requests
may hold at once, JSON, lone surrogates, and validation errors that name the client's field.

The routes read their bodies themselves (after the API key is checked, so a client
without the key never makes the server read, parse or hold its body).
"""

from __future__ import annotations

import asyncio
import functools
import json
import re
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from fastapi import Request
from pydantic import BaseModel, ValidationError
from starlette.requests import ClientDisconnect

from glmdesk.core.text import without_lone_surrogates
from glmdesk.server.errors import APIError

#: Bodies up to this size are parsed on the event loop and read outside the budget
#: (:class:`BodyIntake`); longer ones are parsed on a worker thread, in bytes.
SMALL_BODY_BYTES = 1 << 20
#: A body must have arrived whole this long after its headers, in s (else HTTP 408).
BODY_TIMEOUT_S = 60.0
_SURROGATE = re.compile("[\ud800-\udfff]")
_Model = TypeVar("_Model", bound=BaseModel)


class ClientGone(Exception):
    """The client disconnected before its answer was sent."""


class BodyIntake:
    """How request bodies are taken in: their size limit, the bytes of large bodies held
    at once, and how long one may take to arrive.

    A body of more than :data:`SMALL_BODY_BYTES` reserves its ``Content-Length`` (a
    chunked body: the size limit) in the budget and waits while others hold too much;
    one larger than the whole budget still goes through, alone. Smaller bodies are
    never held up. A slow client holds its reservation at most ``timeout_s``. Created
    and used on the server's event loop only.

    Args:
        limit: The largest body read, in bytes.
        budget: The bytes of large bodies that may be held at once, in bytes.
        timeout_s: How long a body may take to arrive after its headers, in s.
    """

    def __init__(self, limit: int, budget: int, timeout_s: float = BODY_TIMEOUT_S) -> None:
        self.limit, self.budget, self.timeout_s = limit, budget, timeout_s
        self.held = 0
        self._changed = asyncio.Condition()

    @asynccontextmanager
    async def hold(self, n: int) -> AsyncIterator[None]:
        """Reserve ``n`` bytes of the budget for the ``async with`` block (waits for room;
        a small body reserves nothing)."""
        if n <= SMALL_BODY_BYTES:
            yield
            return
        async with self._changed:
            await self._changed.wait_for(lambda: self.held == 0 or self.held + n <= self.budget)
            self.held += n
        try:
            yield
        finally:
            async with self._changed:
                self.held -= n
                self._changed.notify_all()

    async def read(
        self, request: Request, model: type[_Model], check: Callable[[_Model], None] | None = None
    ) -> _Model:
        """Read, decode and validate the body of ``request`` as ``model``, holding its
        bytes in the budget meanwhile; ``check`` (which raises :class:`APIError` to
        refuse the body) runs while they are still held.

        Raises:
            APIError: 413 over the limit; 408 when the body takes longer than
                ``timeout_s``; 400 for a body that is not JSON or not valid; whatever
                ``check`` raises.
            ClientGone: when the client disconnects while sending the body.
        """
        declared = declared_length(request, self.limit)
        async with self.hold(self.limit if declared is None else declared):
            try:
                async with asyncio.timeout(self.timeout_s):
                    raw = await read_body(request, self.limit)
            except TimeoutError:
                raise APIError(
                    408,
                    f"The request body did not arrive within {self.timeout_s:g} s.",
                    code="request_timeout",
                ) from None
            body = validated(model, await parse_json(raw))
            del raw
            if check is not None:
                check(body)
            return body


def too_large(limit: int, declared: int | None = None) -> APIError:
    """The 413 for a body over ``limit`` bytes (``declared``: its Content-Length).

    The rest of the body is never read into the request: uvicorn drops what still
    arrives and closes the connection once its keep-alive timeout (5 s) passes, so a
    client that writes its whole body before reading (httpx, the ``openai`` client)
    still gets this answer, and one that keeps sending is cut off.
    """
    size = f"{declared:,} bytes" if declared is not None else f"over {limit:,} bytes"
    return APIError(
        413,
        f"The request body is {size}; this server takes at most {limit:,} bytes (about "
        "what its context window can hold; the operator sets it with --max-body-mib).",
        code="request_too_large",
    )


def declared_length(request: Request, limit: int) -> int | None:
    """The request's ``Content-Length`` in bytes, or ``None`` for a chunked body.

    Raises:
        APIError: 413 when it is over ``limit``; 400 when it is not a number.
    """
    header = request.headers.get("content-length")
    if header is None:
        return None
    try:
        n = int(header)
    except ValueError:
        raise APIError(400, f"The Content-Length header {header!r} is not a number.") from None
    if n > limit:
        raise too_large(limit, n)
    return n


async def read_body(request: Request, limit: int) -> bytearray:
    """The whole body, counted while it arrives: past ``limit`` bytes (a chunked body
    or one longer than it declared) the rest is left unread.

    Raises:
        APIError: 413 past ``limit``.
        ClientGone: when the client disconnects before the body is whole.
    """
    body = bytearray()
    try:
        async for chunk in request.stream():
            if len(body) + len(chunk) > limit:
                raise too_large(limit)
            body += chunk
    except ClientDisconnect:
        raise ClientGone from None
    return body


def without_surrogates(value: Any) -> Any:
    """``value`` (decoded JSON) with each lone surrogate in its strings and keys replaced
    by U+FFFD, as the engine encodes chat text (:func:`~glmdesk.core.text.without_lone_surrogates`).

    JSON's ``\\ud83d`` escapes decode to lone surrogates, which no tokenizer and no
    UTF-8 response can hold. ASCII strings are passed over at once.
    """
    if isinstance(value, str):
        if value.isascii() or _SURROGATE.search(value) is None:
            return value
        return without_lone_surrogates(value)
    if isinstance(value, list):
        return [without_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {without_surrogates(k): without_surrogates(v) for k, v in value.items()}
    return value


async def parse_json(raw: bytearray) -> Any:
    """The decoded body (lone surrogates made U+FFFD); long bodies are decoded on a thread.

    Raises:
        APIError: 400 ``invalid_json`` for a body that is not JSON (or not UTF-8).
    """

    def decode() -> Any:
        return without_surrogates(json.loads(raw))

    try:
        return decode() if len(raw) <= SMALL_BODY_BYTES else await asyncio.to_thread(decode)
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError
        reason = exc.msg if isinstance(exc, json.JSONDecodeError) else "it is not UTF-8 text"
        raise APIError(400, f"The request body is not valid JSON: {reason}.", code="invalid_json") from None
    except RecursionError:
        raise APIError(400, "The request body nests too deeply to read.", code="invalid_json") from None


def validated(model: type[_Model], data: Any) -> _Model:
    """``data`` as ``model``.

    Raises:
        APIError: 400 ``invalid_request`` naming the client's field (``messages[0].content``).
    """
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise invalid_request(exc.errors(include_url=False), (model,)) from None


@functools.cache
def field_names(*models: type[BaseModel]) -> frozenset[str]:
    """Every field name of ``models`` and of the models their fields hold."""
    names: set[str] = set()
    todo, seen = list(models), set()
    while todo:
        m = todo.pop()
        if m in seen:
            continue
        seen.add(m)
        for name, info in m.model_fields.items():
            names.add(name)
            todo.extend(_models_in(info.annotation))
    return frozenset(names)


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in getattr(annotation, "__args__", ()) for m in _models_in(arg)]


def client_param(loc: tuple, names: frozenset[str]) -> str | None:
    """The client's name for an error's location: list positions as ``[i]``, pydantic's
    union branches (``str``, ``list[ContentPart]``) and ``body`` left out."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in names:
            out += f".{part}" if out else part
    return out or None


def invalid_request(errors: Sequence[Mapping[str, Any]], models: Sequence[type[BaseModel]] = ()) -> APIError:
    """The 400 for a body that does not validate, from pydantic's ``errors()``: the first
    of the deepest (a union's errors are one per branch; the one that got furthest into
    the client's value says most). ``models``: the endpoints' request bodies, whose field
    names (and their models') are the client's names an error may give."""
    names = field_names(*models)
    params = [client_param(tuple(e.get("loc", ())), names) for e in errors]
    depth = [len(p or "") for p in params]
    at = depth.index(max(depth)) if errors else 0
    first, param = (errors[at], params[at]) if errors else ({}, None)
    kind = first.get("type", "")
    if kind == "missing":
        message = f"The request needs the field {param}."
    elif param is None and kind in ("model_type", "model_attributes_type", "dict_type"):
        message = "The request body must be a JSON object."
    else:
        where = f" in {param}" if param else ""
        message = f"The request is not valid{where}: {first.get('msg', 'bad value')}."
    return APIError(400, message, param, "invalid_request")
