"""Checks on model files before any library reads them.

A repository cloned without git-lfs holds, in place of each large file, a small
text "pointer" (``version https://git-lfs.github.com/spec/v1``, ``oid sha256:...``,
``size N``). Libraries then fail with their own advice (torch suggests
``weights_only=False``; sentencepiece may even read it); glmdesk names the
pointer instead.

Source of the pointer format: git-lfs ``docs/spec.md`` ("The pointer file").

The safetensors header is parsed here too (:func:`read_safetensors_header`), once
for every reader: a truncated or damaged file is named before a library maps it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from glmdesk.core.errors import GlmdeskError

#: The first line of every git-lfs pointer file.
LFS_SPEC_LINE = b"version https://git-lfs.github.com/spec/"
#: Pointer files are at most this long, in bytes (git-lfs spec: under 1024).
LFS_POINTER_MAX_BYTES = 1024


def is_lfs_pointer(file: Path) -> bool:
    """True when ``file`` is a git-lfs pointer rather than the content it names."""
    try:
        if not file.is_file() or file.stat().st_size > LFS_POINTER_MAX_BYTES:
            return False
        with file.open("rb") as fh:
            return fh.read(len(LFS_SPEC_LINE)) == LFS_SPEC_LINE
    except OSError:
        return False


def lfs_pointer_error(file: Path) -> GlmdeskError:
    """The ``lfs_pointer`` error for ``file``: it names the file and ``git lfs pull``."""
    return GlmdeskError(
        "lfs_pointer",
        f"{file.name} in {file.parent} is a Git LFS pointer, not the file itself (the folder was "
        f"cloned without git-lfs): run `git lfs pull` in {file.parent}, or download the file again.",
        path=str(file.parent),
        file=file.name,
    )


def check_no_lfs_pointers(files: list[Path]) -> None:
    """Refuse the first of ``files`` that is a git-lfs pointer.

    Raises:
        GlmdeskError: ``lfs_pointer`` naming the file and ``git lfs pull``.
    """
    for file in files:
        if is_lfs_pointer(file):
            raise lfs_pointer_error(file)


class SafetensorsHeaderError(ValueError):
    """A safetensors file whose header is cut off, is not JSON, or declares more bytes
    than the file holds; the message says which (e.g. ``header is cut off``)."""


@dataclass(frozen=True)
class SafetensorsHeader:
    """The parsed header of one ``.safetensors`` file.

    Attributes:
        path: The file.
        header_bytes: Length of the JSON header ``N``, in bytes.
        tensors: Tensor name -> ``{"dtype": "F16", "shape": [rows, cols],
            "data_offsets": [begin, end]}`` (offsets in bytes from the start of
            the data, which follows the header).
        metadata: The optional ``__metadata__`` string map (``{}`` when absent).
    """

    path: Path
    header_bytes: int
    tensors: dict[str, dict]
    metadata: dict[str, str]

    @property
    def data_bytes(self) -> int:
        """Bytes of tensor data the header declares (the largest end offset)."""
        return max((entry["data_offsets"][1] for entry in self.tensors.values()), default=0)


def read_safetensors_header(file: Path) -> SafetensorsHeader:
    """Read a safetensors header and check that the file holds every byte it declares.

    The one place glmdesk parses this format (the loader's folder check and the
    ChatGLM converter's shard reader both call it). Format (huggingface/safetensors,
    README "Format"): 8 bytes, an unsigned little-endian 64-bit integer ``N``; then
    ``N`` bytes of UTF-8 JSON mapping each tensor name to ``dtype``, ``shape`` and
    ``data_offsets`` ``[begin, end]`` relative to the data, plus an optional
    ``__metadata__`` string map; then the raw tensor data. A complete file is at
    least ``8 + N + max(end)`` bytes long.

    Args:
        file: The ``.safetensors`` file.

    Returns:
        The parsed :class:`SafetensorsHeader`.

    Raises:
        OSError: The file cannot be opened or read.
        SafetensorsHeaderError: ``header is cut off``; ``S bytes on disk, E expected``
            (the data is truncated); the JSON parser's words; or the missing or
            malformed field (e.g. ``'data_offsets'``).
    """
    size = file.stat().st_size
    with open(file, "rb") as fh:
        header_len = int.from_bytes(fh.read(8), "little")
        if header_len <= 0 or 8 + header_len > size:
            raise SafetensorsHeaderError("header is cut off")
        raw = fh.read(header_len)
    try:
        parsed = json.loads(raw)
        metadata = parsed.get("__metadata__") or {}
        tensors = {k: v for k, v in parsed.items() if k != "__metadata__"}
        header = SafetensorsHeader(file, header_len, tensors, metadata)
        end = header.data_bytes
    except (ValueError, KeyError, TypeError, AttributeError, IndexError) as exc:
        raise SafetensorsHeaderError(str(exc)) from exc
    if 8 + header_len + end > size:
        raise SafetensorsHeaderError(f"{size} bytes on disk, {8 + header_len + end} expected")
    return header
