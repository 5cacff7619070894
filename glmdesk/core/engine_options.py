"""Each engine's own load options: plain frozen dataclasses that
:class:`~glmdesk.core.settings.LoadSettings` holds one group of each, and the engines a
contributor adds beside the three glmdesk ships.

:class:`TransformersOptions`, :class:`LlamaCppOptions` and :class:`RemoteOptions` are
``LoadSettings.transformers``, ``.llamacpp`` and ``.remote``, typed fields a reader and a
type checker see. Their fields are also flat names of ``LoadSettings`` (``n_ctx`` is
``settings.llamacpp.n_ctx``); the remote engine's are prefixed (``remote_url``), see
:data:`BUILT_IN`. The backend packages under ``glmdesk.engine.backends`` name these types as
their ``options_type``; core never imports the engine.

A backend package added beside them (a new folder in ``engine/backends/``) brings its own
options dataclass, which the registry registers here (:func:`register_engine`) when
``glmdesk.engine.backends`` is imported; ``LoadSettings`` keeps such a group in its ``added``
field, read with :meth:`~glmdesk.core.settings.LoadSettings.options_of` and
:meth:`~glmdesk.core.settings.LoadSettings.option`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

QUANTIZATIONS = ("none", "8bit", "4bit", "int8-wo", "int4-wo")
PRECISIONS = ("auto", "fp32", "bf16", "fp16")
#: llama.cpp's full-cache context when its ``n_ctx`` is 0 and the model was trained
#: longer, in tokens (a 128K context's KV cache would take gigabytes); the memory
#: forecast assumes the same context for transformers.
LLAMA_DEFAULT_N_CTX = 8192


@dataclass(frozen=True)
class TransformersOptions:
    """The transformers engine's own load options.

    Attributes:
        quantization: ``none``, ``8bit`` (bitsandbytes LLM.int8), ``4bit``
            (bitsandbytes NF4 with double quantization), ``int8-wo`` or ``int4-wo``
            (weight-only int8 / int4: in groups of 32 on torch's CPU kernels,
            :mod:`glmdesk.engine.backends.transformers.weight_only`, on the CPU; torchao's int8 and int4
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

    def require(self) -> None:
        """Raise when these options cannot run the remote engine once it is named.

        Raises:
            ValueError: without the server's URL.
        """
        if not self.url:
            raise ValueError("The remote engine needs the server's URL, e.g. http://gpu-box:8000/v1.")


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


@dataclass(frozen=True)
class EngineOptions:
    """One engine's options group in :class:`~glmdesk.core.settings.LoadSettings`.

    Attributes:
        engine: The engine's name (``LoadSettings.engine``; for a shipped engine also the
            group's field name).
        options_type: Its frozen options dataclass; ``options_type()`` is its default.
        flat: ``{flat name: field}`` for every field (the field's own name unless the
            engine renamed it).
    """

    engine: str
    options_type: type
    flat: Mapping[str, str]


def _entry(engine: str, options_type: type, renamed: Mapping[str, str] | None = None) -> EngineOptions:
    renamed = dict(renamed or {})
    flat = {renamed.get(f.name, f.name): f.name for f in dataclasses.fields(options_type)}
    return EngineOptions(engine, options_type, flat)


#: The engines glmdesk ships, each with its options group (a field of ``LoadSettings``).
BUILT_IN: dict[str, EngineOptions] = {
    "transformers": _entry("transformers", TransformersOptions),
    "llamacpp": _entry("llamacpp", LlamaCppOptions),
    "remote": _entry(
        "remote", RemoteOptions, {"url": "remote_url", "model": "remote_model", "api_key": "remote_api_key"}
    ),
}

_ADDED: dict[str, EngineOptions] = {}


def register_engine(engine: str, options_type: type, renamed: Mapping[str, str] | None = None) -> None:
    """Register ``engine`` and its options dataclass (idempotent for the same type; a
    shipped engine is known already and only checked).

    Args:
        engine: The engine's name: a Python identifier, not ``auto`` and not a field of
            ``LoadSettings``.
        options_type: A frozen dataclass whose fields all have defaults. It may define
            ``require(self) -> None``, called when a ``LoadSettings`` names this engine
            (raise ``ValueError`` with a sentence when the options cannot run it: the
            remote engine without a URL).
        renamed: ``{field: flat name}`` for fields whose flat name differs.

    Raises:
        ValueError: for a bad name, a type that is not a dataclass, another type under
            the same name, or a flat name another engine already has.
    """
    if not engine.isidentifier() or engine in _RESERVED:
        raise ValueError(f"{engine!r} cannot name an engine.")
    if not dataclasses.is_dataclass(options_type):
        raise ValueError(f"The {engine} engine's options must be a dataclass, not {options_type!r}.")
    known = BUILT_IN.get(engine) or _ADDED.get(engine)
    if known is not None:
        if known.options_type is options_type:
            return
        raise ValueError(f"The {engine} engine is registered already, with {known.options_type.__name__}.")
    entry = _entry(engine, options_type, renamed)
    taken = flat_options()
    for name in entry.flat:
        if name in taken or name in _RESERVED:
            raise ValueError(f"The option name {name!r} of the {engine} engine is taken.")
    _ADDED[engine] = entry


def unregister_engine(engine: str) -> None:
    """Forget an added ``engine`` (tests that register one of their own); no error when
    unknown, and the shipped engines stay."""
    _ADDED.pop(engine, None)


def engines() -> tuple[str, ...]:
    """Every valid ``LoadSettings.engine``: ``auto``, the shipped engines, then the added
    ones in the order they were registered."""
    return ("auto", *BUILT_IN, *_ADDED)


def engine_options() -> tuple[EngineOptions, ...]:
    """Every engine's entry: the shipped ones, then the added ones."""
    return (*BUILT_IN.values(), *_ADDED.values())


def added_options() -> tuple[EngineOptions, ...]:
    """The entries of the engines added beside the shipped ones, in registration order."""
    return tuple(_ADDED.values())


def options_of(engine: str) -> EngineOptions | None:
    """The entry of ``engine``, or ``None`` when it is not known."""
    return BUILT_IN.get(engine) or _ADDED.get(engine)


def flat_options() -> dict[str, tuple[str, str]]:
    """``{flat name: (engine, field)}`` for every engine's options."""
    return {name: (e.engine, f) for e in engine_options() for name, f in e.flat.items()}


#: Names an engine or one of its options cannot take (``LoadSettings``' own fields).
_RESERVED = frozenset({"auto", "model", "device", "threads", "engine", "added", "options"})
