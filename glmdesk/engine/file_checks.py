"""Checks on model files before any library reads them.

A repository cloned without git-lfs holds, in place of each large file, a small
text "pointer" (``version https://git-lfs.github.com/spec/v1``, ``oid sha256:...``,
``size N``). Libraries then fail with their own advice (torch suggests
``weights_only=False``; sentencepiece may even read it); glmdesk names the
pointer instead.

Source of the pointer format: git-lfs ``docs/spec.md`` ("The pointer file").
"""

from __future__ import annotations

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
