"""The remote engine's self-description (light: ``openai`` is imported on load).

Any OpenAI-compatible server answers (vLLM, SGLang, llama.cpp's server, ``glmdesk
serve``); ``auto`` takes it whenever a server's URL is set. The server decides the
model's quantization, precision and KV cache, so none of this computer's options apply.
"""

from __future__ import annotations

from glmdesk.core.engine_options import RemoteOptions
from glmdesk.core.settings import LoadSettings
from glmdesk.engine.backends.spec import BackendSpec


class RemoteSpec(BackendSpec):
    """A server's model: chosen by its URL."""

    name = "remote"
    label = "remote server"
    local = False
    auto_order = 10
    options_type = RemoteOptions

    def accepts(self, settings: LoadSettings) -> bool:
        """A server's URL is the source."""
        return bool(settings.remote.url)

    def claims(self, settings: LoadSettings) -> str | None:
        return "server" if settings.remote.url else None

    def create(self, choice=None):
        from glmdesk.engine.backends.remote.backend import RemoteBackend

        return RemoteBackend()


SPEC = RemoteSpec()
