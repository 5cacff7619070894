"""The llama.cpp backend: GGUF files on llama-cpp-python's low-level API.

llama.cpp evaluates tokens and holds the KV cache; the decode loop stays glmdesk's:
:func:`glmdesk.engine.decode.generate.stream_answer` runs unchanged over
:class:`LlamaCppModel` (a :class:`~glmdesk.engine.decode.generate.TextModel`), so the same
transformers processors read the live :class:`~glmdesk.core.settings.ParamsBox`
before every token, the same stop ids end a reply, the same UTF-8-safe incremental
detokenizer runs over llama.cpp's token bytes, and Stop ends an answer within one token.

Before llama.cpp opens a file, its header is read (:mod:`glmdesk.engine.files.gguf_header`):
a file that is not GGUF, a truncated one, or an architecture or tensor type llama.cpp
cannot run gets its sentence within a second.
"""

from __future__ import annotations

import ctypes
import os
import threading
from collections import deque
from collections.abc import Sequence
from pathlib import Path

from glmdesk.core.errors import ErrorInfo, GlmdeskError
from glmdesk.core.settings import (
    LLAMA_DEFAULT_N_CTX,
    PRECISIONS,
    QUANTIZATIONS,
    CacheSettings,
    LoadSettings,
)
from glmdesk.engine.backends.base import ProgressCallback
from glmdesk.engine.backends.llamacpp.archs import library_knows, unrunnable_shape
from glmdesk.engine.backends.llamacpp.kv import (
    ContextConfig,
    LlamaCacheSource,
    LlamaContext,
    kv_bytes_per_token,
    plan,
)
from glmdesk.engine.backends.llamacpp.moe import expert_count, expert_overrides, overridden_tensor
from glmdesk.engine.backends.llamacpp.vocab import LlamaVocab, gguf_format
from glmdesk.engine.backends.local import LocalBackend
from glmdesk.engine.decode.kv_pool import KVPool
from glmdesk.engine.families.template_effort import effort_levels, keeps_thinking, reads_clear_thinking
from glmdesk.engine.files.gguf_header import ACTIVATION_ONLY_TYPES, GGUFHeader, read_gguf_header, weight_type
from glmdesk.engine.info import ModelInfo, stage_reporter

_log_lines: deque[str] = deque(maxlen=6)
_overridden: list[tuple[str, str]] = []  # the last load's tensors llama.cpp moved (name, buffer)
_log_callback = None
_init_lock = threading.Lock()


def llama_lib():
    """The ``llama_cpp`` module, its backend initialised once and its log kept here
    (warnings and errors only, for the sentences below; nothing on stderr).

    Raises:
        GlmdeskError: ``load_failed`` when llama-cpp-python is not installed.
    """
    global _log_callback
    try:
        import llama_cpp  # pyright: ignore[reportMissingImports]  # built on the user's machine; may be absent
    except ImportError as exc:
        raise GlmdeskError(
            "load_failed",
            "The llama.cpp engine needs llama-cpp-python: pip install 'glmdesk[llamacpp]'.",
            detail=f"llama_cpp not importable: {exc}",
        ) from exc
    with _init_lock:
        if _log_callback is None:

            @llama_cpp.llama_log_callback
            def keep(level: int, text: bytes, user_data) -> None:
                if level in (2, 3):  # GGML_LOG_LEVEL_WARN, _ERROR
                    line = (text or b"").decode("utf-8", "replace").strip()
                    if line:
                        _log_lines.append(line)
                elif text and b"overridden to" in text:  # a debug line: a tensor kept in RAM
                    moved = overridden_tensor(text.decode("utf-8", "replace"))
                    if moved:
                        _overridden.append(moved)

            llama_cpp.llama_log_set(keep, ctypes.c_void_p(0))
            llama_cpp.llama_backend_init()
            _log_callback = keep
    return llama_cpp


def last_log() -> str:
    """llama.cpp's last warning or error line (``""`` when none)."""
    return _log_lines[-1] if _log_lines else ""


def default_threads() -> int:
    """One thread per physical core (as torch's default), at least 1."""
    try:
        import psutil

        return psutil.cpu_count(logical=False) or os.cpu_count() or 1
    except Exception:
        return os.cpu_count() or 1


def check_runnable(header: GGUFHeader, name: str) -> None:
    """Refuse an architecture or tensor type llama.cpp does not know or cannot run.

    The known names are the ``gguf`` package's (``MODEL_ARCH_NAMES``,
    ``GGMLQuantizationType``), llama.cpp's own Python package, and the architectures the
    installed library names (:func:`~glmdesk.engine.backends.llamacpp.archs.library_knows`:
    ``gguf`` may lag behind it); weights of an activation-only type
    (:data:`~glmdesk.engine.files.gguf_header.ACTIVATION_ONLY_TYPES`) and shapes llama.cpp
    would abort on (:func:`~glmdesk.engine.backends.llamacpp.archs.unrunnable_shape`) are
    refused too.

    Raises:
        GlmdeskError: ``unsupported_checkpoint`` naming the architecture or types.
    """
    import gguf

    known = header.architecture in set(gguf.MODEL_ARCH_NAMES.values())
    if not known and not (header.architecture and library_knows(header.architecture)):
        reason = f"its architecture '{header.architecture or 'none'}' is not one llama.cpp can run"
        raise GlmdeskError(
            "unsupported_checkpoint", f"{name} cannot be used: {reason}.", path=header.path, reason=reason
        )
    if reason := unrunnable_shape(header.architecture, header.metadata):
        raise GlmdeskError(
            "unsupported_checkpoint", f"{name} cannot be used: {reason}.", path=header.path, reason=reason
        )
    unrunnable = sorted({*header.unknown_types, *(header.tensor_types & ACTIVATION_ONLY_TYPES)})
    if unrunnable:
        reason = f"its tensor types ({', '.join(unrunnable)}) are not ones llama.cpp can run"
        raise GlmdeskError(
            "unsupported_checkpoint", f"{name} cannot be used: {reason}.", path=header.path, reason=reason
        )


class LlamaCppModel:
    """A loaded GGUF model as a :class:`~glmdesk.engine.decode.generate.TextModel`.

    Attributes:
        prompt_format: Role tokens (ChatGLM3 / GLM-4) or the GGUF's chat template.
        context_length: The full cache's context, in tokens.
        device: ``cpu`` or ``cuda:0`` (layers offloaded).
        lock: One answer at a time.
        vocab: The :class:`LlamaVocab`.
        header: The file's :class:`GGUFHeader`.
        kv_pool: The kept cache: the most recent conversation's source only (see
            :class:`~glmdesk.engine.decode.kv_pool.KVPool`). llama.cpp keeps one context of
            ``n_ctx`` cells, allocated once; a second conversation kept beside it would
            need either a second context (another full allocation) or a share of the
            same cells as another sequence, which would shrink the room each
            conversation has (the window and dynamic contexts are sized for exactly
            one) and make an answer's room depend on other conversations. So opening a
            fresh source (another conversation, other settings, a completion) drops the
            kept one first, and switching back to a conversation prefills it afresh
            (llama.cpp's server keeps one cached prompt per slot the same way).
    """

    def __init__(self, lib, model, header: GGUFHeader, settings: LoadSettings, info_name: str) -> None:
        self.lib, self.model, self.header = lib, model, header
        self.vocab = LlamaVocab(lib, model)
        template = None
        if settings.chat_template:
            from glmdesk.engine.families.template_format import read_template_file

            template = read_template_file(settings.chat_template)
        self.prompt_format, self.format_choice = gguf_format(
            self.vocab, header, info_name, settings.chat_format, template
        )
        self.template = template or str(header.get("tokenizer.chat_template") or "")
        self.family = self.format_choice.family
        trained = int(lib.llama_model_n_ctx_train(model)) or header.context_length or 2048
        self.n_ctx_train = trained
        self.context_length = settings.llamacpp.n_ctx or min(trained, LLAMA_DEFAULT_N_CTX)
        self.threads = settings.threads or default_threads()
        self.n_batch = settings.llamacpp.n_batch
        self.device = "cpu"
        self.experts_in_ram: tuple[str, ...] = ()  # tensors llama.cpp kept in RAM (experts in RAM)
        self.lock = threading.Lock()
        self._context: LlamaContext | None = None
        # No byte budget: the kept tokens sit in the context's buffer, allocated anyway.
        self.kv_pool = KVPool(lambda compat, held: 1 << 62, max_entries=1)

    def decode(self, ids: Sequence[int]) -> str:
        """Ids to text from llama.cpp's token bytes, special tokens skipped but the
        format's markers written (``marker_ids``: GLM-4.5's think and tool-call tags)."""
        markers = self.prompt_format.marker_ids
        if not markers:
            return self.vocab.decode(ids)
        out, run = [], []
        for token in ids:
            if token in markers:
                out += [self.vocab.decode(run), markers[token]]
                run = []
            else:
                run.append(token)
        return "".join(out) + self.vocab.decode(run)

    def context_for(self, kv_type: str, n_ctx: int) -> LlamaContext:
        """The context of that cache type and size: the current one when it matches,
        else a new one (the old one freed first, so two never coexist).

        Raises:
            GlmdeskError: ``invalid_setting`` when llama.cpp refuses it.
        """
        config = ContextConfig(n_ctx, kv_type, min(self.n_batch, n_ctx), self.threads)
        if self._context is not None and self._context.config == config:
            return self._context
        if self._context is not None:
            self._context.close()
            self._context = None
        self._context = LlamaContext(self.lib, self.model, config, self.vocab.n_vocab, last_log)
        return self._context

    def _check_shift(self, context: LlamaContext, cache: CacheSettings, capacity: int | None) -> None:
        if capacity is not None and not context.can_shift:
            raise GlmdeskError(
                "invalid_setting",
                f"llama.cpp cannot shift this model's KV cache, so the {cache.strategy} strategy cannot run.",
                name="kv_cache",
                value=cache.strategy,
                reason="llama_memory_can_shift is false",
            )

    def probe(self, cache: CacheSettings) -> None:
        """Make a small context of the kind ``cache`` needs and free it.

        Raises:
            GlmdeskError: ``invalid_setting`` when the strategy cannot run here.
        """
        kv_type, _, capacity = plan(cache, 256, kv_bytes_per_token(self.header, "f16"), cache.kv_bits)
        config = ContextConfig(256, kv_type, min(self.n_batch, 256), self.threads)
        context = LlamaContext(self.lib, self.model, config, self.vocab.n_vocab, last_log)
        try:
            self._check_shift(context, cache, capacity)
        finally:
            context.close()

    def open_source(self, cache: CacheSettings) -> LlamaCacheSource:
        """A :class:`LlamaCacheSource` of the chosen strategy (cache cleared, the kept
        conversation's source dropped).

        Raises:
            GlmdeskError: ``invalid_setting`` when the strategy cannot run here.
        """
        per_token = kv_bytes_per_token(self.header, "f16")
        kv_type, n_ctx, capacity = plan(cache, self.context_length, per_token, cache.kv_bits)
        self.kv_pool.clear()  # the kept conversation's tokens are about to be overwritten
        context = self.context_for(kv_type, n_ctx)
        self._check_shift(context, cache, capacity)
        return LlamaCacheSource(context, cache, cache.strategy, capacity)

    def logits_processors(self) -> tuple:
        """Processors after the user's chain (none)."""
        return ()

    def close(self) -> None:
        """Free the context and the weights. Idempotent."""
        self.kv_pool.clear()
        if self._context is not None:
            self._context.close()
            self._context = None
        if self.model:
            self.lib.llama_model_free(self.model)
            self.model = None


def _load_model(lib, path: str, settings: LoadSettings, report, cancel: threading.Event | None, header):
    """``llama_model_load_from_file`` with progress and cancel; ``(model pointer,
    offloaded, tensors kept in RAM by the experts override)``."""
    params = lib.llama_model_default_params()
    own = settings.llamacpp
    on_gpu = settings.device != "cpu" and bool(lib.llama_supports_gpu_offload())
    params.n_gpu_layers = (own.n_gpu_layers if own.n_gpu_layers >= 0 else 1 << 30) if on_gpu else 0
    params.load_mode = lib.LLAMA_LOAD_MODE_MMAP if own.use_mmap else lib.LLAMA_LOAD_MODE_NONE
    overrides = None
    if own.experts_in_ram and on_gpu and expert_count(header):  # on the CPU all is in RAM already
        overrides = expert_overrides(lib)  # alive until the load returns
        params.tensor_buft_overrides = ctypes.addressof(overrides)

    @lib.llama_progress_callback
    def on_progress(fraction: float, user_data) -> bool:
        if cancel is not None and cancel.is_set():
            return False
        report("loading", int(fraction * 1000), 1000)
        return True

    params.progress_callback = on_progress
    _log_lines.clear()
    _overridden.clear()
    model = lib.llama_model_load_from_file(path.encode("utf-8"), params)
    del overrides
    if not model:
        if cancel is not None and cancel.is_set():
            raise GlmdeskError("load_cancelled", "Loading was cancelled.")
        detail = last_log() or "llama_model_load_from_file failed"
        raise GlmdeskError(
            "load_failed", f"llama.cpp could not load {Path(path).name}: {detail}", detail=detail
        )
    return model, on_gpu and params.n_gpu_layers != 0, tuple(_overridden)


class LlamaCppBackend(LocalBackend):
    """Answers with llama.cpp on a GGUF file (the embedded default included)."""

    name = "llamacpp"
    _model: LlamaCppModel | None

    def _loaded(self) -> LlamaCppModel:
        """The loaded model.

        Raises:
            RuntimeError: before :meth:`load` succeeded.
        """
        if self._model is None:
            raise RuntimeError("no model is loaded")
        return self._model

    @property
    def model(self) -> LlamaCppModel | None:
        """The :class:`LlamaCppModel` (``None`` before a load)."""
        return self._model

    def load(
        self,
        settings: LoadSettings,
        progress: ProgressCallback | None = None,
        cancel: threading.Event | None = None,
    ) -> ModelInfo:
        from glmdesk.engine.files import sources

        report = stage_reporter(progress, cancel)

        report("resolving")
        source = sources.resolve_source(settings.model)
        if source.kind not in ("embedded", "gguf"):
            reason = "the llama.cpp engine runs .gguf files only; choose the transformers engine"
            raise GlmdeskError(
                "unsupported_checkpoint",
                f"{source.name} cannot be used: {reason}.",
                path=source.location,
                reason=reason,
            )
        report("checking")
        header = read_gguf_header(source.location)
        check_runnable(header, source.name)
        lib = llama_lib()
        report("loading", 0, 1000)
        pointer, offloaded, in_ram = _load_model(lib, source.location, settings, report, cancel, header)
        try:
            model = LlamaCppModel(lib, pointer, header, settings, source.name)
        except BaseException:
            lib.llama_model_free(pointer)
            raise
        model.device = "cuda:0" if offloaded else "cpu"
        model.experts_in_ram = tuple(name for name, _buffer in in_ram)
        report("preparing")
        self.close()
        self._model, self._capabilities = model, None
        self._info = ModelInfo(
            name=source.name,
            family=model.family,
            source_kind=source.kind,
            location=source.location,
            device=model.device,
            dtype="fp32" if model.device == "cpu" else "fp16",
            quantization=weight_type(header),
            footprint_mib=int(lib.llama_model_size(pointer)) / 2**20,
            context_length=model.context_length,
            kv_bytes_per_token=int(kv_bytes_per_token(header, "f16")),
            prompt_format=model.prompt_format.name,
            chat_format=model.format_choice.chat_format,
            format_reason=model.format_choice.reason,
            effort_levels=effort_levels(model.template),
            clear_thinking=reads_clear_thinking(model.template),
            keeps_thinking=keeps_thinking(model.template),
            threads=model.threads,
            engine=self.name,
            notes=_notes(settings)
            + _expert_notes(settings, header, model.experts_in_ram)
            + tuple(n for n in (model.format_choice.note(),) if n),
            offloaded_mib=(header.expert_bytes if model.experts_in_ram and offloaded else 0) / 2**20,
        )
        report("ready")
        return self._info

    def encode_raw(self, text: str) -> list[int]:
        return self._loaded().vocab.encode(text)

    def engine_capabilities(self) -> dict:
        """The GGUF file's own weights: no torch quantization or precision; tool calls
        when the file's prompt format writes them (GLM-4's role tokens, GLM-4.5's and
        GLM-4.7-Flash's templates), read from the text by the same filters as on transformers."""
        info = self.info
        return {
            "quantizations": {q: _gguf_only("quantization", q, info) for q in QUANTIZATIONS[1:]},
            "precisions": {p: _gguf_only("precision", p, info) for p in PRECISIONS[1:]},
            "tool_calls": bool(self._loaded().prompt_format.tool_calls),
        }

    def probe_strategy(self, strategy: str) -> None:
        """Make the strategy's kind of context once, small, and free it."""
        model = self._loaded()
        with model.lock:
            model.probe(CacheSettings(strategy=strategy, window=240, sinks=4, budget_mib=1.0))

    def close(self) -> None:
        model, self._model = self._model, None
        self._info = self._capabilities = None
        if model is not None:
            with model.lock:
                model.close()


def _gguf_only(prefix: str, value: str, info: ModelInfo) -> ErrorInfo:
    reason = f"llama.cpp runs the GGUF file's own {info.quantization} weights"
    kind = "quantization_unavailable" if prefix == "quantization" else "precision_unavailable"
    return ErrorInfo(
        kind, f"{value} is not available with llama.cpp: {reason}.", {prefix: value, "reason": reason}
    )


def _expert_notes(
    settings: LoadSettings, header: GGUFHeader, in_ram: tuple[str, ...]
) -> tuple[ErrorInfo, ...]:
    """What the "experts in RAM" option did: the expert tensors llama.cpp kept in RAM,
    or why it did nothing (a dense model)."""
    if not settings.llamacpp.experts_in_ram:
        return ()
    if not expert_count(header):
        message = "This model has no experts (it is not a mixture of experts); experts in RAM does nothing."
        return (ErrorInfo("experts_in_ram_dense", message),)
    if not in_ram:
        message = "The model runs on the CPU, so its experts are in system RAM already."
        return (ErrorInfo("experts_in_ram_cpu", message),)
    mib = header.expert_bytes / 2**20
    message = f"{len(in_ram)} expert tensors ({mib:.0f} MiB) are kept in system RAM."
    return (ErrorInfo("experts_in_ram", message, {"tensors": len(in_ram), "mib": round(mib)}),)


def _notes(settings: LoadSettings) -> tuple[ErrorInfo, ...]:
    """Settings of the transformers engine that do not apply here, said once."""
    ignored = [
        name
        for name, on in (
            (f"quantization {settings.quantization}", settings.quantization != "none"),
            (f"precision {settings.precision}", settings.precision not in ("auto", "fp32")),
            ("compiled decode step", settings.compile_decode),
        )
        if on
    ]
    if not ignored:
        return ()
    message = f"llama.cpp runs the GGUF file's own weights; {', '.join(ignored)} applies to the transformers engine."
    return (ErrorInfo("llamacpp_ignores", message, {"options": ", ".join(ignored)}),)
