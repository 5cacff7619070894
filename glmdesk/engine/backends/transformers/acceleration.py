"""Load stage 3: acceleration: the fused decode step, weight-only int8/int4, threads, compile.

``compile_decode`` builds the static decode path (:mod:`glmdesk.engine.decode.static_decode`:
static KV buckets, one compiled graph, CUDA graphs on a GPU); it needs the fused
step, which it also allows on a GPU.

Weight-only int8/int4 runs the scheme :func:`~glmdesk.core.settings.quantization_scheme`
names for the model's device: glmdesk's layers on torch's CPU kernels
(:mod:`glmdesk.engine.backends.transformers.weight_only`) or torchao's (:mod:`glmdesk.engine.backends.transformers.torchao_quant`).

:func:`accelerate` runs after placement and returns the decode step the KV-cache
strategies will use for single tokens (``None``: transformers' forward). Nothing is
patched onto the transformers model: the step is carried by
:class:`~glmdesk.engine.backends.transformers.loader.LoadedModel` and handed to each strategy. Threads:
``LoadSettings.threads`` is applied on the loading thread, which is the thread that
decodes (OpenMP counts threads per calling thread).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from glmdesk.core import paths
from glmdesk.core.errors import ErrorInfo
from glmdesk.core.settings import LoadSettings, quantization_scheme
from glmdesk.engine.backends.transformers import torchao_quant, weight_only
from glmdesk.engine.cache.base import DecodeStep
from glmdesk.engine.decode import decode_step

#: torch's own thread count before glmdesk changes it (one per physical core).
DEFAULT_THREADS = torch.get_num_threads()


@dataclass(frozen=True)
class Acceleration:
    """What :func:`accelerate` did.

    Attributes:
        step: The decode step for single tokens (fused or compiled), or ``None``.
        fused: Whether the fused step is used.
        compiled: Whether it runs compiled.
        notes: Choices made for the user (``compile_unavailable``).
    """

    step: DecodeStep | None
    fused: bool
    compiled: bool
    notes: tuple[ErrorInfo, ...] = ()


def accelerate(model, settings: LoadSettings, report) -> Acceleration:
    """Fuse projections, quantize weight-only, set threads, build (and compile) the step.

    Args:
        model: The placed model (eval mode).
        settings: The load settings.
        report: ``report(stage, done, total)``.
    """
    any_device = settings.compile_decode  # the static path runs the fused layers on a GPU too
    fused = settings.fused_decode and decode_step.unsupported_reason(model, any_device) is None
    if fused:  # before quantization, which then quantizes the fused layers
        decode_step.fuse_projections(model, any_device)
    scheme = quantization_scheme(settings.quantization, next(model.parameters()).device.type)
    if scheme in torchao_quant.SCHEMES:
        report("quantizing")
        torchao_quant.quantize_model(model, scheme)
    elif scheme is not None and scheme.startswith("torch-"):
        report("quantizing")
        weight_only.quantize_linears(model, settings.quantization)
    torch.set_num_threads(settings.threads or DEFAULT_THREADS)  # before compiling: Inductor reads it
    step = decode_step.FusedDecodeStep(model) if fused else None
    notes: list[ErrorInfo] = []
    compiled = False
    if settings.compile_decode:
        step, compiled = _compile_decode(model, step, report, notes)
    return Acceleration(step, fused, compiled, tuple(notes))


def _compile_decode(model, step, report, notes: list[ErrorInfo]) -> tuple:
    """Build the static decode path now; on failure keep the eager fused step (on the
    CPU; on a GPU transformers' forward) and add a note.

    Returns:
        ``(step to use, compiled?)``.
    """
    from glmdesk.engine.decode import compile_support, static_decode

    reason = compile_support.compiler_missing_reason() if model.device.type == "cpu" else None
    reason = reason or ("the fused decode step is off" if step is None else None)
    if reason is None:
        try:
            built = static_decode.build_static_step(model, paths.cache_dir() / "inductor", report)
            return built, True
        except Exception as exc:  # no C++ compiler, an operation Inductor cannot compile
            reason = f"{exc.__class__.__name__}: {exc}".splitlines()[0][:300]
    if model.device.type != "cpu":
        step = None  # the eager fused step is for the CPU
    notes.append(
        ErrorInfo(
            "compile_unavailable",
            f"The decode step was not compiled ({reason}); tokens are decoded without it.",
            {"reason": reason},
        )
    )
    return step, False
