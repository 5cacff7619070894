"""The transformers engine's self-description (light: the loader is imported on load).

It runs every source (HF folders, converted ChatGLM checkpoints, hub ids, and GGUF
files as a dequantized copy), with the torch-side options: quantizations, precisions,
the fused and compiled decode steps. Its availability is
:func:`glmdesk.engine.backends.transformers.options.option_availability` (torch, bitsandbytes, a compiler).
"""

from __future__ import annotations

from glmdesk.core.engine_options import TransformersOptions
from glmdesk.core.settings import LoadSettings
from glmdesk.engine.backends.spec import QT_TRANSLATE_NOOP, BackendSpec, is_gguf_model

# Reason codes of ``option_unavailable`` for the torch-side options (the UI words each).
TORCH_REASONS = (
    "no_cuda",
    "fp16_needs_gpu",
    "no_bf16",
    "bnb_missing",
    "torchao_missing",
    "no_cpu_kernel",
    "frozen_app",
    "no_compiler",
)


_SOURCE = QT_TRANSLATE_NOOP("OpenModelDialog", "Model folders and hub ids run in transformers.")
_COPY = QT_TRANSLATE_NOOP(
    "OpenModelDialog",
    "Runs in transformers: the file's weights are turned into fp32 once and kept, and "
    "the torch quantizations and the compiled decode step can be used.",
)


class TransformersSpec(BackendSpec):
    """transformers: every source; the last resort of ``auto``."""

    name = "transformers"
    label = "transformers"
    reasons = TORCH_REASONS
    applies = frozenset({"quantization", "precision", "fused_decode", "compile_decode"})
    adaptive_threads = True
    auto_order = 90
    options_type = TransformersOptions
    notes = {"source": _SOURCE, "options": _COPY, "fallback": _COPY, "chosen": _COPY}

    def availability(self):
        from glmdesk.engine.backends.transformers.options import option_availability

        return option_availability()

    def claims(self, settings: LoadSettings) -> str:
        """``source`` for what only transformers runs (folders, hub ids); for a GGUF
        file ``options`` when a torch quantization or the compiled decode step is asked
        for, else ``fallback`` (no faster engine claimed it)."""
        if not is_gguf_model(settings.model):
            return "source"
        return "options" if settings.quantization != "none" or settings.compile_decode else "fallback"

    def check(self, settings: LoadSettings) -> None:
        """Refuse a user's GGUF file whose tensor types transformers cannot dequantize
        (:func:`~glmdesk.engine.files.gguf_header.check_transformers_tensor_types`), from the
        header (milliseconds), before anything imports torch (seconds).

        Raises:
            GlmdeskError: ``gguf_unsupported``, and what reading the header raises
                (``not_gguf``, ``lfs_pointer``, ``corrupt_weights``).
        """
        if not settings.model or not settings.model.strip() or not is_gguf_model(settings.model):
            return  # the embedded model's types are known to be readable
        from glmdesk.engine.files.gguf_header import check_transformers_tensor_types, read_gguf_header
        from glmdesk.engine.files.sources import resolve_source

        source = resolve_source(settings.model)
        if source.kind == "gguf":
            check_transformers_tensor_types(read_gguf_header(source.location))

    def create(self, choice=None):
        """A :class:`~glmdesk.engine.backends.transformers.backend.TransformersBackend`; when
        ``auto`` passed a faster engine over (llama.cpp not installed), one that runs a
        GGUF file on its weight-only scheme (:mod:`glmdesk.engine.backends.transformers.fallback`),
        with the choice's note (why that engine did not run) among its load notes."""
        from glmdesk.engine.backends.transformers.backend import TransformersBackend

        note = choice.note if choice is not None else None
        return TransformersBackend(fallback=bool(choice and choice.passed_over), note=note)


SPEC = TransformersSpec()
