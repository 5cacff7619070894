"""Backends: each way of answering behind the one :class:`Backend` interface.

:func:`create_backend` chooses one for a :class:`~glmdesk.core.settings.LoadSettings`:
``settings.engine`` names it, and ``auto`` takes the remote backend when a server URL
is set, else transformers (the llama.cpp backend registers here as it lands).
"""

from __future__ import annotations

from glmdesk.core.errors import GlmdeskError
from glmdesk.core.settings import LoadSettings
from glmdesk.engine.backends.base import MEMORY_PROBES, SAMPLING_FIELDS, Backend, Capabilities

__all__ = ["MEMORY_PROBES", "SAMPLING_FIELDS", "Backend", "Capabilities", "create_backend", "engine_for"]


def engine_for(settings: LoadSettings) -> str:
    """The engine that will run ``settings``: ``settings.engine`` unless ``auto``."""
    if settings.engine != "auto":
        return settings.engine
    return "remote" if settings.is_remote else "transformers"


def create_backend(settings: LoadSettings) -> Backend:
    """A new, unloaded backend for ``settings`` (call its ``load``).

    Raises:
        GlmdeskError: ``load_failed`` for an engine this build does not have.
    """
    engine = engine_for(settings)
    if engine == "transformers":
        from glmdesk.engine.backends.transformers import TransformersBackend

        return TransformersBackend()
    if engine == "remote":
        from glmdesk.engine.backends.remote import RemoteBackend

        return RemoteBackend()
    raise GlmdeskError(
        "load_failed", f"The {engine} engine is not available in this build.", detail=f"engine {engine}"
    )
