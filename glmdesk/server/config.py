"""Validated settings of the OpenAI-compatible server (no FastAPI here)."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field

#: Hosts that only this machine can reach.
LOOPBACK_NAMES = ("localhost", "localhost.localdomain")


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

    Raises:
        ValueError: for a port or queue size out of range, and for a host other
            machines can reach without an API key.
    """

    host: str = "127.0.0.1"
    port: int = 8000
    api_key: str | None = field(default=None, repr=False)
    queue_size: int = 16
    retry_after_s: int = 5
    model_name: str | None = None

    def __post_init__(self) -> None:
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

    @property
    def url(self) -> str:
        """The base URL clients use (``http://host:port/v1``)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/v1"
