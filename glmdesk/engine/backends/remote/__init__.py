"""The remote engine's self-description (light: ``openai`` is imported on load).

Any OpenAI-compatible server answers (vLLM, SGLang, llama.cpp's server, ``glmdesk
serve``); ``auto`` takes it whenever a server's URL is set. The server decides the
model's quantization, precision and KV cache, so none of this computer's options apply.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlsplit

from glmdesk.core.settings import LoadSettings
from glmdesk.engine.backends.spec import BackendSpec


@dataclass(frozen=True)
class RemoteOptions:
    """The remote engine's own options: which server, which of its models.

    Attributes:
        url: The base URL of an OpenAI-compatible server (vLLM, SGLang, llama.cpp's
            server, ``glmdesk serve``), e.g. ``http://gpu-box:8000/v1``; ``http`` or
            ``https``, no user name or password in it.
        model: The server's model id; ``None`` takes the first one it lists.
        api_key: The server's API key (sent as a bearer token). Left out of ``repr``;
            never written to QSettings or history (the window keeps it with ``keyring``).

    Raises:
        ValueError: for a malformed URL or an empty model name.
    """

    url: str | None = None
    model: str | None = None
    api_key: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.url is not None:
            _check_remote_url(self.url)
        if self.model is not None and not self.model.strip():
            raise ValueError(
                "The remote model name is empty; leave it unset to use the server's first model."
            )

    def require(self) -> None:
        """Raise when these options cannot run the remote engine once it is named.

        Raises:
            ValueError: without the server's URL.
        """
        if not self.url:
            raise ValueError("The remote engine needs the server's URL, e.g. http://gpu-box:8000/v1.")


def _check_remote_url(url: str) -> None:
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (raises ValueError for a port out of range)
    except ValueError as exc:
        raise ValueError(f"The server URL {url!r} is not a valid URL: {exc}.") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(
            f"The server URL {url!r} must start with http:// or https:// and name a host, "
            "e.g. http://gpu-box:8000/v1."
        )
    if parts.username or parts.password:
        raise ValueError("Put the API key in its own field, not in the server URL.")


class RemoteSpec(BackendSpec):
    """A server's model: chosen by its URL."""

    name = "remote"
    label = "remote server"
    local = False
    auto_order = 10
    options_type = RemoteOptions
    renamed = {"url": "remote_url", "model": "remote_model", "api_key": "remote_api_key"}

    def accepts(self, settings: LoadSettings) -> bool:
        """A server's URL is the source."""
        return bool(settings.remote.url)

    def claims(self, settings: LoadSettings) -> str | None:
        return "server" if settings.remote.url else None

    def create(self, choice=None):
        from glmdesk.engine.backends.remote.backend import RemoteBackend

        return RemoteBackend()


SPEC = RemoteSpec()
