"""The hub's hashes of a file: SHA-256 for LFS files (the ``lfs.sha256`` of the hub's
file list), git's blob id for the others (SHA-1 of ``blob <size>\\0`` followed by the
content, the ``blobId``), computed from a file on disk or as its bytes arrive."""

from __future__ import annotations

import hashlib
from pathlib import Path

from glmdesk.engine.catalog.hub_files import RemoteFile

#: Bytes read at a time while hashing a file on disk.
_HASH_CHUNK = 4 << 20


def _git_blob_id(path: Path) -> str:
    digest = hashlib.sha1(f"blob {path.stat().st_size}\0".encode())  # noqa: S324 - git's own id
    with open(path, "rb") as fh:
        while chunk := fh.read(_HASH_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_HASH_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


class Digest:
    """The hub's hash of a file as it grows: SHA-256 for LFS files, else git's blob id
    (SHA-1 of ``blob <size>\\0`` + content). ``fed`` counts the bytes hashed."""

    def __init__(self, remote: RemoteFile, prefix: Path | None = None, length: int = 0) -> None:
        self.expected = remote.sha256 or remote.blob_id
        if remote.sha256:
            self._hash = hashlib.sha256()
        else:
            self._hash = hashlib.sha1(f"blob {remote.size}\0".encode())  # noqa: S324 - git's own id
        self.fed = 0
        if prefix is not None and length:
            with open(prefix, "rb") as fh:
                while self.fed < length and (chunk := fh.read(min(_HASH_CHUNK, length - self.fed))):
                    self.update(chunk)

    def update(self, chunk: bytes) -> None:
        self._hash.update(chunk)
        self.fed += len(chunk)

    def matches(self) -> bool:
        """Whether the bytes hashed are the hub's file (``True`` when it gave no hash)."""
        return not self.expected or self._hash.hexdigest() == self.expected


def file_matches(path: Path, remote: RemoteFile) -> bool:
    """Whether ``path`` is ``remote``: its size, then its SHA-256 (LFS) or git blob id."""
    if path.stat().st_size != remote.size:
        return False
    if remote.sha256:
        return _sha256(path) == remote.sha256
    if remote.blob_id:
        return _git_blob_id(path) == remote.blob_id
    return True
