"""Load a model for chat: resolve the source, choose device, precision and quantization.

Device: CUDA when available, else CPU. Precision ``auto``: bf16 on GPUs that
support it, else fp16; fp32 on the CPU. fp16 asked for on the CPU runs in fp32
with a note (CPU matmuls in half precision are missing or very slow in torch).
Quantization: bitsandbytes 8-bit (LLM.int8, Dettmers et al. 2022) or 4-bit NF4
with double quantization (QLoRA, Dettmers et al. 2023); a GGUF file is quantized
through its converted safetensors copy. On the CPU, weight-only int8 / int4
(:mod:`glmdesk.engine.weight_only`) replace the linear layers after loading.
Threads: ``LoadSettings.threads`` is applied on the loading thread, which is the
thread that decodes (OpenMP counts threads per calling thread).
"""

from __future__ import annotations

import importlib.util
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch

from glmdesk.core import paths
from glmdesk.core.errors import ErrorInfo, GlmdeskError, corrupt_weights
from glmdesk.core.settings import BNB_QUANTIZATIONS, CacheSettings, LoadSettings
from glmdesk.engine import chatglm, decode_step, sources, weight_only
from glmdesk.engine.cache import kv_budget_bytes, kv_bytes_per_token
from glmdesk.engine.info import LoadProgress, ModelInfo
from glmdesk.engine.kv_pool import KVPool
from glmdesk.engine.prompt import ChatTemplateFormat, PromptFormat
from glmdesk.engine.threads import ThreadTuner


@dataclass
class LoadedModel:
    """A model ready for :func:`glmdesk.engine.generate.stream_chat`.

    Attributes:
        model: The transformers causal LM, in eval mode.
        tokenizer: Its tokenizer (transformers or :class:`ChatGLMTokenizer`).
        prompt_format: How conversations become ids.
        info: What was loaded.
        kv_pool: The conversations' kept KV caches (cleared by :meth:`close`).
        tuner: Adapts the CPU thread count to measured decode steps (``None`` when
            the threads setting fixes the count, or on a GPU).
    """

    model: object
    tokenizer: object
    prompt_format: PromptFormat
    info: ModelInfo
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    kv_pool: KVPool = field(init=False, repr=False)
    tuner: ThreadTuner | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.kv_pool = KVPool(self._pool_budget)

    def _pool_budget(self, settings: CacheSettings, held: int) -> int:
        """The kept caches' budget: the dynamic strategy's (free GPU memory read now
        does not count what the pool holds already), in bytes."""
        device = torch.device(self.device)
        budget = kv_budget_bytes(settings, device)
        if settings.budget_mib is None and device.type == "cuda":
            budget += held
        return budget

    @property
    def context_length(self) -> int:
        """The context window, in tokens."""
        return self.info.context_length

    @property
    def device(self) -> str:
        """``cpu`` or ``cuda:N``."""
        return self.info.device

    def decode(self, ids) -> str:
        """Decode ids to text, skipping special tokens."""
        return self.tokenizer.decode(list(ids), skip_special_tokens=True)

    def open_source(self, cache: CacheSettings):
        """A fresh KV-cache strategy (:mod:`glmdesk.engine.cache`) for one answer.

        Raises:
            GlmdeskError: ``invalid_setting`` when the strategy cannot run here.
        """
        from glmdesk.engine.cache import make_cache_strategy

        strategy = make_cache_strategy(self.model, cache)
        strategy.tuner = self.tuner
        return strategy

    def logits_processors(self) -> tuple:
        """Processors applied after the sampling chain on every token (none yet)."""
        return ()

    def close(self) -> None:
        """Release the kept KV caches and the weights (and cached CUDA blocks)."""
        self.kv_pool.clear()
        self.model = None
        if torch.cuda.is_available():
            torch.cuda.empty_cache()


#: torch's own thread count before glmdesk changes it (one per physical core).
DEFAULT_THREADS = torch.get_num_threads()

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def _bnb_reason() -> str | None:
    try:
        import bitsandbytes  # noqa: F401
    except Exception as exc:  # ImportError, or a broken native library
        return f"bitsandbytes cannot be used here ({exc.__class__.__name__}: {exc})."
    return None


def _bnb_missing_reason() -> str | None:
    """Whether bitsandbytes is installed, without importing it.

    Importing bitsandbytes takes ~2 s here (it imports torch._dynamo and scans
    entry points); the window asks for the options at start, on the thread that
    is about to load the model. A package that is installed but broken is found
    when it is chosen: :func:`load_model` imports it and says why it failed.
    """
    if importlib.util.find_spec("bitsandbytes") is None:
        return "bitsandbytes cannot be used here (it is not installed)."
    return None


def option_availability() -> dict[str, str | None]:
    """Which load options work on this machine (quickly: nothing heavy is imported).

    Returns:
        ``{"quantization:8bit": None, "precision:fp16": "reason", ...}``: ``None``
        when the option works, else the sentence saying why not.
    """
    cuda = torch.cuda.is_available()
    bnb = _bnb_missing_reason()
    out: dict[str, str | None] = {
        "device:cuda": None if cuda else "No CUDA GPU was found; glmdesk runs on the CPU.",
        "quantization:8bit": bnb,
        "quantization:4bit": bnb,
        "precision:fp16": None if cuda else "fp16 needs a GPU; on the CPU glmdesk uses fp32.",
        "precision:bf16": None,
    }
    for scheme, bits in weight_only.SCHEMES.items():
        out[f"quantization:{scheme}"] = (
            None if weight_only.kernels_available(bits) else f"This torch build has no {bits}-bit CPU kernel."
        )
    if cuda and not torch.cuda.is_bf16_supported():
        out["precision:bf16"] = "This GPU has no bf16 support; use fp16."
    from glmdesk.engine.compiled_step import compiler_missing_reason

    out["decode:compile"] = compiler_missing_reason()
    return out


def choose_device_and_dtype(settings: LoadSettings) -> tuple[str, str, list[ErrorInfo]]:
    """Pick ``(device, dtype name, notes)`` for ``settings``.

    Raises:
        GlmdeskError: ``precision_unavailable`` when CUDA is asked for and absent.
    """
    notes: list[ErrorInfo] = []
    cuda = torch.cuda.is_available()
    if settings.device == "cuda" and not cuda:
        raise GlmdeskError(
            "precision_unavailable",
            "A GPU was requested but no CUDA device is available; choose the CPU.",
            precision="cuda",
            reason="no CUDA device",
        )
    device = "cuda:0" if (settings.device in ("auto", "cuda") and cuda) else "cpu"
    precision = settings.precision
    if precision == "auto":
        if device == "cpu":
            precision = "fp32"
        else:
            precision = "bf16" if torch.cuda.is_bf16_supported() else "fp16"
    if device == "cpu" and precision == "fp16":
        notes.append(ErrorInfo("fp16_on_cpu", "fp16 is not supported for CPU inference; using fp32 instead."))
        precision = "fp32"
    return device, precision, notes


def _check_folder(folder: Path) -> None:
    """Refuse a folder that is not a model, or whose weight files are truncated.

    Raises:
        GlmdeskError: ``model_not_found``, ``not_a_model`` or ``corrupt_weights``
            naming the file.
    """
    if not folder.is_dir():
        raise GlmdeskError("model_not_found", f"The model folder {folder} does not exist.", path=str(folder))
    if not (folder / "config.json").is_file():
        raise GlmdeskError(
            "not_a_model", f"{folder} is not a model folder (it has no config.json).", path=str(folder)
        )
    weights = sorted(folder.glob("*.safetensors")) + sorted(folder.glob("*.bin"))
    if not weights:
        raise GlmdeskError(
            "not_a_model", f"{folder} has no weight files (.safetensors or .bin).", path=str(folder)
        )
    for file in folder.glob("*.safetensors"):
        _check_safetensors(file)


def _check_safetensors(file: Path) -> None:
    """Check a safetensors header and that the file holds every byte it declares."""
    size = file.stat().st_size
    try:
        with open(file, "rb") as fh:
            header_len = int.from_bytes(fh.read(8), "little")
            if header_len <= 0 or 8 + header_len > size:
                raise ValueError("header is cut off")
            header = json.loads(fh.read(header_len))
        end = max((v["data_offsets"][1] for k, v in header.items() if k != "__metadata__"), default=0)
        if 8 + header_len + end > size:
            raise ValueError(f"{size} bytes on disk, {8 + header_len + end} expected")
    except (ValueError, KeyError, TypeError, OSError) as exc:
        raise corrupt_weights(
            file, f"The weight file {file.name} in {file.parent} is damaged or incomplete ({exc}).", exc
        ) from exc


def _stop_ids(model, tokenizer) -> frozenset[int]:
    """Every id that ends a reply: generation config and config eos lists, the
    tokenizer's eos, and common end-of-turn tokens present in the vocabulary."""
    ids: set[int] = set()
    for source in (getattr(model, "generation_config", None), model.config):
        eos = getattr(source, "eos_token_id", None)
        if isinstance(eos, int):
            ids.add(eos)
        elif eos:
            ids.update(int(i) for i in eos)
    if getattr(tokenizer, "eos_token_id", None) is not None:
        ids.add(int(tokenizer.eos_token_id))
    # One lookup per name: get_vocab() builds the whole vocabulary as a dict in Rust,
    # holding the GIL (~30 ms for 49K tokens) while the window waits.
    backend = getattr(tokenizer, "backend_tokenizer", None)
    lookup = getattr(backend, "token_to_id", None)
    if lookup is None:
        lookup = (tokenizer.get_vocab() if hasattr(tokenizer, "get_vocab") else {}).get
    for name in ("<|im_end|>", "<|eot_id|>", "<|end|>", "<|endoftext|>", "<|user|>", "<|observation|>"):
        token_id = lookup(name)
        if token_id is not None:
            ids.add(int(token_id))
    return frozenset(ids)


#: Seconds one look-up of a hub id may take before the hub counts as unreachable.
HUB_PROBE_TIMEOUT_S = 10.0


def _check_hub_reachable(repo_id: str) -> None:
    """Refuse a hub id at once when it cannot be downloaded and is not cached.

    With the hub switched off (``HF_HUB_OFFLINE``) nothing is tried. Otherwise one
    metadata request with a :data:`HUB_PROBE_TIMEOUT_S` timeout comes first: without
    it, a machine with no connection waits through transformers' download retries
    (about 50 s measured) before the same answer.

    Raises:
        GlmdeskError: ``offline`` (no connection, or offline mode) or
            ``model_not_found`` (the hub has no such model, or it is private).
    """
    from huggingface_hub import HfApi, constants, try_to_load_from_cache
    from huggingface_hub.errors import RepositoryNotFoundError

    if isinstance(try_to_load_from_cache(repo_id, "config.json"), str):
        return
    if constants.HF_HUB_OFFLINE:
        raise GlmdeskError(
            "offline",
            f"The model {repo_id} is not on this computer and downloading is switched off "
            "(offline mode). Open a local folder or .gguf file instead.",
            model=repo_id,
        )
    try:
        HfApi().model_info(repo_id, timeout=HUB_PROBE_TIMEOUT_S)
    except RepositoryNotFoundError as exc:
        raise GlmdeskError("model_not_found", f"The model {repo_id} was not found.", path=repo_id) from exc
    except Exception as exc:  # httpx connection errors and timeouts, OSError
        raise GlmdeskError(
            "offline",
            f"The model {repo_id} could not be downloaded: there is no connection ({exc}).",
            model=repo_id,
        ) from exc


def _quantization_config(quantization: str, dtype: torch.dtype):
    from transformers import BitsAndBytesConfig

    if quantization == "8bit":
        return BitsAndBytesConfig(load_in_8bit=True)
    return BitsAndBytesConfig(
        load_in_4bit=True,
        bnb_4bit_quant_type="nf4",
        bnb_4bit_use_double_quant=True,
        bnb_4bit_compute_dtype=dtype,
    )


_prebuilt: dict[tuple[str, bool], tuple[tuple, object]] = {}
_prebuilt_lock = threading.Lock()
_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")


def _tokenizer_stamp(folder: Path) -> tuple:
    """``(name, size, mtime_ns)`` of the files a tokenizer is built from (missing: -1)."""
    stamp = []
    for name in _TOKENIZER_FILES:
        try:
            st = (folder / name).stat()
            stamp.append((name, st.st_size, st.st_mtime_ns))
        except OSError:
            stamp.append((name, -1, -1))
    return tuple(stamp)


def _needs_conversion(family: str) -> bool:
    """Whether a folder of ``family`` is converted into the cache before loading (ChatGLM)."""
    return chatglm.is_original_checkpoint(family) or family in ("glm4-hf", "chatglm-v1")


def _ready_folder(settings: LoadSettings) -> Path | None:
    """The Hugging Face folder ``settings`` loads from, when it is on disk already.

    ``None`` for hub ids, a GGUF file not converted yet, original ChatGLM folders
    (their tokenizer is glmdesk's own) and anything unreadable: nothing is
    converted or downloaded here.
    """
    try:
        source = sources.resolve_source(settings.model)
        if source.kind in ("embedded", "gguf"):
            return sources.converted_gguf_folder_if_ready(source.location)
        if source.kind == "folder":
            folder = Path(source.location)
            if (folder / "tokenizer.json").is_file() and (folder / "config.json").is_file():
                family = chatglm.detect_family(folder)
                if not _needs_conversion(family):
                    return folder
    except (GlmdeskError, OSError, ValueError):
        pass
    return None


def prebuild_tokenizer(settings: LoadSettings):
    """Build the tokenizer of the model ``settings`` names now, for :func:`load_model` to take.

    Building a fast tokenizer is one native call that holds the GIL (~100 ms for
    the embedded model's 49K-token BPE); on the worker thread it stalls the
    window's event loop. The app calls this before its window appears, for the
    model it is about to load; :func:`load_model` takes the tokenizer when its
    files have not changed since (size and modification time), else builds anew.

    Args:
        settings: The load about to happen.

    Returns:
        The tokenizer built, or ``None`` when the model is not ready on disk (not
        converted yet, a hub id, an original ChatGLM folder) or its tokenizer
        failed to build (:func:`load_model` then reports why).
    """
    folder = _ready_folder(settings)
    if folder is None:
        return None
    stamp = _tokenizer_stamp(folder)
    try:
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(folder, trust_remote_code=settings.trust_remote_code)
    except Exception:  # a broken folder: the real load says why
        return None
    with _prebuilt_lock:
        _prebuilt[(str(folder), settings.trust_remote_code)] = (stamp, tokenizer)
    return tokenizer


def _take_prebuilt(folder: Path | str, trust_remote_code: bool):
    """The tokenizer :func:`prebuild_tokenizer` made for ``folder``, if still current (once)."""
    with _prebuilt_lock:
        entry = _prebuilt.pop((str(folder), trust_remote_code), None)
    if entry is None or not isinstance(folder, Path) or entry[0] != _tokenizer_stamp(folder):
        return None
    return entry[1]


def load_model(
    settings: LoadSettings,
    progress: Callable[[LoadProgress], None] | None = None,
    cancel: threading.Event | None = None,
) -> LoadedModel:
    """Load a model for chat.

    Args:
        settings: What to load and how.
        progress: Called with each :class:`LoadProgress` (from this thread).
        cancel: Set it to abandon loading between stages.

    Returns:
        The loaded model with its tokenizer, prompt format and :class:`ModelInfo`.

    Raises:
        GlmdeskError: ``model_not_found``, ``not_a_model``, ``corrupt_weights``,
            ``offline``, ``unsupported_checkpoint``, ``remote_code_required``,
            ``quantization_unavailable``, ``precision_unavailable``,
            ``out_of_memory``, ``load_cancelled`` or ``load_failed``, each with a sentence.
    """

    def report(stage: str, done: int = 0, total: int = 0) -> None:
        if cancel is not None and cancel.is_set():
            raise GlmdeskError("load_cancelled", "Loading was cancelled.")
        if progress is not None:
            progress(LoadProgress(stage, done, total))

    report("resolving")
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # glmdesk reports its own stages
    source = sources.resolve_source(settings.model)
    device, precision, notes = choose_device_and_dtype(settings)
    dtype = DTYPES[precision]
    if settings.quantization in weight_only.SCHEMES:
        if device != "cpu":
            raise GlmdeskError(
                "quantization_unavailable",
                f"{settings.quantization} quantization is unavailable: it runs on the CPU only; "
                "on a GPU choose 8-bit or 4-bit NF4.",
                quantization=settings.quantization,
                reason="cpu_only",
            )
    elif settings.quantization != "none":
        reason = _bnb_reason()
        if reason:
            raise GlmdeskError(
                "quantization_unavailable",
                f"{settings.quantization} quantization is unavailable: {reason}",
                quantization=settings.quantization,
                reason=reason,
            )
        if device == "cpu":
            notes.append(
                ErrorInfo(
                    "bnb_on_cpu",
                    f"{settings.quantization} runs on bitsandbytes' CPU backend here, which is slow.",
                    {"quantization": settings.quantization},
                )
            )

    family = "gguf" if source.kind in ("embedded", "gguf") else "generic-hf"
    tokenizer = None
    prompt_format: PromptFormat | None = None
    context_length = 0
    folder: Path | str
    if source.kind in ("embedded", "gguf"):
        folder = sources.converted_gguf_folder(source.location, lambda s, d, t: report("converting", d, t))
    elif source.kind == "folder":
        folder = Path(source.location)
        family, folder, tokenizer, prompt_format, context_length = _prepare_folder(
            folder, settings, report, cancel
        )
    else:
        folder = source.location
        family = "hub"
        _check_hub_reachable(source.location)

    report("loading")
    from transformers import AutoModelForCausalLM, AutoTokenizer

    kwargs: dict = {"dtype": dtype, "trust_remote_code": settings.trust_remote_code}
    if settings.quantization in BNB_QUANTIZATIONS:
        kwargs["quantization_config"] = _quantization_config(settings.quantization, dtype)
        kwargs["device_map"] = {"": device}
    try:
        if tokenizer is None:
            tokenizer = _take_prebuilt(folder, settings.trust_remote_code)
        if tokenizer is None:
            tokenizer = AutoTokenizer.from_pretrained(folder, trust_remote_code=settings.trust_remote_code)
        model = AutoModelForCausalLM.from_pretrained(folder, **kwargs)
    except torch.OutOfMemoryError as exc:
        raise GlmdeskError(
            "out_of_memory",
            f"There is not enough memory on {device} to load this model; try 4-bit quantization "
            "or a smaller model.",
            device=device,
            stage="load",
        ) from exc
    except OSError as exc:
        if source.kind == "hub":
            raise GlmdeskError(
                "offline",
                f"The model {source.location} could not be downloaded (no connection, or no such "
                "model on the hub).",
                model=source.location,
            ) from exc
        raise GlmdeskError("load_failed", f"The model could not be loaded: {exc}", detail=str(exc)) from exc
    except ValueError as exc:
        text = str(exc)
        if "trust_remote_code" in text:
            raise GlmdeskError(
                "remote_code_required",
                f"{source.location} needs its own Python code to run; allow it for this folder "
                "only if you trust where it came from.",
                path=str(source.location),
            ) from exc
        raise GlmdeskError("load_failed", f"The model could not be loaded: {text}", detail=text) from exc
    except Exception as exc:  # transformers raises many types for broken folders
        raise GlmdeskError("load_failed", f"The model could not be loaded: {exc}", detail=str(exc)) from exc
    if settings.quantization not in BNB_QUANTIZATIONS:
        model.to(device)
    model.eval()
    fused = settings.fused_decode and decode_step.unsupported_reason(model) is None
    if fused:  # before quantization, which then quantizes the fused layers
        decode_step.fuse_projections(model)
    if settings.quantization in weight_only.SCHEMES:
        report("quantizing")
        weight_only.quantize_linears(model, settings.quantization)
    torch.set_num_threads(settings.threads or DEFAULT_THREADS)  # before compiling: Inductor reads it
    compiled = False
    if fused:
        decode_step.attach(model)
    if settings.compile_decode:
        compiled = _compile_decode(model, report, notes)
    report("preparing")

    if prompt_format is None:
        stop = _stop_ids(model, tokenizer)
        if getattr(tokenizer, "chat_template", None):
            prompt_format = ChatTemplateFormat(tokenizer, stop)
        else:
            raise GlmdeskError(
                "not_a_model",
                f"{source.name} has no chat template, so it cannot be used for chat.",
                path=str(source.location),
            )
    if not context_length:
        config = model.config
        context_length = int(
            getattr(config, "max_position_embeddings", 0) or getattr(config, "seq_length", 0) or 2048
        )
    info = ModelInfo(
        name=source.name,
        family=family,
        source_kind=source.kind,
        location=str(source.location),
        device=device,
        dtype=precision,
        quantization=settings.quantization,
        footprint_mib=model.get_memory_footprint() / 2**20,
        context_length=context_length,
        kv_bytes_per_token=kv_bytes_per_token(model.config, dtype),
        prompt_format=prompt_format.name,
        threads=torch.get_num_threads(),
        fused_decode=fused,
        compiled_decode=compiled,
        notes=tuple(notes),
    )
    report("ready", 1, 1)
    # threads 0: adapt the count to measured decode steps (a busy core slows a fixed count).
    tuner = ThreadTuner(max_threads=DEFAULT_THREADS) if settings.threads == 0 and device == "cpu" else None
    return LoadedModel(model, tokenizer, prompt_format, info, tuner=tuner)


def _compile_decode(model, report, notes: list[ErrorInfo]) -> bool:
    """Compile the fused decode step now; on failure keep the eager one and add a note."""
    from glmdesk.engine import compiled_step

    reason = compiled_step.compiler_missing_reason() or compiled_step.compile_unsupported_reason(model)
    if reason is None:
        report("compiling")
        try:
            compiled_step.compile_decode_step(model, paths.cache_dir() / "inductor")
            return True
        except Exception as exc:  # no C++ compiler, an operation Inductor cannot compile
            reason = f"{exc.__class__.__name__}: {exc}".splitlines()[0][:300]
    notes.append(
        ErrorInfo(
            "compile_unavailable",
            f"The decode step was not compiled ({reason}); tokens are decoded without it.",
            {"reason": reason},
        )
    )
    return False


def _prepare_folder(
    folder: Path, settings: LoadSettings, report, cancel: threading.Event | None = None
) -> tuple:
    """Detect a folder's family; convert original ChatGLM checkpoints once.

    Returns:
        ``(family, hf_folder, tokenizer or None, prompt format or None, context length or 0)``.
    """
    if not (folder / "config.json").is_file():
        _check_folder(folder)  # raises with the reason
    family = chatglm.detect_family(folder)
    if _needs_conversion(family) and not settings.trust_remote_code:
        prepared = chatglm.prepare_checkpoint(
            folder,
            paths.cache_dir(),
            progress=lambda done, total: report("converting", done, total),
            cancel=cancel,
        )
        _check_folder(prepared.hf_folder)
        return family, prepared.hf_folder, prepared.tokenizer, prepared.prompt_format, prepared.context_length
    _check_folder(folder)
    return family, folder, None, None, 0
