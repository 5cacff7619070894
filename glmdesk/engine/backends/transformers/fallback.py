"""The transformers engine's best setting for a GGUF file when llama.cpp is missing.

``engine=auto`` runs a ``.gguf`` file (the embedded default included) on llama.cpp when
llama-cpp-python is installed. Without it (a fresh ``scripts/run-app`` install, before
:mod:`glmdesk.engine.llamacpp_build` has built it; the packaged app) transformers loads a
dequantized copy, in fp32 unless asked otherwise. A Q4_1 file maps onto glmdesk's int4
weight-only layers exactly (groups of 32, ``w = q * s + m`` with ``q`` in 0..15: GGUF's
Q4_1 block; Q4_0 and Q4_K closely) and a Q8_0 file onto int8 weight-only, so those are
taken instead: more than twice the fp32 decode speed on a CPU. The choice is said in ``ModelInfo.notes``
(kind ``engine_fallback``).
"""

from __future__ import annotations

import dataclasses

from glmdesk.core.errors import ErrorInfo
from glmdesk.core.settings import LoadSettings

#: GGUF file types -> the weight-only scheme that holds them.
_SCHEMES = {"Q4_0": "int4-wo", "Q4_1": "int4-wo", "Q4_K_S": "int4-wo", "Q4_K_M": "int4-wo", "Q8_0": "int8-wo"}


def _on_cpu(settings: LoadSettings) -> bool:
    if settings.device == "cpu":
        return True
    if settings.device == "cuda":
        return False
    import torch

    return not torch.cuda.is_available()


def gguf_weight_type(model: str | None) -> str:
    """The GGUF file's weight type (``Q4_1``...) from its header; ``""`` when unreadable."""
    from glmdesk.core.errors import GlmdeskError
    from glmdesk.engine.files import sources
    from glmdesk.engine.files.gguf_header import read_gguf_header, weight_type

    try:
        return weight_type(read_gguf_header(sources.resolve_source(model).location))
    except (GlmdeskError, OSError):
        return ""


def transformers_fallback(
    settings: LoadSettings, llama_cpp_installed: bool
) -> tuple[LoadSettings, ErrorInfo | None]:
    """``settings`` with the weight-only scheme of its GGUF file, and the note saying so.

    Only for ``engine=auto`` on a GGUF file with no quantization asked for, no compiled
    step, on the CPU, when llama.cpp is not installed and torch has the kernel; otherwise
    ``(settings, None)``.
    """
    from glmdesk.engine.backends.spec import is_gguf_model

    if (
        llama_cpp_installed
        or settings.engine != "auto"
        or not is_gguf_model(settings.model)
        or settings.quantization != "none"
        or settings.compile_decode
        or not _on_cpu(settings)
    ):
        return settings, None
    file_type = gguf_weight_type(settings.model)
    scheme = _SCHEMES.get(file_type)
    if scheme is None:
        return settings, None
    from glmdesk.engine.backends.transformers.weight_only import SCHEMES, kernels_available

    if not kernels_available(SCHEMES[scheme]):
        return settings, None
    from glmdesk.core.distrusted_engines import is_distrusted

    crashed = is_distrusted("llamacpp")  # installed, but it crashed while it answered
    why = "llama.cpp crashed here while it answered" if crashed else "llama.cpp is not installed"
    note = ErrorInfo(
        "engine_fallback",
        f"{why}, so transformers runs this {file_type} file with {scheme} weights "
        "(the file's own groups and grid).",
        {"quantization": scheme, "file_type": file_type, "reason": "crashed" if crashed else "missing"},
    )
    return dataclasses.replace(settings, quantization=scheme), note
