"""Backends: each way of answering behind the one :class:`Backend` interface.

:func:`create_backend` chooses one for a :class:`~glmdesk.core.settings.LoadSettings`:
``settings.engine`` names it; ``auto`` takes the remote backend when a server URL is
set, llama.cpp for a ``.gguf`` file (the embedded default included) when
llama-cpp-python is installed, else transformers.
"""

from __future__ import annotations

from glmdesk.core.errors import GlmdeskError
from glmdesk.core.settings import LoadSettings
from glmdesk.engine.backends.base import MEMORY_PROBES, SAMPLING_FIELDS, Backend, Capabilities

__all__ = [
    "MEMORY_PROBES",
    "SAMPLING_FIELDS",
    "Backend",
    "Capabilities",
    "create_backend",
    "engine_for",
    "is_gguf_model",
    "llamacpp_availability",
    "llama_cpp_available",
    "wants_llamacpp",
]


def llama_cpp_available() -> bool:
    """Whether llama-cpp-python (``llama_cpp``) is installed; nothing is imported."""
    import importlib.util

    return importlib.util.find_spec("llama_cpp") is not None


def llamacpp_availability() -> dict:
    """``{"engine:llamacpp": None or ErrorInfo, "llamacpp:gpu": None or ErrorInfo}`` for Open
    model (``option_unavailable``, reasons ``llamacpp_missing``, ``llamacpp_broken``,
    ``no_gpu_offload``). Imports ``llama_cpp`` (loads its shared library, a fraction of a
    second): call it off the GUI thread, as :func:`glmdesk.engine.options.option_availability`."""
    from glmdesk.engine.options import unavailable

    def both(reason: str, message: str) -> dict:
        return {key: unavailable(key, reason, message) for key in ("engine:llamacpp", "llamacpp:gpu")}

    if not llama_cpp_available():
        return both(
            "llamacpp_missing", "llama-cpp-python is not installed (pip install 'glmdesk[llamacpp]')."
        )
    try:
        import llama_cpp

        gpu = bool(llama_cpp.llama_supports_gpu_offload())
    except Exception as exc:  # a broken install: say so rather than offer it
        return both(
            "llamacpp_broken", f"llama-cpp-python cannot be loaded ({exc.__class__.__name__}: {exc})."
        )
    no_gpu = unavailable(
        "llamacpp:gpu", "no_gpu_offload", "This llama-cpp-python build has no GPU offload (a CPU build)."
    )
    return {"engine:llamacpp": None, "llamacpp:gpu": None if gpu else no_gpu}


def is_gguf_model(model: str | None) -> bool:
    """Whether ``model`` names a GGUF file: the embedded default (``None`` or blank) or
    a path ending in ``.gguf`` (checked by name only; nothing is read)."""
    return model is None or not model.strip() or model.strip().lower().endswith(".gguf")


def engine_for(settings: LoadSettings) -> str:
    """The engine that will run ``settings``: ``settings.engine`` unless ``auto``.

    ``auto`` is ``llamacpp`` for a GGUF file when llama-cpp-python is installed and no
    transformers-only option is asked for (a torch quantization, the compiled decode
    step): llama.cpp runs the file's own quantized weights, several times faster on a
    CPU than transformers' dequantized copy. Otherwise ``transformers``.
    """
    if settings.engine != "auto":
        return settings.engine
    if settings.is_remote:
        return "remote"
    if wants_llamacpp(settings) and llama_cpp_available():
        return "llamacpp"
    return "transformers"


def wants_llamacpp(settings: LoadSettings) -> bool:
    """Whether ``auto`` picks llama.cpp for ``settings`` once llama-cpp-python is
    installed: a GGUF file, no server, no transformers-only option (a torch
    quantization, the compiled decode step). Nothing is imported."""
    torch_only = settings.quantization != "none" or settings.compile_decode
    return (
        settings.engine == "auto"
        and not settings.is_remote
        and is_gguf_model(settings.model)
        and not torch_only
    )


def create_backend(settings: LoadSettings) -> Backend:
    """A new, unloaded backend for ``settings`` (call its ``load``).

    A GGUF file for the transformers engine has its tensor types checked here, from the
    header (milliseconds), before anything imports torch (seconds).

    Raises:
        GlmdeskError: ``load_failed`` for an engine this build does not have;
            ``gguf_unsupported`` for a GGUF file with a tensor type transformers cannot
            dequantize (and what reading its header raises: ``not_gguf``,
            ``lfs_pointer``, ``corrupt_weights``).
    """
    engine = engine_for(settings)
    if engine == "transformers":
        _check_gguf_types(settings)
        from glmdesk.engine.backends.transformers import TransformersBackend

        return TransformersBackend()
    if engine == "llamacpp":
        if not llama_cpp_available():
            raise GlmdeskError(
                "load_failed",
                "The llama.cpp engine needs llama-cpp-python: pip install 'glmdesk[llamacpp]'.",
                detail="llama_cpp is not installed",
            )
        from glmdesk.engine.backends.llamacpp import LlamaCppBackend

        return LlamaCppBackend()
    if engine == "remote":
        from glmdesk.engine.backends.remote import RemoteBackend

        return RemoteBackend()
    raise GlmdeskError(
        "load_failed", f"The {engine} engine is not available in this build.", detail=f"engine {engine}"
    )


def _check_gguf_types(settings: LoadSettings) -> None:
    """Refuse a user's GGUF file whose tensor types transformers cannot dequantize
    (:func:`~glmdesk.engine.gguf_header.check_transformers_tensor_types`)."""
    if not settings.model or not settings.model.strip() or not is_gguf_model(settings.model):
        return  # the embedded model's types are known to be readable
    from glmdesk.engine.gguf_header import check_transformers_tensor_types, read_gguf_header
    from glmdesk.engine.sources import resolve_source

    source = resolve_source(settings.model)
    if source.kind == "gguf":
        check_transformers_tensor_types(read_gguf_header(source.location))
