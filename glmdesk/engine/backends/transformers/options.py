"""Which torch-side load options work on this machine (the transformers engine's
availability), as typed reasons (quick: nothing heavy imported).

The Open model dialog asks at start, on the thread that is about to load the model, so
nothing here may import bitsandbytes (about 2 s), torchao (seconds) or compile anything.
"""

from __future__ import annotations

import importlib.util

import torch

from glmdesk.core.errors import ErrorInfo
from glmdesk.engine.backends.spec import unavailable
from glmdesk.engine.backends.transformers import torchao_quant, weight_only

__all__ = ["option_availability", "unavailable"]


def _bnb_missing(option: str) -> ErrorInfo | None:
    """Whether bitsandbytes is installed, without importing it (a broken install is found
    when it is chosen: the loader imports it and says why it failed)."""
    if importlib.util.find_spec("bitsandbytes") is None:
        return unavailable(option, "bnb_missing", "bitsandbytes cannot be used here (it is not installed).")
    return None


def option_availability() -> dict[str, ErrorInfo | None]:
    """Which torch-side load options work on this machine (every engine's together:
    :func:`glmdesk.engine.backends.availability`).

    Returns:
        ``{"quantization:8bit": None, "precision:fp16": ErrorInfo(...), ...}``: ``None``
        when the option works, else an ``option_unavailable`` :class:`ErrorInfo` whose
        ``params["reason"]`` is one of
        :data:`~glmdesk.engine.backends.transformers.TORCH_REASONS`.
    """
    from glmdesk.engine.decode.compile_support import compiler_missing_reason

    cuda = torch.cuda.is_available()
    out: dict[str, ErrorInfo | None] = {
        "device:cuda": None
        if cuda
        else unavailable("device:cuda", "no_cuda", "No CUDA GPU was found; glmdesk runs on the CPU."),
        "quantization:8bit": _bnb_missing("quantization:8bit"),
        "quantization:4bit": _bnb_missing("quantization:4bit"),
        "precision:fp16": None
        if cuda
        else unavailable(
            "precision:fp16", "fp16_needs_gpu", "fp16 needs a GPU; on the CPU glmdesk uses fp32."
        ),
        "precision:bf16": None,
    }
    for scheme, bits in weight_only.SCHEMES.items():
        key = f"quantization:{scheme}"
        out[key] = (
            None
            if weight_only.kernels_available(bits)
            else unavailable(
                key, "no_cpu_kernel", f"This torch build has no {bits}-bit CPU kernel.", bits=bits
            )
        )
    if cuda:  # weight-only int8/int4 run on torchao's kernels there
        reason = torchao_quant.torchao_missing_reason()
        out["quantization:torchao"] = (
            None if reason is None else unavailable("quantization:torchao", "torchao_missing", reason)
        )
    if cuda and not torch.cuda.is_bf16_supported():
        out["precision:bf16"] = unavailable(
            "precision:bf16", "no_bf16", "This GPU has no bf16 support; use fp16."
        )
    reason = compiler_missing_reason()
    if reason is not None:
        code = "frozen_app" if "packaged" in reason else "no_compiler"
        out["decode:compile"] = unavailable("decode:compile", code, reason)
    else:
        out["decode:compile"] = None
    return out
