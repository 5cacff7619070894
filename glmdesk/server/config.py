"""Validated settings of the OpenAI-compatible server (no FastAPI here)."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field

#: Hosts that only this machine can reach.
LOOPBACK_NAMES = ("localhost", "localhost.localdomain")
#: The default body-size limit, in bytes per token of context (see :func:`default_max_body_bytes`).
BODY_BYTES_PER_TOKEN = 32
#: ... plus this much for the JSON around the text, tool schemas and small contexts, in bytes.
BODY_BYTES_EXTRA = 1 << 20
#: The smallest body-size limit one may set, in bytes.
MIN_BODY_BYTES = 1024


def default_max_body_bytes(context_length: int) -> int:
    """The body-size limit for a model with ``context_length`` tokens of context, in bytes:
    ``32 x context_length + 1 MiB`` (8K tokens: 1.25 MiB; 128K: 5 MiB).

    A prompt that fits the context has at most ``context_length`` tokens. Tokens average
    about 4 characters of English or 1.5 of Chinese, and JSON may write a non-ASCII
    character as a 6-byte ``\\uXXXX`` escape (Python's ``json`` does by default):
    about 9 bytes per token of Chinese, the most of ordinary text. 32 bytes per token
    leaves 3.5 times that; the extra MiB holds the JSON around the text and the tools.
    """
    return BODY_BYTES_PER_TOKEN * max(int(context_length), 0) + BODY_BYTES_EXTRA


def is_loopback(host: str) -> bool:
    """True when ``host`` (a name or an address) is reachable from this machine only."""
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class ServeSettings:
    """Where and how ``glmdesk serve`` listens.

    Attributes:
        host: Address to listen on; ``127.0.0.1`` (this machine only) by default.
        port: TCP port; ``0`` takes any free port (the server reports which).
        api_key: Clients must send ``Authorization: Bearer <api_key>``; ``None``
            accepts every client. Left out of ``repr``.
        queue_size: Requests that may wait for the model while one is answered; one
            more gets HTTP 429 with ``Retry-After``.
        retry_after_s: The ``Retry-After`` a refused request is given, in s.
        model_name: The model id clients use; ``None`` takes the loaded model's name.
        max_body_bytes: The largest request body read, in bytes; a longer one gets HTTP
            413 before the rest of it is read. ``None``: sized from the model's context
            length (:func:`default_max_body_bytes`).

    Raises:
        ValueError: for a port, queue size or body-size limit out of range, and for a
            host other machines can reach without an API key.
    """

    host: str = "127.0.0.1"
    port: int = 8000
    api_key: str | None = field(default=None, repr=False)
    queue_size: int = 16
    retry_after_s: int = 5
    model_name: str | None = None
    max_body_bytes: int | None = None

    def __post_init__(self) -> None:
        if self.max_body_bytes is not None and (
            not isinstance(self.max_body_bytes, int) or self.max_body_bytes < MIN_BODY_BYTES
        ):
            raise ValueError(
                f"The body-size limit must be a whole number of bytes, {MIN_BODY_BYTES} or more, "
                f"not {self.max_body_bytes!r}."
            )
        if not isinstance(self.port, int) or not 0 <= self.port <= 65535:
            raise ValueError(
                f"The port must be a whole number from 0 (any free port) to 65535, not {self.port!r}."
            )
        if not isinstance(self.queue_size, int) or not 0 <= self.queue_size <= 4096:
            raise ValueError(
                f"The queue size must be a whole number from 0 to 4096, not {self.queue_size!r}."
            )
        if not isinstance(self.retry_after_s, int) or self.retry_after_s < 1:
            raise ValueError(f"Retry-After must be 1 s or more, not {self.retry_after_s!r}.")
        if self.api_key is not None and not self.api_key.strip():
            raise ValueError("The API key is empty; give one, or leave it out on 127.0.0.1.")
        if not self.host.strip():
            raise ValueError("The host is empty; use 127.0.0.1 for this machine only.")
        if not is_loopback(self.host) and self.api_key is None:
            raise ValueError(
                f"Listening on {self.host} lets every machine that can reach this one use the model; "
                "give an API key too (--api-key), or listen on 127.0.0.1."
            )

    def body_limit(self, context_length: int) -> int:
        """The body-size limit in bytes for a model with ``context_length`` tokens."""
        return self.max_body_bytes or default_max_body_bytes(context_length)

    @property
    def url(self) -> str:
        """The base URL clients use (``http://host:port/v1``)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/v1"
