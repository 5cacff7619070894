"""Sentences for what goes wrong with an OpenAI-compatible server, from the official
``openai`` client's exceptions (``openai.APIConnectionError`` and its ``__cause__``
chain, ``openai.APIStatusError`` with the HTTP status)."""

from __future__ import annotations

import socket
import ssl

import openai

from glmdesk.core.errors import GlmdeskError


def _chain(exc: BaseException | None):
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def _reason(exc: BaseException) -> str:
    """``refused``, ``dns``, ``tls``, ``timeout`` or ``other`` for a failed connection."""
    for link in _chain(exc):
        if isinstance(link, ssl.SSLError) or "ssl" in type(link).__name__.lower():
            return "tls"
        if isinstance(link, socket.gaierror):
            return "dns"
        if isinstance(link, ConnectionRefusedError):
            return "refused"
        if (
            isinstance(link, (openai.APITimeoutError, TimeoutError, socket.timeout))
            or "Timeout" in type(link).__name__
        ):
            return "timeout"
        text = str(link).lower()
        if "certificate" in text or "ssl" in text:
            return "tls"
        if "name or service not known" in text or "nodename nor servname" in text or "getaddrinfo" in text:
            return "dns"
        if "connection refused" in text:
            return "refused"
    return "other"


def _detail(exc: BaseException) -> str:
    parts = [f"{type(link).__name__}: {link}" for link in _chain(exc) if str(link)]
    return parts[-1] if parts else type(exc).__name__


_UNREACHABLE = {
    "refused": "Nothing answers at {url}: the connection was refused. Is the server running, on that port?",
    "dns": "The server name in {url} could not be found (DNS). Check the address.",
    "tls": "A secure (TLS) connection to {url} failed: {detail}. Check https:// versus http:// and the certificate.",
    "timeout": "The server at {url} did not answer in time.",
    "other": "The server at {url} could not be reached: {detail}.",
}


def unreachable(url: str, exc: BaseException) -> GlmdeskError:
    """``server_unreachable`` for a connection that could not be made."""
    reason, detail = _reason(exc), _detail(exc)
    return GlmdeskError(
        "server_unreachable",
        _UNREACHABLE[reason].format(url=url, detail=detail),
        url=url,
        reason=reason,
        detail=detail,
    )


def _server_message(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return inner["message"]
        if isinstance(body.get("message"), str):
            return body["message"]
    return str(exc.message or exc)


def from_status(url: str, model: str, exc: openai.APIStatusError) -> GlmdeskError:
    """The error for an HTTP error status: 401/403, 404, 429/503, anything else."""
    status = exc.status_code
    if status in (401, 403):
        return GlmdeskError(
            "server_auth_failed",
            f"The server at {url} refused the API key (HTTP {status}). Check the key in Open model or --api-key.",
            url=url,
        )
    if status == 404:
        return GlmdeskError(
            "remote_model_not_found",
            f"The server at {url} has no model {model!r} (HTTP 404); choose one it lists.",
            model=model,
            url=url,
        )
    if status in (429, 503):
        return GlmdeskError(
            "server_busy",
            f"The server at {url} is busy (HTTP {status}); try again in a moment.",
            url=url,
            status=status,
        )
    detail = _server_message(exc)
    return GlmdeskError(
        "server_error",
        f"The server at {url} answered with an error (HTTP {status}): {detail}",
        url=url,
        status=status,
        detail=detail,
    )


def from_exception(url: str, model: str, exc: BaseException, streaming: bool, stall_s: float) -> GlmdeskError:
    """The error for any exception of the client, before (``streaming`` False) or
    during an answer's stream. A read timeout (connected, then no byte for
    ``stall_s`` s) is ``server_stalled`` in either case."""
    if isinstance(exc, openai.APIStatusError):
        return from_status(url, model, exc)
    read_timeout = any("ReadTimeout" in type(link).__name__ for link in _chain(exc))
    if isinstance(exc, openai.APITimeoutError) and (streaming or read_timeout):
        return GlmdeskError(
            "server_stalled",
            f"The server at {url} sent nothing for {stall_s:g} s, so the answer was ended. The answer so far is kept.",
            url=url,
            seconds=stall_s,
        )
    if streaming and isinstance(exc, openai.APIConnectionError):
        detail = _detail(exc)
        return GlmdeskError(
            "connection_lost",
            f"The connection to {url} was lost in the middle of the answer ({detail}). The answer so far is kept.",
            url=url,
            detail=detail,
        )
    if isinstance(exc, openai.APIConnectionError):
        return unreachable(url, exc)
    if isinstance(exc, openai.APIError):  # an error event inside the stream
        detail = str(exc.message or exc)
        return GlmdeskError(
            "server_error",
            f"The server at {url} reported an error in the middle of the answer: {detail}. The answer so far is kept.",
            url=url,
            status=0,
            detail=detail,
        )
    detail = f"{type(exc).__name__}: {exc}"
    return GlmdeskError("generation_failed", f"The answer failed: {detail}", detail=detail)
