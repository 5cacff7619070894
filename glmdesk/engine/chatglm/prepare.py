"""Turn a ChatGLM-family path into what the loader needs: HF folder, tokenizer, format.

Original THUDM folders are converted once into ``cache_root/"converted"/<key>``;
the key hashes the source folder's resolved path and its files' names, sizes and
modification times (and :data:`~glmdesk.engine.chatglm.convert.CONVERTER_VERSION`),
so editing or replacing a file converts again and an unchanged folder is reused.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from glmdesk.core.errors import GlmdeskError
from glmdesk.engine import families
from glmdesk.engine.chatglm.convert import CONVERTER_VERSION, MARKER_FILE, Progress, convert_checkpoint
from glmdesk.engine.chatglm.detect import (
    ORIGINAL_FAMILIES,
    SENTENCEPIECE_FAMILIES,
    converted_family,
    detect_family,
    read_config,
)
from glmdesk.engine.chatglm.source_checks import check_folder_files
from glmdesk.engine.formats.chatglm_tokenizer import ChatGLMTokenizer
from glmdesk.engine.formats.glm4_tokenizer import load_glm4_tokenizer
from glmdesk.engine.formats.prompt import PromptFormat


@dataclass(frozen=True)
class PreparedCheckpoint:
    """A ChatGLM-family checkpoint ready for ``GlmForCausalLM.from_pretrained``.

    Attributes:
        hf_folder: Folder in Hugging Face layout (model_type ``glm``).
        family: Detected family (see :mod:`glmdesk.engine.chatglm.detect`).
        tokenizer: Object with ``encode(text)``, ``decode(ids,
            skip_special_tokens=True)``, ``convert_ids_to_tokens`` and
            ``eos_token_id`` (a transformers tokenizer for ``glm4-hf``).
        prompt_format: Builds prompt ids and filters the shown reply.
        stop_ids: Ids that end a reply.
        context_length: The model's context window, in tokens.
    """

    hf_folder: Path
    family: str
    tokenizer: Any
    prompt_format: PromptFormat
    stop_ids: frozenset[int]
    context_length: int


def cache_key(src: Path) -> str:
    """Folder name for the converted copy of ``src``: ``<name>-<16 hex digits>``.

    The digest covers the converter version, the resolved path, and the name,
    size and mtime (ns) of every non-hidden file directly in ``src``.
    """
    src = src.resolve()
    h = hashlib.sha256(f"v{CONVERTER_VERSION}\0{src}\0".encode())
    for f in sorted(src.iterdir()):
        if f.name.startswith(".") or not f.is_file():
            continue
        st = f.stat()
        h.update(f"{f.name}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", src.name)[:48] or "model"
    return f"{slug}-{h.hexdigest()[:16]}"


def converted_folder(src: str | Path, cache_root: Path) -> Path:
    """Where :func:`prepare_checkpoint` puts (or finds) the conversion of ``src``."""
    return Path(cache_root) / "converted" / cache_key(Path(src).expanduser())


def _ensure_converted(
    src: Path, cache_root: Path, progress: Progress | None, cancel: threading.Event | None
) -> Path:
    dst = converted_folder(src, cache_root)
    if (dst / MARKER_FILE).is_file():
        return dst
    if dst.exists():  # left by something else than a finished conversion
        shutil.rmtree(dst, ignore_errors=True)
    try:
        return convert_checkpoint(src, dst, progress=progress, cancel=cancel)
    except GlmdeskError as exc:
        # Another process finished the same conversion first: use it.
        if exc.kind == "invalid_setting" and (dst / MARKER_FILE).is_file():
            return dst
        raise
    except OSError:
        if (dst / MARKER_FILE).is_file():
            return dst
        raise


def _generation_eos(folder: Path) -> set[int]:
    try:
        eos = json.loads((folder / "generation_config.json").read_text(encoding="utf-8")).get("eos_token_id")
    except (OSError, ValueError, AttributeError):
        return set()
    if isinstance(eos, int):
        return {eos}
    return {int(e) for e in eos or [] if isinstance(e, int)}


def prepare_checkpoint(
    path: str | Path,
    cache_root: Path,
    progress: Progress | None = None,
    cancel: threading.Event | None = None,
) -> PreparedCheckpoint:
    """Prepare a ChatGLM2/3, GLM-4 or GLM-4-HF folder for loading.

    An original folder is converted once into the cache; a folder written by
    ``glmdesk convert`` is used as it is, with its source family's tokenizer and format.

    Args:
        path: The model folder.
        cache_root: The user cache directory; conversions go to
            ``cache_root/"converted"``.
        progress: ``progress(done_bytes, total_bytes)`` during a conversion.
        cancel: Stops a running conversion (``load_cancelled``).

    Returns:
        A :class:`PreparedCheckpoint`.

    Raises:
        GlmdeskError: everything :func:`detect_family` and
            :func:`~glmdesk.engine.chatglm.convert.convert_checkpoint` raise;
            ``unsupported_checkpoint`` for ChatGLM-6B v1, for a GLM-4 folder whose
            tokenizer needs its own code, and for families that are not ChatGLM
            (``generic-hf``, ``gguf``: load those as generic models).
    """
    src = Path(path).expanduser()
    family = detect_family(src)
    # A folder `glmdesk convert` wrote is the converted copy already: it loads as it is,
    # with its source family's tokenizer (copied beside the weights) and format.
    converted = converted_family(src) is not None
    if family in ORIGINAL_FAMILIES:
        check_folder_files(src)  # a git-lfs pointer is named before any reader sees it
    spec = families.get_family(family)
    if family in ORIGINAL_FAMILIES:
        config = read_config(src)
        # Read the tokenizer before converting: a bad tokenizer fails in a second.
        if family in SENTENCEPIECE_FAMILIES:
            tokenizer = ChatGLMTokenizer(src / "tokenizer.model")
        else:
            tokenizer = load_glm4_tokenizer(src)
        fmt: PromptFormat = spec.prompt_format(tokenizer, sorted(_generation_eos(src)))
        hf = src if converted else _ensure_converted(src, Path(cache_root), progress, cancel)
        return PreparedCheckpoint(hf, family, tokenizer, fmt, fmt.stop_ids, _seq_length(config))
    if family == "glm4-hf":
        return _prepare_glm4_hf(src, spec)
    if spec.unsupported:
        reason = spec.unsupported
    else:
        reason = f"it is not a ChatGLM-family checkpoint (detected {family}); load it as a generic model."
    raise GlmdeskError(
        "unsupported_checkpoint", f"glmdesk cannot prepare {src}: {reason}", path=str(src), reason=reason
    )


def _prepare_glm4_hf(src: Path, spec) -> PreparedCheckpoint:
    """A GLM-4-9B-chat-hf folder as it is: transformers' tokenizer, the family's format,
    the config's ``max_position_embeddings`` (131072 when absent) as context."""
    from transformers import AutoTokenizer

    config = read_config(src)
    tokenizer = AutoTokenizer.from_pretrained(str(src), trust_remote_code=False)
    fmt = spec.prompt_format(tokenizer, sorted(_generation_eos(src)))
    context = int(config.get("max_position_embeddings") or 131072)
    return PreparedCheckpoint(src, "glm4-hf", tokenizer, fmt, fmt.stop_ids, context)


def _seq_length(config: dict[str, Any]) -> int:
    """The context window: THUDM's ``seq_length``, or a converted config's
    ``max_position_embeddings`` (which the conversion copies from it)."""
    return int(config.get("seq_length") or config.get("max_position_embeddings") or 2048)
