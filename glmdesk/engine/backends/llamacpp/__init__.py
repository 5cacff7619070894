"""The llama.cpp engine's self-description (light: llama-cpp-python is imported only to
ask what it can do, off the GUI thread, and on load).

It runs GGUF files (the embedded model too) on their own quantized weights, several
times faster on a CPU than transformers' dequantized copy, so ``auto`` takes it for a
GGUF file unless a torch-side option only transformers has is asked for.
"""

from __future__ import annotations

import importlib.util

from glmdesk.core.engine_options import LlamaCppOptions
from glmdesk.core.errors import ErrorInfo, GlmdeskError
from glmdesk.core.settings import LLAMA_DEFAULT_N_CTX, LoadSettings
from glmdesk.engine.backends.spec import (
    QT_TRANSLATE_NOOP,
    BackendSpec,
    OptionField,
    is_gguf_model,
    unavailable,
)

_NATIVE = QT_TRANSLATE_NOOP(
    "OpenModelDialog",
    "Runs in llama.cpp: .gguf files run there on their own quantized weights, several "
    "times faster on the CPU than transformers' fp32 copy and without a conversion. "
    "Quantization, precision and the decode-step options apply to transformers.",
)
_MISSING = QT_TRANSLATE_NOOP(
    "OpenModelDialog",
    "Runs in {engine} (its own copy of the weights, dequantized to fp32): "
    "llama-cpp-python is not installed (pip install 'glmdesk[llamacpp]').",
)
_UNTRUSTED = QT_TRANSLATE_NOOP(
    "OpenModelDialog",
    "Runs in {engine} (its own copy of the weights): the installed llama.cpp build crashed or "
    "answered wrongly in its test, so it is not used (rebuild it: glmdesk build-llamacpp).",
)
_NO_VISION = QT_TRANSLATE_NOOP(
    "OpenModelDialog",
    "{file} is a vision projector: {engine} runs this model's text only here "
    "(llama-cpp-python has no GLM vision handler). To show the model images, open its "
    "Hugging Face folder with the transformers engine, or connect to a server that runs it.",
)
_INSTALL = "The llama.cpp engine needs llama-cpp-python: pip install 'glmdesk[llamacpp]'."


def llama_cpp_available() -> bool:
    """Whether llama-cpp-python (``llama_cpp``) is installed; nothing is imported."""
    return importlib.util.find_spec("llama_cpp") is not None


def llamacpp_distrust() -> ErrorInfo | None:
    """Why the installed llama.cpp build must not run, from its remembered smoke verdict
    (:mod:`glmdesk.engine.llamacpp_smoke`; kind ``llamacpp_untrusted``), or ``None`` (not
    installed, passed, or not tested yet). Cheap: nothing is imported or run."""
    from glmdesk.engine.llamacpp_smoke import installed_verdict

    verdict = installed_verdict() if llama_cpp_available() else None
    return None if verdict is None or verdict.passed else verdict.error()


def llamacpp_vet() -> ErrorInfo | None:
    """Why the installed llama.cpp build must not run (kind ``llamacpp_untrusted``), or
    ``None``: its remembered verdict, else the smoke test run now in a child process
    (about a second; never in this process, which a crash would kill)."""
    if not llama_cpp_available():
        return None
    from glmdesk.engine.llamacpp_smoke import verdict_for

    verdict = verdict_for()
    return None if verdict.passed else verdict.error()


def llamacpp_availability() -> dict:
    """``{"engine:llamacpp": None or ErrorInfo, "llamacpp:gpu": None or ErrorInfo}`` for Open
    model (``option_unavailable``, reasons ``llamacpp_missing``, ``llamacpp_untrusted``,
    ``llamacpp_broken``, ``no_gpu_offload``). Runs the installed build's smoke test when it
    has no verdict (:func:`llamacpp_vet`), then imports ``llama_cpp`` (loads its shared
    library, a fraction of a second) only if it passed: call it off the GUI thread."""

    def both(reason: str, message: str) -> dict:
        return {key: unavailable(key, reason, message) for key in ("engine:llamacpp", "llamacpp:gpu")}

    if not llama_cpp_available():
        return both(
            "llamacpp_missing", "llama-cpp-python is not installed (pip install 'glmdesk[llamacpp]')."
        )
    try:
        problem = llamacpp_vet()
    except GlmdeskError as exc:  # no embedded model to test it with
        problem = exc.info
    if problem is not None:
        return both("llamacpp_untrusted", problem.message)
    try:
        import llama_cpp  # pyright: ignore[reportMissingImports]  # built on the user's machine; may be absent

        gpu = bool(llama_cpp.llama_supports_gpu_offload())
    except Exception as exc:  # a broken install: say so rather than offer it
        return both(
            "llamacpp_broken", f"llama-cpp-python cannot be loaded ({exc.__class__.__name__}: {exc})."
        )
    no_gpu = unavailable(
        "llamacpp:gpu", "no_gpu_offload", "This llama-cpp-python build has no GPU offload (a CPU build)."
    )
    return {"engine:llamacpp": None, "llamacpp:gpu": None if gpu else no_gpu}


# llama.cpp's own load options (``LoadSettings`` fields), as Open model shows them.
OPTIONS = (
    OptionField(
        "n_ctx",
        QT_TRANSLATE_NOOP("LlamaCppOptions", "Context (tokens)"),
        QT_TRANSLATE_NOOP(
            "LlamaCppOptions",
            "Tokens of context llama.cpp keeps for the full KV cache: a longer context holds "
            "longer conversations and takes more memory (the gauge shows the KV cache).",
        ),
        minimum=0,
        maximum=1 << 21,
        step=1024,
        special_text=QT_TRANSLATE_NOOP("LlamaCppOptions", "Automatic (the model's, at most {n})"),
        special_values={"n": LLAMA_DEFAULT_N_CTX},
        flag="--n-ctx",
        help=f"llama.cpp context, in tokens (0: the model's, at most {LLAMA_DEFAULT_N_CTX})",
    ),
    OptionField(
        "n_batch",
        QT_TRANSLATE_NOOP("LlamaCppOptions", "Prefill batch (tokens)"),
        QT_TRANSLATE_NOOP(
            "LlamaCppOptions",
            "Prompt tokens per llama.cpp call (prefill): larger batches read long prompts "
            "faster and take a larger compute buffer.",
        ),
        minimum=1,
        maximum=8192,
        flag="--n-batch",
        help="llama.cpp prompt tokens per prefill call (1-8192)",
    ),
    OptionField(
        "use_mmap",
        QT_TRANSLATE_NOOP("LlamaCppOptions", "Map the file into memory"),
        QT_TRANSLATE_NOOP(
            "LlamaCppOptions",
            "Loads at once and shares the weights with the system's file cache; off reads the "
            "whole file into memory first.",
        ),
        flag="--no-mmap",
        help="llama.cpp: read the file instead of mapping it",
    ),
    OptionField(
        "n_gpu_layers",
        QT_TRANSLATE_NOOP("LlamaCppOptions", "GPU layers"),
        QT_TRANSLATE_NOOP(
            "LlamaCppOptions",
            "Layers llama.cpp keeps on the GPU: more layers decode faster and take more GPU memory.",
        ),
        minimum=-1,
        maximum=999,
        special_text=QT_TRANSLATE_NOOP("LlamaCppOptions", "All"),
        needs="llamacpp:gpu",
        gpu_only=True,
        reason_label=QT_TRANSLATE_NOOP("OpenModelDialog", "GPU layers (llama.cpp)"),
        flag="--n-gpu-layers",
        help="llama.cpp on a CUDA build: layers on the GPU (-1: all, 0: none)",
    ),
    OptionField(
        "experts_in_ram",
        QT_TRANSLATE_NOOP("LlamaCppOptions", "Experts in system RAM"),
        QT_TRANSLATE_NOOP(
            "LlamaCppOptions",
            "For a mixture-of-experts model (GLM-4.5, GLM-4.7-Flash): keep the experts' weights in "
            "system RAM and the rest on the GPU, so a model larger than the GPU's memory runs "
            "(slower than all on the GPU). Dense models ignore it.",
        ),
        needs="llamacpp:gpu",
        gpu_only=True,
        reason_label=QT_TRANSLATE_NOOP("OpenModelDialog", "Experts in system RAM (llama.cpp)"),
        flag="--experts-in-ram",
        help="llama.cpp on a CUDA build, a MoE GGUF: keep the experts in system RAM (as --cpu-moe)",
    ),
)


class LlamaCppSpec(BackendSpec):
    """llama.cpp: GGUF files; ``auto`` takes it for them when it is installed."""

    name = "llamacpp"
    label = "llama.cpp"
    reasons = ("llamacpp_missing", "llamacpp_untrusted", "llamacpp_broken", "no_gpu_offload")
    auto_order = 20
    options = OPTIONS
    options_type = LlamaCppOptions
    context = "LlamaCppOptions"
    notes = {
        "native": _NATIVE,
        "chosen": _NATIVE,
        "llamacpp_missing": _MISSING,
        "llamacpp_broken": _MISSING,
        "llamacpp_untrusted": _UNTRUSTED,
        "vision_projector": _NO_VISION,  # glmdesk.engine.backends.gguf_vision: a GGUF with an mmproj file
    }

    def availability(self):
        return llamacpp_availability()

    def available(self, availability=None) -> bool:
        """From ``availability`` (the key present without a reason) when given, else
        whether llama-cpp-python is installed and its build not distrusted
        (:func:`llamacpp_distrust`)."""
        if availability is None:
            return llama_cpp_available() and llamacpp_distrust() is None
        return "engine:llamacpp" in availability and not availability["engine:llamacpp"]

    def missing_reason(self, availability=None) -> str:
        if availability is None and llama_cpp_available() and llamacpp_distrust() is not None:
            return "llamacpp_untrusted"
        return super().missing_reason(availability)

    def vet(self):
        """The installed build's smoke verdict as an error, or ``None`` (:func:`llamacpp_vet`)."""
        try:
            return llamacpp_vet()
        except GlmdeskError as exc:  # no embedded model to test with: it cannot be vouched for
            return exc.info

    def accepts(self, settings: LoadSettings) -> bool:
        """GGUF files only (the embedded model is one)."""
        return is_gguf_model(settings.model)

    def claims(self, settings: LoadSettings) -> str | None:
        """``native`` for a GGUF file unless a torch quantization or the compiled decode
        step is asked for (llama.cpp runs the file's own weights and has neither)."""
        torch_only = settings.quantization != "none" or settings.compile_decode
        return "native" if is_gguf_model(settings.model) and not torch_only else None

    def create(self, choice=None):
        if not llama_cpp_available():
            raise GlmdeskError("load_failed", _INSTALL, detail="llama_cpp is not installed")
        from glmdesk.engine.backends.llamacpp.backend import LlamaCppBackend

        return LlamaCppBackend()


SPEC = LlamaCppSpec()
