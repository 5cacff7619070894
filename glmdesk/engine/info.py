"""What a load reports: its stages, and what was loaded (plain values, no torch)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from glmdesk.core.errors import ErrorInfo, GlmdeskError


@dataclass(frozen=True)
class LoadProgress:
    """A loading stage for the progress indicator.

    Attributes:
        stage: ``resolving``, ``converting``, ``checking``, ``loading``, ``ready``.
        done: Units done in this stage (tensors, files or bytes; 0 when unknown).
        total: Units in this stage (0 when unknown).
    """

    stage: str
    done: int = 0
    total: int = 0


def stage_reporter(
    progress: Callable[[LoadProgress], None] | None, cancel: threading.Event | None
) -> Callable[..., None]:
    """``report(stage, done=0, total=0)`` for a load: it raises once ``cancel`` is set, then
    tells ``progress`` (when given) the stage as a :class:`LoadProgress`. Every local
    load calls it between its steps, so Cancel ends a load at the next one.

    Raises (from ``report``):
        GlmdeskError: ``load_cancelled`` once ``cancel`` is set.
    """

    def report(stage: str, done: int = 0, total: int = 0) -> None:
        if cancel is not None and cancel.is_set():
            raise GlmdeskError("load_cancelled", "Loading was cancelled.")
        if progress is not None:
            progress(LoadProgress(stage, done, total))

    return report


@dataclass(frozen=True)
class ModelInfo:
    """What was loaded, in plain words and numbers.

    Attributes:
        name: Short model name.
        family: Detected checkpoint family (``chatglm3``, ``generic-hf``, ``gguf``...).
        source_kind: ``embedded``, ``gguf``, ``folder`` or ``hub``.
        location: File, folder or hub id.
        device: ``cpu`` or ``cuda:N``.
        dtype: ``fp32``, ``bf16`` or ``fp16`` (compute dtype).
        quantization: ``none``, ``8bit``, ``4bit``, ``int8-wo`` or ``int4-wo``.
        footprint_mib: Memory of weights and buffers, in MiB.
        context_length: Maximum positions the model was trained for, in tokens.
        kv_bytes_per_token: KV bytes a token adds (2 x layers x kv heads x head dim x
            bytes; MLA: layers x (latent + rotary key) x bytes), in bytes.
        prompt_format: Name of the prompt format.
        threads: CPU threads torch's kernels use on the loading thread (the one
            that decodes; OpenMP's count is per thread).
        fused_decode: Whether tokens are decoded by the fused step
            (:mod:`glmdesk.engine.decode.decode_step`); off when not asked for or the model
            is not supported.
        compiled_decode: Whether that step runs compiled on static KV buffers
            (:mod:`glmdesk.engine.decode.static_decode`).
        engine: The backend that runs it: ``transformers``, ``llamacpp`` or ``remote``.
        offloaded_mib: Weights of a model on the GPU kept in system RAM instead (a
            mixture of experts' experts), in MiB; 0 when all are on ``device``.
        notes: Choices made for the user (e.g. fp16 -> fp32 on CPU), as kinds
            (``fp16_on_cpu``, ``bnb_on_cpu``, ``compile_unavailable``) with an English
            ``message``.
        chat_format: The format read from the chat template (``glm45``, ``think``,
            ``plain``; :mod:`glmdesk.engine.families.template_format`), or ``""`` for a
            family with a format of its own (ChatGLM2/3, GLM-4-9B, vision, remote).
        format_reason: Why that format (English, a sentence's end), or ``""`` when it was
            not read from a GLM template (a family's own format, another model's template).
        effort_levels: The ``reasoning_effort`` levels its chat template tells apart
            (GLM-5.2: ``high``, ``max``; :mod:`glmdesk.engine.families.template_effort`),
            ``()`` when it has none.
        clear_thinking: Whether its chat template reads ``clear_thinking`` (keep or drop
            earlier turns' thinking: GLM-4.7 and the GLM-5 line).
        keeps_thinking: Whether that template keeps earlier turns' thinking when
            ``clear_thinking`` is not given (GLM-5.3: ``True``; GLM-4.7, GLM-5.2:
            ``False``); ``False`` for a template that does not read it.
    """

    name: str
    family: str
    source_kind: str
    location: str
    device: str
    dtype: str
    quantization: str
    footprint_mib: float
    context_length: int
    kv_bytes_per_token: int
    prompt_format: str
    threads: int = 0
    fused_decode: bool = False
    compiled_decode: bool = False
    engine: str = "transformers"
    notes: tuple[ErrorInfo, ...] = ()
    offloaded_mib: float = 0.0
    chat_format: str = ""
    format_reason: str = ""
    effort_levels: tuple[str, ...] = ()
    clear_thinking: bool = False
    keeps_thinking: bool = False

    def describe(self) -> str:
        """One line for a terminal or the status bar."""
        if self.engine == "remote":
            return f"{self.name} on the server {self.location}, context {self.context_length} tokens"
        quant = "" if self.quantization == "none" else f", {self.quantization}"
        quant += (
            ", compiled decode" if self.compiled_decode else ", fused decode" if self.fused_decode else ""
        )
        name = f"{self.name} (embedded)" if self.source_kind == "embedded" else self.name
        ram = f" ({self.offloaded_mib:.0f} MiB of it in RAM)" if self.offloaded_mib else ""
        return (
            f"{name} [{self.family}] on {self.device}, {self.dtype}{quant}, "
            f"{self.footprint_mib:.0f} MiB{ram}, context {self.context_length} tokens, {self.threads} thread{'s' if self.threads != 1 else ''}"
        )


def context_limit(config) -> int | None:
    """The context window a transformers config states, in tokens (``None`` when it states none)."""
    text = config.get_text_config(decoder=True) if hasattr(config, "get_text_config") else config
    for name in ("max_position_embeddings", "seq_length", "max_sequence_length"):
        value = getattr(text, name, None)
        if isinstance(value, int) and value > 0:
            return value
    return None
