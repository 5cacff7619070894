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

# SamplingParams lives beside its table (one row and one field per sampling control).
from glmdesk.core import engine_options
from glmdesk.core.sampling_fields import SamplingParams

QUANTIZATIONS = ("none", "8bit", "4bit", "int8-wo", "int4-wo")
#: Quantizations done by bitsandbytes wherever they run.
BNB_QUANTIZATIONS = ("8bit", "4bit")
#: Weight-only quantizations: torch's CPU kernels (:mod:`glmdesk.engine.weight_only`)
#: on the CPU, torchao's on CUDA (:mod:`glmdesk.engine.torchao_quant`).
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


PRECISIONS = ("auto", "fp32", "bf16", "fp16")
DEVICES = ("auto", "cpu", "cuda")
#: How a chat-template model is prompted (``LoadSettings.chat_format``): read from its
#: template, or GLM-4.5's XML-call format, GLM-Z1's reasoning format, the template only.
CHAT_FORMATS = ("auto", "glm45", "think", "plain")
CACHE_STRATEGIES = ("full", "sliding_window", "dynamic", "quantized")
#: llama.cpp's full-cache context when its ``n_ctx`` is 0 and the model was trained
#: longer, in tokens (a 128K context's KV cache would take gigabytes); the memory
#: forecast assumes the same context for transformers.
LLAMA_DEFAULT_N_CTX = 8192


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

    Each engine's options are a frozen dataclass of its own, registered by its backend
    (:mod:`glmdesk.core.engine_options`; ``glmdesk.engine.backends`` registers every
    backend it finds) and read as the attribute named as the engine:
    ``settings.llamacpp.n_ctx``. Every field of those is also a flat keyword and
    attribute (``LoadSettings(n_ctx=4096).n_ctx``); a flat keyword given beside its
    group replaces that field of the group (``dataclasses.replace(settings,
    compile_decode=False)``). An engine not given takes its defaults.

    Attributes:
        model: A local folder (Hugging Face layout or original ChatGLM), a ``.gguf``
            file, a hub id, or ``None`` for the embedded default (SmolLM2-135M-Instruct).
        device: ``auto`` (CUDA when available), ``cpu`` or ``cuda``.
        threads: CPU threads for the local engines' kernels; 0 is automatic (see each
            engine: transformers adapts the count to measured decode steps,
            :mod:`glmdesk.engine.decode.threads`; llama.cpp runs one per physical core).
        engine: The backend: ``auto`` or a registered engine's name
            (:func:`~glmdesk.core.engine_options.engines`).
        options: ``((engine, its options), ...)`` for every registered engine, in
            registration order (read them as ``settings.NAME``).
        chat_format: How a chat-template model is prompted: ``auto`` (read from its chat
            template), ``glm45``, ``think`` or ``plain``
            (:mod:`glmdesk.engine.families.template_format`).
        chat_template: A Jinja chat template file to prompt the model with instead of its
            own (its format is then read from this one), or ``None``.

    Raises:
        ValueError: for unknown choices, or options their engine refuses when named;
            ``TypeError`` for an unknown keyword (an engine's options are known once
            ``glmdesk.engine.backends`` is imported).
    """

    model: str | None = None
    device: str = "auto"
    threads: int = 0
    engine: str = "auto"
    options: tuple[tuple[str, object], ...] = ()
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
        options: tuple[tuple[str, object], ...] = (),
        chat_format: str = "auto",
        chat_template: str | None = None,
        **named,
    ) -> None:
        given = {"quantization": quantization, "precision": precision, "trust_remote_code": trust_remote_code}
        named |= {name: value for name, value in given.items() if value is not None}
        flat = engine_options.flat_options()
        groups = dict(options)
        unknown = sorted(set(named) - set(flat) - {e.engine for e in engine_options.engine_options()})
        if unknown:
            raise TypeError(
                f"LoadSettings got unknown keywords: {', '.join(unknown)} (engines' options are "
                "registered when glmdesk.engine.backends is imported)"
            )
        built = []
        for entry in engine_options.engine_options():
            base = named.get(entry.engine, groups.get(entry.engine))
            base = entry.options_type() if base is None else base
            if not isinstance(base, entry.options_type):
                raise TypeError(f"{entry.engine} takes {entry.options_type.__name__}, not {base!r}.")
            changes = {flat[k][1]: v for k, v in named.items() if k in flat and flat[k][0] == entry.engine}
            built.append((entry.engine, dataclasses.replace(base, **changes) if changes else base))
        given_fields = (("model", model), ("device", device), ("threads", threads), ("engine", engine))
        given_fields += (("chat_format", chat_format), ("chat_template", chat_template))
        for name, value in given_fields:
            object.__setattr__(self, name, value)
        object.__setattr__(self, "options", tuple(built))
        self._check()

    def __getattr__(self, name: str):
        # Only for names the instance lacks: an engine's group, or one of its flat fields.
        if name.startswith("_") or name == "options":
            raise AttributeError(name)
        engine, field_name = engine_options.flat_options().get(name, (name, ""))
        groups = dict(self.options)
        group = groups.get(engine)
        if group is None:  # an engine registered after these settings were made: its defaults
            entry = engine_options.options_of(engine)
            if entry is None:
                raise AttributeError(f"LoadSettings has no field or engine option {name!r}")
            group = entry.options_type()
        return getattr(group, field_name) if field_name else group

    def _check(self) -> None:
        known = engine_options.engines()
        if self.engine not in known:
            raise ValueError(f"Unknown engine {self.engine!r}; choose one of {', '.join(known)}.")
        chosen = dict(self.options).get(self.engine)
        if chosen is not None and hasattr(chosen, "require"):
            chosen.require()
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
