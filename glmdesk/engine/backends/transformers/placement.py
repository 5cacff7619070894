"""Load stage 2: placement: device, precision, bitsandbytes quantization, the tokenizer.

:func:`place` turns a :class:`~glmdesk.engine.files.model_source.ReadySource` into a
transformers model in eval mode on its device, with its tokenizer. Device: CUDA when
available, else CPU. Precision ``auto``: bf16 on GPUs that support it, else fp16;
fp32 on the CPU (fp16 asked for on the CPU runs in fp32 with a note: CPU matmuls in
half precision are missing or very slow in torch). Quantization, where
:data:`~glmdesk.core.settings.QUANTIZATION_SCHEMES` names bitsandbytes: 8-bit
(LLM.int8, Dettmers et al. 2022) or 4-bit NF4 with double quantization (QLoRA,
Dettmers et al. 2023); weight-only schemes are applied after placement
(:mod:`glmdesk.engine.backends.transformers.acceleration`). The tokenizer may have been built before the window appeared
(:func:`prebuild_tokenizer`).
"""

from __future__ import annotations

import threading
from pathlib import Path

import torch

from glmdesk.core.errors import ErrorInfo, GlmdeskError
from glmdesk.core.settings import LoadSettings, quantization_scheme
from glmdesk.engine.backends.transformers import torchao_quant
from glmdesk.engine.decode.out_of_memory import give_back_memory, given_back
from glmdesk.engine.files.model_source import ReadySource, ready_folder

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def _bnb_reason() -> str | None:
    try:
        import bitsandbytes  # noqa: F401
    except Exception as exc:  # ImportError, or a broken native library
        return f"bitsandbytes cannot be used here ({exc.__class__.__name__}: {exc})."
    return None


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


def check_quantization(settings: LoadSettings, device: str) -> list[ErrorInfo]:
    """Refuse a quantization that cannot run on ``device``; return notes for the user.

    What runs is :func:`~glmdesk.core.settings.quantization_scheme`'s choice.

    Raises:
        GlmdeskError: ``quantization_unavailable`` (torchao missing for a torchao
            scheme, bitsandbytes missing or broken).
    """
    scheme = quantization_scheme(settings.quantization, device)
    if scheme is None or scheme.startswith("torch-"):
        return []
    if scheme.startswith("torchao-"):
        reason = torchao_quant.torchao_missing_reason()
        if reason:
            raise GlmdeskError(
                "quantization_unavailable",
                f"{settings.quantization} quantization is unavailable: {reason}",
                quantization=settings.quantization,
                reason="torchao_missing",
            )
        return []
    reason = _bnb_reason()
    if reason:
        raise GlmdeskError(
            "quantization_unavailable",
            f"{settings.quantization} quantization is unavailable: {reason}",
            quantization=settings.quantization,
            reason=reason,
        )
    if device != "cpu":
        return []
    return [
        ErrorInfo(
            "bnb_on_cpu",
            f"{settings.quantization} runs on bitsandbytes' CPU backend here, which is slow.",
            {"quantization": settings.quantization},
        )
    ]


def _quantization_config(scheme: str, dtype: torch.dtype, offload: bool = False):
    """transformers' ``BitsAndBytesConfig`` for ``bnb-llm-int8`` or ``bnb-nf4``; ``offload``:
    modules mapped to the CPU stay in fp32 there (``llm_int8_enable_fp32_cpu_offload``,
    which both 8-bit and 4-bit read)."""
    from transformers import BitsAndBytesConfig

    if scheme == "bnb-llm-int8":
        return BitsAndBytesConfig(load_in_8bit=True, llm_int8_enable_fp32_cpu_offload=offload)
    return BitsAndBytesConfig(
        load_in_4bit=True,
        bnb_4bit_quant_type="nf4",
        bnb_4bit_use_double_quant=True,
        bnb_4bit_compute_dtype=dtype,
        llm_int8_enable_fp32_cpu_offload=offload,
    )


def moe_offload_plan(folder: Path, settings: LoadSettings, gpu_free: int, dtype: torch.dtype, gpu: int = 0):
    """For a mixture-of-experts folder whose forecast (:mod:`glmdesk.engine.forecast`)
    does not fit ``gpu_free`` bytes: a :class:`~glmdesk.engine.backends.transformers.moe_placement.DevicePlan`
    keeping routed experts in RAM first; ``None`` when it fits, for a dense model, or
    when the folder cannot be sized (``from_pretrained`` then says what is wrong).

    The weights' GPU budget is ``gpu_free`` less the forecast's KV cache (the model's
    context, at most :data:`~glmdesk.core.settings.LLAMA_DEFAULT_N_CTX` tokens) and
    overhead.
    """
    from glmdesk.core.settings import LLAMA_DEFAULT_N_CTX
    from glmdesk.engine.backends.transformers import moe_placement
    from glmdesk.engine.forecast import forecast
    from glmdesk.engine.forecast_shape import shape_from_folder

    try:
        shape = shape_from_folder(folder)
    except (OSError, ValueError, KeyError):
        return None
    if not shape.is_moe:
        return None
    context = min(shape.context_length or LLAMA_DEFAULT_N_CTX, LLAMA_DEFAULT_N_CTX)
    precision = {torch.bfloat16: "bf16", torch.float16: "fp16"}.get(dtype, "fp32")
    plan = forecast(
        shape,
        engine="transformers",
        quantization=settings.quantization,
        precision=precision,
        on_gpu=True,
        context=context,
    )
    if plan.gpu <= gpu_free:
        return None
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(folder, trust_remote_code=settings.trust_remote_code)
    model = moe_placement.meta_model(config, _auto_model_class(folder, settings.trust_remote_code))
    element = torch.empty((), dtype=dtype).element_size()
    scale = plan.weights / max(1, shape.params * element)
    return moe_placement.expert_first_plan(model, gpu_free - plan.kv - plan.overhead, dtype, scale, gpu)


def _gpu_free(device: str) -> int:
    """Free bytes on a CUDA device now (``torch.cuda.mem_get_info``)."""
    index = int(device.split(":", 1)[1]) if ":" in device else 0
    return int(torch.cuda.mem_get_info(index)[0])


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
    folder = ready_folder(settings)
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


def place(ready: ReadySource, settings: LoadSettings, device: str, dtype: torch.dtype) -> tuple:
    """Load the weights onto ``device`` in ``dtype`` (or bitsandbytes' quantization); a
    mixture-of-experts folder too large for the GPU's free memory gets the device map
    of :func:`moe_offload_plan` (experts in RAM first).

    Returns:
        ``(model in eval mode, tokenizer, DevicePlan or None)``.

    Raises:
        GlmdeskError: ``out_of_memory``, ``offline``, ``remote_code_required`` or
            ``load_failed``, each with a sentence.
    """
    from transformers import AutoTokenizer

    kwargs: dict = {"dtype": dtype, "trust_remote_code": settings.trust_remote_code}
    scheme = quantization_scheme(settings.quantization, device) or ""
    bnb = scheme.startswith("bnb-")
    folder, tokenizer = ready.folder, ready.tokenizer
    plan = None
    if device.startswith("cuda") and isinstance(folder, Path):
        plan = moe_offload_plan(folder, settings, _gpu_free(device), dtype, torch.device(device).index or 0)
    if bnb:
        kwargs["quantization_config"] = _quantization_config(scheme, dtype, plan is not None)
        kwargs["device_map"] = {"": device}
    if plan is not None:
        kwargs["device_map"] = plan.device_map
    try:
        if tokenizer is None:
            tokenizer = _take_prebuilt(folder, settings.trust_remote_code)
        if tokenizer is None:
            tokenizer = AutoTokenizer.from_pretrained(folder, trust_remote_code=settings.trust_remote_code)
    except Exception as exc:
        raise _placement_error(exc, ready, device) from exc
    model = _weights(ready, settings, kwargs, device, move=not bnb and plan is None)
    model.eval()
    return model, tokenizer, plan


def _weights(ready: ReadySource, settings: LoadSettings, kwargs: dict, device: str, move: bool):
    """The model's weights from ``from_pretrained(**kwargs)``, moved to ``device`` when
    ``move``. Out of memory: the idle static KV slabs (of a model still in use) are given
    back and, when there were any, it tries once more.

    Raises:
        GlmdeskError: as :func:`_placement_error` words it (``out_of_memory`` says what
            was given back).
    """
    freed = 0
    for attempt in range(2):
        try:
            model = _auto_model_class(ready.folder, settings.trust_remote_code).from_pretrained(
                ready.folder, **kwargs
            )
            # transformers wraps PreTrainedModel.to in a decorator its annotations type as unbound.
            return model.to(device) if move else model  # pyright: ignore[reportArgumentType]
        except torch.OutOfMemoryError as exc:
            model = None  # a copy on the CPU before a failed move goes before the next try
            freed += give_back_memory()
            if attempt or not freed:
                raise _placement_error(exc, ready, device, freed) from exc
        except Exception as exc:
            raise _placement_error(exc, ready, device) from exc
    raise AssertionError("unreachable")


#: ``model_type`` of GLM models that transformers builds only as image-text-to-text,
#: answered here as text: GLM-5.3-Flash (``Glm5NextForConditionalGeneration``; its
#: vision tower is loaded and unused).
TEXT_ANSWERED_IMAGE_TEXT_TYPES = frozenset({"glm5_next"})


def _auto_model_class(folder: Path | str, trust_remote_code: bool):
    """``AutoModelForImageTextToText`` for a GLM vision folder (GLM-4.1V, 4.5V, 4.6V) and
    for GLM-5.3-Flash, else ``AutoModelForCausalLM``."""
    from transformers import AutoModelForCausalLM, AutoModelForImageTextToText

    from glmdesk.engine.backends.transformers.vision_processor import is_vision_config

    config_file = Path(folder) / "config.json" if isinstance(folder, Path) else None
    if config_file is not None and config_file.is_file():
        import json

        try:
            raw = json.loads(config_file.read_text(encoding="utf-8"))
            vision = is_vision_config(raw) or raw.get("model_type") in TEXT_ANSWERED_IMAGE_TEXT_TYPES
        except (OSError, ValueError):
            vision = False  # from_pretrained words a broken config
    elif isinstance(folder, str):  # a hub id: its config, as transformers caches it
        from transformers import AutoConfig

        config = AutoConfig.from_pretrained(folder, trust_remote_code=trust_remote_code)
        vision = is_vision_config(config) or config.model_type in TEXT_ANSWERED_IMAGE_TEXT_TYPES
    else:
        vision = False
    return AutoModelForImageTextToText if vision else AutoModelForCausalLM


def _placement_error(exc: Exception, ready: ReadySource, device: str, freed: int = 0) -> GlmdeskError:
    """The sentence for an exception from ``from_pretrained`` (``freed``: bytes of idle
    KV slabs given back before it, said in an ``out_of_memory`` sentence)."""
    source = ready.source
    if isinstance(exc, torch.OutOfMemoryError):
        sentence, params = given_back(freed)
        return GlmdeskError(
            "out_of_memory",
            f"There is not enough memory on {device} to load this model; try 4-bit quantization "
            f"or a smaller model.{sentence}",
            device=device,
            stage="load",
            **params,
        )
    if isinstance(exc, OSError) and source.kind == "hub":
        return GlmdeskError(
            "offline",
            f"The model {source.location} could not be downloaded (no connection, or no such model on the hub).",
            model=source.location,
        )
    text = str(exc)
    if isinstance(exc, ValueError) and "trust_remote_code" in text:
        return GlmdeskError(
            "remote_code_required",
            f"{source.location} needs its own Python code to run; allow it for this folder "
            "only if you trust where it came from.",
            path=str(source.location),
        )
    # transformers raises many types for broken folders
    return GlmdeskError("load_failed", f"The model could not be loaded: {text}", detail=text)


def offload_note(plan) -> ErrorInfo:
    """The load note for a :class:`~glmdesk.engine.backends.transformers.moe_placement.DevicePlan` with
    weights in RAM (kind ``experts_offloaded``, params ``mib``)."""
    mib = round(plan.cpu_bytes / 2**20)
    return ErrorInfo(
        "experts_offloaded",
        f"The model does not fit the GPU's free memory: {mib} MiB of its experts are kept in system "
        "RAM (accelerate's device map), which is slower.",
        {"mib": mib},
    )
