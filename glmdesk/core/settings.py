"""Frozen, validated settings that cross threads as whole values.

A widget never edits a field of a settings object that the engine reads: it
builds a new one (``dataclasses.replace``) and swaps the reference. Every
constructor validates in ``__post_init__`` and raises :class:`ValueError` with
a sentence a user can act on.
"""

from __future__ import annotations

import dataclasses
import threading
from dataclasses import dataclass, field
from urllib.parse import urlsplit

# SamplingParams lives beside its table (one row and one field per sampling control).
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
CACHE_STRATEGIES = ("full", "sliding_window", "dynamic", "quantized")
#: Backends: ``auto`` picks one from the model (see ``glmdesk.engine.backends``).
ENGINES = ("auto", "transformers", "llamacpp", "remote")
#: llama.cpp's full-cache context when ``LoadSettings.n_ctx`` is 0 and the model was
#: trained longer, in tokens (a 128K context's KV cache would take gigabytes).
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


@dataclass(frozen=True)
class TransformersOptions:
    """The transformers engine's own load options.

    Attributes:
        quantization: ``none``, ``8bit`` (bitsandbytes LLM.int8), ``4bit``
            (bitsandbytes NF4 with double quantization), ``int8-wo`` or ``int4-wo``
            (weight-only int8 / int4: in groups of 32 on torch's CPU kernels,
            :mod:`glmdesk.engine.weight_only`, on the CPU; torchao's int8 and int4
            tinygemm kernels on CUDA); see :data:`QUANTIZATION_SCHEMES`.
        precision: ``auto`` (bf16 on GPUs that support it, else fp16; fp32 on CPU),
            ``fp32``, ``bf16`` or ``fp16``.
        trust_remote_code: Run the Python code shipped in this model's folder. Off by
            default; the UI asks per folder.
        fused_decode: On the CPU, join each layer's Q/K/V and gate/up projections
            and decode with glmdesk's fused step (Llama and GLM architectures,
            :mod:`glmdesk.engine.decode.decode_step`); same logits, fewer operations per
            token. Off: transformers' forward for every token.
        compile_decode: Decode on the static path (:mod:`glmdesk.engine.decode.static_decode`):
            KV buffers in static buckets and the one-token step compiled while loading
            (``torch.compile``; CUDA graphs on a GPU; Llama and GLM models; every KV
            cache but the quantized one; needs a C++ compiler on the CPU; one to three
            minutes the first time). Needs ``fused_decode``.

    Raises:
        ValueError: for unknown choices, or the compiled step without the fused one.
    """

    quantization: str = "none"
    precision: str = "auto"
    trust_remote_code: bool = False
    fused_decode: bool = True
    compile_decode: bool = False

    def __post_init__(self) -> None:
        if self.compile_decode and not self.fused_decode:
            raise ValueError("The compiled decode step needs the fused decode step; turn that on too.")
        if self.quantization not in QUANTIZATIONS:
            raise ValueError(f"Unknown quantization {self.quantization!r}; choose one of {QUANTIZATIONS}.")
        if self.precision not in PRECISIONS:
            raise ValueError(f"Unknown precision {self.precision!r}; choose one of {PRECISIONS}.")


@dataclass(frozen=True)
class LlamaCppOptions:
    """The llama.cpp engine's own load options.

    Attributes:
        n_ctx: Context (KV cells) of the full cache, in tokens; 0 takes the model's
            training context, at most :data:`LLAMA_DEFAULT_N_CTX`.
        n_batch: Prompt tokens per prefill call, in tokens (larger is faster for long
            prompts and needs a larger compute buffer).
        use_mmap: Map the GGUF file instead of reading it into memory (the weights then
            count as file cache, shared between processes).
        n_gpu_layers: On a CUDA build: layers offloaded to the GPU; -1 is all, 0 none
            (the CPU device always uses 0).
        experts_in_ram: For a mixture-of-experts GGUF: keep the routed experts' tensors
            in system RAM while the rest goes to the GPU (llama.cpp's ``--cpu-moe``).

    Raises:
        ValueError: for a size out of range.
    """

    n_ctx: int = 0
    n_batch: int = 512
    use_mmap: bool = True
    n_gpu_layers: int = -1
    experts_in_ram: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.n_ctx, int) or not (self.n_ctx == 0 or 256 <= self.n_ctx <= 1 << 21):
            raise ValueError(
                f"The context must be 0 (the model's) or 256 to 2097152 tokens, not {self.n_ctx!r}."
            )
        if not isinstance(self.n_batch, int) or not 1 <= self.n_batch <= 8192:
            raise ValueError(f"The prefill batch must be 1 to 8192 tokens, not {self.n_batch!r}.")
        if not isinstance(self.n_gpu_layers, int) or not -1 <= self.n_gpu_layers <= 10000:
            raise ValueError(
                f"GPU layers must be -1 (all), 0 (none) or a layer count, not {self.n_gpu_layers!r}."
            )


@dataclass(frozen=True)
class RemoteOptions:
    """The remote engine's own options: which server, which of its models.

    Attributes:
        url: The base URL of an OpenAI-compatible server (vLLM, SGLang, llama.cpp's
            server, ``glmdesk serve``), e.g. ``http://gpu-box:8000/v1``; ``http`` or
            ``https``, no user name or password in it.
        model: The server's model id; ``None`` takes the first one it lists.
        api_key: The server's API key (sent as a bearer token). Left out of ``repr``;
            never written to QSettings or history (the window keeps it with ``keyring``).

    Raises:
        ValueError: for a malformed URL or an empty model name.
    """

    url: str | None = None
    model: str | None = None
    api_key: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.url is not None:
            _check_remote_url(self.url)
        if self.model is not None and not self.model.strip():
            raise ValueError(
                "The remote model name is empty; leave it unset to use the server's first model."
            )


class _Alias:
    """A flat name of :class:`LoadSettings` (``n_ctx``) that reads its group's field
    (``llamacpp.n_ctx``; ``name`` when it differs from the flat one): the names callers
    used before the options were grouped."""

    def __init__(self, group: str, name: str = "") -> None:
        self.group, self.name = group, name

    def __set_name__(self, owner, flat: str) -> None:
        self.name = self.name or flat

    def __get__(self, settings, owner=None):
        return self if settings is None else getattr(getattr(settings, self.group), self.name)


_GROUPS = {"transformers": TransformersOptions, "llamacpp": LlamaCppOptions, "remote": RemoteOptions}


@dataclass(frozen=True, init=False)
class LoadSettings:
    """What model to load and how: what every engine reads, and each engine's own options
    in its group.

    Every group's field is also a flat keyword and attribute, as before the groups
    (:data:`FLAT_OPTIONS`: ``LoadSettings(n_ctx=4096).n_ctx`` is
    ``LoadSettings(llamacpp=LlamaCppOptions(n_ctx=4096)).llamacpp.n_ctx``); a flat
    keyword given beside its group replaces that field of the group
    (``dataclasses.replace(settings, compile_decode=False)``).

    Attributes:
        model: A local folder (Hugging Face layout or original ChatGLM), a ``.gguf``
            file, a hub id, or ``None`` for the embedded default (SmolLM2-135M-Instruct).
        device: ``auto`` (CUDA when available), ``cpu`` or ``cuda``.
        threads: CPU threads for the local engines' kernels; 0 is automatic (see each
            engine: transformers adapts the count to measured decode steps,
            :mod:`glmdesk.engine.decode.threads`; llama.cpp runs one per physical core).
        engine: The backend: ``auto``, ``transformers``, ``llamacpp`` or ``remote``
            (``auto`` with a server's URL is ``remote``).
        transformers: :class:`TransformersOptions`.
        llamacpp: :class:`LlamaCppOptions`.
        remote: :class:`RemoteOptions`.

    Raises:
        ValueError: for unknown choices; ``TypeError`` for an unknown keyword.
    """

    model: str | None = None
    device: str = "auto"
    threads: int = 0
    engine: str = "auto"
    transformers: TransformersOptions = TransformersOptions()
    llamacpp: LlamaCppOptions = LlamaCppOptions()
    remote: RemoteOptions = RemoteOptions()

    quantization = _Alias("transformers")
    precision = _Alias("transformers")
    trust_remote_code = _Alias("transformers")
    fused_decode = _Alias("transformers")
    compile_decode = _Alias("transformers")
    n_ctx = _Alias("llamacpp")
    n_batch = _Alias("llamacpp")
    use_mmap = _Alias("llamacpp")
    n_gpu_layers = _Alias("llamacpp")
    experts_in_ram = _Alias("llamacpp")
    remote_url = _Alias("remote", "url")
    remote_model = _Alias("remote", "model")
    remote_api_key = _Alias("remote", "api_key")

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
        **flat,
    ) -> None:
        unknown = sorted(set(flat) - set(FLAT_OPTIONS))
        if unknown:
            raise TypeError(f"LoadSettings got unknown keywords: {', '.join(unknown)}")
        given = {"quantization": quantization, "precision": precision, "trust_remote_code": trust_remote_code}
        flat |= {name: value for name, value in given.items() if value is not None}
        groups = {"transformers": transformers, "llamacpp": llamacpp, "remote": remote}
        for group, kind in _GROUPS.items():
            changes = {FLAT_OPTIONS[k][1]: v for k, v in flat.items() if FLAT_OPTIONS[k][0] == group}
            base = groups[group] if groups[group] is not None else kind()
            groups[group] = dataclasses.replace(base, **changes) if changes else base
        for name, value in (("model", model), ("device", device), ("threads", threads), ("engine", engine)):
            object.__setattr__(self, name, value)
        for name, value in groups.items():
            object.__setattr__(self, name, value)
        self._check()

    def _check(self) -> None:
        if self.engine not in ENGINES:
            raise ValueError(f"Unknown engine {self.engine!r}; choose one of {', '.join(ENGINES)}.")
        if self.engine == "remote" and not self.remote.url:
            raise ValueError("The remote engine needs the server's URL, e.g. http://gpu-box:8000/v1.")
        if not isinstance(self.threads, int) or not 0 <= self.threads <= 1024:
            raise ValueError(
                f"CPU threads must be a whole number from 0 (automatic) to 1024, not {self.threads!r}."
            )
        if self.device not in DEVICES:
            raise ValueError(f"Unknown device {self.device!r}; choose one of {DEVICES}.")

    @property
    def is_remote(self) -> bool:
        """True when a remote server answers (``engine`` ``remote``, or ``auto`` with a URL)."""
        return self.engine == "remote" or (self.engine == "auto" and bool(self.remote.url))


#: ``{flat keyword: (group, field)}``: what :class:`LoadSettings` still takes flat.
FLAT_OPTIONS = {
    flat: (alias.group, alias.name) for flat, alias in vars(LoadSettings).items() if isinstance(alias, _Alias)
}


def _check_remote_url(url: str) -> None:
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (raises ValueError for a port out of range)
    except ValueError as exc:
        raise ValueError(f"The server URL {url!r} is not a valid URL: {exc}.") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(
            f"The server URL {url!r} must start with http:// or https:// and name a host, "
            "e.g. http://gpu-box:8000/v1."
        )
    if parts.username or parts.password:
        raise ValueError("Put the API key in its own field, not in the server URL.")


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
