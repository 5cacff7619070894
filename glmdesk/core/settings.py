"""Frozen, validated settings that cross threads as whole values.

A widget never edits a field of a settings object that the engine reads: it
builds a new one (``dataclasses.replace``) and swaps the reference. Every
constructor validates in ``__post_init__`` and raises :class:`ValueError` with
a sentence a user can act on.
"""

from __future__ import annotations

import dataclasses
import threading
from dataclasses import dataclass

from glmdesk.core import engine_options
from glmdesk.core.engine_options import (
    LLAMA_DEFAULT_N_CTX as LLAMA_DEFAULT_N_CTX,
)
from glmdesk.core.engine_options import (
    PRECISIONS as PRECISIONS,
)
from glmdesk.core.engine_options import (
    QUANTIZATIONS as QUANTIZATIONS,
)
from glmdesk.core.engine_options import LlamaCppOptions, RemoteOptions, TransformersOptions

# SamplingParams lives beside its table (one row and one field per sampling control).
from glmdesk.core.sampling_fields import SamplingParams

#: Quantizations done by bitsandbytes wherever they run.
BNB_QUANTIZATIONS = ("8bit", "4bit")
#: Weight-only quantizations: torch's CPU kernels (:mod:`glmdesk.engine.backends.transformers.weight_only`)
#: on the CPU, torchao's on CUDA (:mod:`glmdesk.engine.backends.transformers.torchao_quant`).
WEIGHT_ONLY_QUANTIZATIONS = ("int8-wo", "int4-wo")
#: What each quantization choice runs, per device type (``cpu``, ``cuda``): the one
#: table that decides it. ``bnb-*``: bitsandbytes through transformers'
#: ``BitsAndBytesConfig``; ``torch-*``: glmdesk's layers on torch's CPU kernels;
#: ``torchao-*``: torchao's ``quantize_`` (int4: tinygemm, groups of 64 on CUDA).
#: The CUDA rows of ``8bit`` / ``4bit`` are what "8-bit" / "4-bit" mean on a GPU
#: (issue 29: the fastest scheme within 2% of bf16's perplexity). They stay
#: bitsandbytes until ``benchmarks/gpu_decode.py --quant`` has measured torchao's
#: on a GPU; its last line names the scheme the figures pick for each row.
QUANTIZATION_SCHEMES = {
    ("8bit", "cpu"): "bnb-llm-int8",
    ("8bit", "cuda"): "bnb-llm-int8",
    ("4bit", "cpu"): "bnb-nf4",
    ("4bit", "cuda"): "bnb-nf4",
    ("int8-wo", "cpu"): "torch-int8",
    ("int8-wo", "cuda"): "torchao-int8",
    ("int4-wo", "cpu"): "torch-int4",
    ("int4-wo", "cuda"): "torchao-int4",
}


def quantization_scheme(quantization: str, device: str) -> str | None:
    """The scheme :data:`QUANTIZATION_SCHEMES` names for ``quantization`` on ``device``.

    Args:
        quantization: One of :data:`QUANTIZATIONS`.
        device: ``cpu``, ``cuda`` or ``cuda:N``.

    Returns:
        The scheme (``bnb-nf4``, ``torchao-int4``, ...), or ``None`` for ``none``.

    Raises:
        ValueError: for an unknown quantization or device type.
    """
    if quantization == "none":
        return None
    kind = device.split(":", 1)[0]
    try:
        return QUANTIZATION_SCHEMES[(quantization, kind)]
    except KeyError:
        raise ValueError(f"No quantization scheme for {quantization!r} on {device!r}.") from None


DEVICES = ("auto", "cpu", "cuda")
#: How a chat-template model is prompted (``LoadSettings.chat_format``): read from its
#: template, or GLM-4.5's XML-call format, GLM-Z1's reasoning format, the template only.
CHAT_FORMATS = ("auto", "glm45", "think", "plain")
CACHE_STRATEGIES = ("full", "sliding_window", "dynamic", "quantized")


@dataclass(frozen=True)
class CacheSettings:
    """KV-cache strategy for one answer.

    Attributes:
        strategy: ``full``, ``sliding_window`` (attention sinks + recent window,
            StreamingLLM, Xiao et al. 2023, arXiv:2309.17453), ``dynamic`` (full until
            the projected KV size exceeds the budget, then the window) or
            ``quantized`` (transformers' quantized KV cache, when its backend is there).
        window: Recent tokens kept by the window strategies, in tokens.
        sinks: Initial "attention sink" tokens kept, in tokens; ``0`` is a plain window.
        budget_mib: KV memory budget for ``dynamic``, in MiB; ``None`` reads free GPU
            memory minus a margin (or uses 1024 MiB on the CPU).
        prefill_chunk: Prompt tokens per prefill forward, in tokens (bounds activation
            memory for long prompts).
        kv_bits: Bits per element of the ``quantized`` cache on the llama.cpp engine:
            8 (``q8_0``) or 4 (``q4_0``); the transformers engine chooses its own.

    Raises:
        ValueError: for an unknown strategy or a size out of range.
    """

    strategy: str = "full"
    window: int = 4096
    sinks: int = 4
    budget_mib: float | None = None
    prefill_chunk: int = 2048
    kv_bits: int = 8

    def __post_init__(self) -> None:
        if self.kv_bits not in (4, 8):
            raise ValueError(f"The quantized KV cache has 8 or 4 bits, not {self.kv_bits!r}.")
        if self.strategy not in CACHE_STRATEGIES:
            raise ValueError(
                f"Unknown KV-cache strategy {self.strategy!r}; choose one of {', '.join(CACHE_STRATEGIES)}."
            )
        if self.window < 16:
            raise ValueError(f"The window must hold at least 16 tokens, not {self.window}.")
        if not 0 <= self.sinks < self.window:
            raise ValueError(
                f"Attention sinks must be 0 or more and fewer than the window, not {self.sinks}."
            )
        if self.budget_mib is not None and not self.budget_mib > 0:
            raise ValueError(f"The KV-cache budget must be above 0 MiB, not {self.budget_mib}.")
        if self.prefill_chunk < 1:
            raise ValueError(f"The prefill chunk must be at least 1 token, not {self.prefill_chunk}.")


@dataclass(frozen=True, init=False)
class LoadSettings:
    """What model to load and how: what every engine reads, and each engine's own options.

    Each shipped engine's options are a typed group (:mod:`glmdesk.core.engine_options`):
    ``settings.transformers``, ``settings.llamacpp``, ``settings.remote``. Their fields are
    also flat keywords and read-only attributes (``LoadSettings(n_ctx=4096).n_ctx``); a flat
    keyword given beside its group replaces that field of the group
    (``dataclasses.replace(settings, compile_decode=False)``). An engine a contributor adds
    beside these (a new backend package) keeps its group in ``added``: its flat keywords are
    accepted once its backend is registered, and read with :meth:`option` and
    :meth:`options_of`.

    Attributes:
        model: A local folder (Hugging Face layout or original ChatGLM), a ``.gguf``
            file, a hub id, or ``None`` for the embedded default (SmolLM2-135M-Instruct).
        device: ``auto`` (CUDA when available), ``cpu`` or ``cuda``.
        threads: CPU threads for the local engines' kernels; 0 is automatic (see each
            engine: transformers adapts the count to measured decode steps,
            :mod:`glmdesk.engine.decode.threads`; llama.cpp runs one per physical core).
        engine: The backend: ``auto``, a shipped engine's name or an added one's
            (:func:`~glmdesk.core.engine_options.engines`).
        transformers: The transformers engine's options.
        llamacpp: The llama.cpp engine's options.
        remote: The remote engine's options (a server's URL, model and API key).
        added: ``((engine, its options), ...)`` for every added engine, in registration
            order.
        chat_format: How a chat-template model is prompted: ``auto`` (read from its chat
            template), ``glm45``, ``think`` or ``plain``
            (:mod:`glmdesk.engine.families.template_format`).
        chat_template: A Jinja chat template file to prompt the model with instead of its
            own (its format is then read from this one), or ``None``.

    Raises:
        ValueError: for unknown choices, or options their engine refuses when named;
            ``TypeError`` for an unknown keyword or a group of the wrong type.
    """

    model: str | None = None
    device: str = "auto"
    threads: int = 0
    engine: str = "auto"
    transformers: TransformersOptions = TransformersOptions()
    llamacpp: LlamaCppOptions = LlamaCppOptions()
    remote: RemoteOptions = RemoteOptions()
    added: tuple[tuple[str, object], ...] = ()
    chat_format: str = "auto"
    chat_template: str | None = None

    def __init__(
        self,
        model: str | None = None,
        quantization: str | None = None,
        precision: str | None = None,
        device: str = "auto",
        trust_remote_code: bool | None = None,
        *,
        threads: int = 0,
        engine: str = "auto",
        transformers: TransformersOptions | None = None,
        llamacpp: LlamaCppOptions | None = None,
        remote: RemoteOptions | None = None,
        added: tuple[tuple[str, object], ...] = (),
        fused_decode: bool | None = None,
        compile_decode: bool | None = None,
        n_ctx: int | None = None,
        n_batch: int | None = None,
        use_mmap: bool | None = None,
        n_gpu_layers: int | None = None,
        experts_in_ram: bool | None = None,
        remote_url: str | None = None,
        remote_model: str | None = None,
        remote_api_key: str | None = None,
        chat_format: str = "auto",
        chat_template: str | None = None,
        **added_flat: object,
    ) -> None:
        flat = {
            "quantization": quantization,
            "precision": precision,
            "trust_remote_code": trust_remote_code,
            "fused_decode": fused_decode,
            "compile_decode": compile_decode,
            "n_ctx": n_ctx,
            "n_batch": n_batch,
            "use_mmap": use_mmap,
            "n_gpu_layers": n_gpu_layers,
            "experts_in_ram": experts_in_ram,
            "remote_url": remote_url,
            "remote_model": remote_model,
            "remote_api_key": remote_api_key,
        }
        given = {"transformers": transformers, "llamacpp": llamacpp, "remote": remote}
        for engine_name, entry in engine_options.BUILT_IN.items():
            group = given[engine_name]
            if group is None:
                group = entry.options_type()
            elif not isinstance(group, entry.options_type):
                raise TypeError(f"{engine_name} takes {entry.options_type.__name__}, not {group!r}.")
            changes = {field: flat[name] for name, field in entry.flat.items() if flat[name] is not None}
            object.__setattr__(self, engine_name, dataclasses.replace(group, **changes) if changes else group)
        object.__setattr__(self, "added", _added_groups(dict(added), added_flat))
        given_fields = (("model", model), ("device", device), ("threads", threads), ("engine", engine))
        given_fields += (("chat_format", chat_format), ("chat_template", chat_template))
        for name, value in given_fields:
            object.__setattr__(self, name, value)
        self._check()

    @property
    def quantization(self) -> str:
        """``transformers.quantization``."""
        return self.transformers.quantization

    @property
    def precision(self) -> str:
        """``transformers.precision``."""
        return self.transformers.precision

    @property
    def trust_remote_code(self) -> bool:
        """``transformers.trust_remote_code``."""
        return self.transformers.trust_remote_code

    @property
    def fused_decode(self) -> bool:
        """``transformers.fused_decode``."""
        return self.transformers.fused_decode

    @property
    def compile_decode(self) -> bool:
        """``transformers.compile_decode``."""
        return self.transformers.compile_decode

    @property
    def n_ctx(self) -> int:
        """``llamacpp.n_ctx``, in tokens."""
        return self.llamacpp.n_ctx

    @property
    def n_batch(self) -> int:
        """``llamacpp.n_batch``, in tokens."""
        return self.llamacpp.n_batch

    @property
    def use_mmap(self) -> bool:
        """``llamacpp.use_mmap``."""
        return self.llamacpp.use_mmap

    @property
    def n_gpu_layers(self) -> int:
        """``llamacpp.n_gpu_layers``."""
        return self.llamacpp.n_gpu_layers

    @property
    def experts_in_ram(self) -> bool:
        """``llamacpp.experts_in_ram``."""
        return self.llamacpp.experts_in_ram

    @property
    def remote_url(self) -> str | None:
        """``remote.url``."""
        return self.remote.url

    @property
    def remote_model(self) -> str | None:
        """``remote.model``."""
        return self.remote.model

    @property
    def remote_api_key(self) -> str | None:
        """``remote.api_key``."""
        return self.remote.api_key

    def options_of(self, engine: str) -> object:
        """The options group of ``engine`` (shipped or added; an added engine registered
        after these settings were made gives its defaults).

        Raises:
            KeyError: for an engine that is not known.
        """
        if engine in engine_options.BUILT_IN:
            return getattr(self, engine)
        group = dict(self.added).get(engine)
        if group is not None:
            return group
        entry = engine_options.options_of(engine)
        if entry is None:
            raise KeyError(f"No engine {engine!r}.")
        return entry.options_type()

    def option(self, name: str) -> object:
        """The value of the flat option ``name`` of any engine (``n_ctx``, an added engine's
        ``echo_repeat``), as the command line and Open model name it.

        Raises:
            KeyError: for a name no engine has.
        """
        owner = engine_options.flat_options().get(name)
        if owner is None:
            raise KeyError(f"LoadSettings has no engine option {name!r}.")
        return getattr(self.options_of(owner[0]), owner[1])

    def _check(self) -> None:
        known = engine_options.engines()
        if self.engine not in known:
            raise ValueError(f"Unknown engine {self.engine!r}; choose one of {', '.join(known)}.")
        if self.engine != "auto":
            require = getattr(self.options_of(self.engine), "require", None)
            if require is not None:
                require()
        if not isinstance(self.threads, int) or not 0 <= self.threads <= 1024:
            raise ValueError(
                f"CPU threads must be a whole number from 0 (automatic) to 1024, not {self.threads!r}."
            )
        if self.device not in DEVICES:
            raise ValueError(f"Unknown device {self.device!r}; choose one of {DEVICES}.")
        if self.chat_format not in CHAT_FORMATS:
            raise ValueError(
                f"Unknown chat format {self.chat_format!r}; choose one of {', '.join(CHAT_FORMATS)}."
            )


def _added_groups(groups: dict[str, object], flat: dict[str, object]) -> tuple[tuple[str, object], ...]:
    """The added engines' groups: each registered added engine's given group (or its
    defaults) with the flat keywords ``flat`` that name its fields applied.

    Raises:
        TypeError: for a keyword or group no registered engine has, or a group of the
            wrong type.
    """
    entries = engine_options.added_options()
    names = {name for entry in entries for name in entry.flat}
    unknown = sorted((set(flat) - names) | (set(groups) - {entry.engine for entry in entries}))
    if unknown:
        raise TypeError(
            f"LoadSettings got unknown keywords: {', '.join(unknown)} (an added engine's options are "
            "registered when glmdesk.engine.backends is imported)"
        )
    built = []
    for entry in entries:
        group = groups.get(entry.engine)
        if group is None:
            group = entry.options_type()
        elif not isinstance(group, entry.options_type):
            raise TypeError(f"{entry.engine} takes {entry.options_type.__name__}, not {group!r}.")
        changes = {field: flat[name] for name, field in entry.flat.items() if name in flat}
        built.append((entry.engine, dataclasses.replace(group, **changes) if changes else group))  # type: ignore[arg-type]
    return tuple(built)


class ParamsBox:
    """Holds the current :class:`SamplingParams`; swapped whole from any thread.

    The decode loop calls :meth:`get` before every token, so a value set mid-answer
    applies from the next token. Replacing a reference is atomic in CPython; the
    lock only orders concurrent writers.
    """

    def __init__(self, params: SamplingParams | None = None) -> None:
        self._params = params or SamplingParams()
        self._lock = threading.Lock()

    def get(self) -> SamplingParams:
        """Return the current parameters."""
        return self._params

    def set(self, params: SamplingParams) -> None:
        """Replace the parameters.

        Raises:
            TypeError: if ``params`` is not a :class:`SamplingParams`.
        """
        if not isinstance(params, SamplingParams):
            raise TypeError("ParamsBox.set takes a SamplingParams")
        with self._lock:
            self._params = params
