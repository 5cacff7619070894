"""Load stage 1: a model source becomes a ready Hugging Face folder.

Every kind of source prepares its folder here, in :func:`prepare_source`: the embedded
model and ``.gguf`` files are converted once into the user cache
(:mod:`glmdesk.engine.files.sources`), an original ChatGLM2/3 or GLM-4 folder is converted
once onto transformers' ``GlmForCausalLM`` (:mod:`glmdesk.engine.chatglm`), a
Hugging Face folder is checked as it is, and a hub id is checked for reachability.
Nothing here places weights on a device.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from glmdesk.core import paths
from glmdesk.core.errors import GlmdeskError, corrupt_weights
from glmdesk.core.settings import LoadSettings
from glmdesk.engine import chatglm
from glmdesk.engine.files import sources
from glmdesk.engine.files.file_checks import check_no_lfs_pointers, read_safetensors_header
from glmdesk.engine.formats.prompt import PromptFormat

Report = Callable[..., None]


@dataclass(frozen=True)
class ReadySource:
    """A model ready for placement.

    Attributes:
        source: The resolved source (kind, location, name).
        family: Detected family (``chatglm3``, ``generic-hf``, ``gguf``, ``hub``...).
        folder: The Hugging Face folder (or hub id) to load from.
        tokenizer: glmdesk's own tokenizer for converted ChatGLM folders, else ``None``.
        prompt_format: glmdesk's own prompt format for ChatGLM, else ``None`` (the
            tokenizer's chat template is used).
        context_length: The context window the checkpoint declares, in tokens (0: read
            it from the model config).
    """

    source: sources.ModelSource
    family: str
    folder: Path | str
    tokenizer: object = None
    prompt_format: PromptFormat | None = None
    context_length: int = 0


def prepare_source(
    settings: LoadSettings, report: Report, cancel: threading.Event | None = None
) -> ReadySource:
    """Resolve ``settings.model`` and prepare its folder (converting once when needed).

    Args:
        settings: What to load.
        report: ``report(stage, done, total)``; raises ``load_cancelled`` when cancelled.
        cancel: Cancels a conversion between tensors.

    Raises:
        GlmdeskError: ``model_not_found``, ``not_a_model``, ``corrupt_weights``,
            ``offline``, ``unsupported_checkpoint`` or ``load_cancelled``.
    """
    source = sources.resolve_source(settings.model)
    if source.kind in ("embedded", "gguf"):
        folder = sources.converted_gguf_folder(source.location, lambda s, d, t: report("converting", d, t))
        return ReadySource(source, "gguf", folder)
    if source.kind == "folder":
        return _prepare_folder(source, Path(source.location), settings, report, cancel)
    _check_hub_reachable(source.location)
    return ReadySource(source, "hub", source.location)


def _needs_conversion(family: str) -> bool:
    """Whether a folder of ``family`` is converted into the cache before loading (ChatGLM)."""
    return chatglm.is_original_checkpoint(family) or family in ("glm4-hf", "chatglm-v1")


def ready_folder(settings: LoadSettings) -> Path | None:
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


def _check_folder(folder: Path) -> None:
    """Refuse a folder that is not a model, or whose weight files are truncated.

    Raises:
        GlmdeskError: ``model_not_found``, ``not_a_model``, ``lfs_pointer`` or
            ``corrupt_weights`` naming the file.
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
    # A folder cloned without git-lfs: name the pointer before any reader sees it.
    check_no_lfs_pointers(sorted(f for f in folder.iterdir() if f.is_file() and not f.name.startswith(".")))
    for file in folder.glob("*.safetensors"):
        _check_safetensors(file)


def _check_safetensors(file: Path) -> None:
    """Check a safetensors header and that the file holds every byte it declares
    (:func:`~glmdesk.engine.files.file_checks.read_safetensors_header`)."""
    try:
        read_safetensors_header(file)
    except (ValueError, OSError) as exc:
        raise corrupt_weights(
            file, f"The weight file {file.name} in {file.parent} is damaged or incomplete ({exc}).", exc
        ) from exc


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


def _prepare_folder(
    source: sources.ModelSource, folder: Path, settings: LoadSettings, report, cancel: threading.Event | None
) -> ReadySource:
    """Detect a folder's family; convert original ChatGLM checkpoints once."""
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
        return ReadySource(
            source,
            family,
            prepared.hf_folder,
            prepared.tokenizer,
            prepared.prompt_format,
            prepared.context_length,
        )
    _check_folder(folder)
    return ReadySource(source, family, folder)
