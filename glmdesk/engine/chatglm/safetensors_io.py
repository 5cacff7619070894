"""Read one weight shard lazily and write a safetensors file tensor by tensor.

``safetensors.torch.save_file`` serializes every tensor to ``bytes`` before
writing, which doubles the memory of a shard. Here the header is built from the
planned shapes first, then each tensor's bytes are written straight from its
storage and released, so writing costs one tensor of memory.

File format (https://github.com/huggingface/safetensors): 8-byte little-endian
header length ``N``, ``N`` bytes of JSON (``{name: {dtype, shape, data_offsets}}``
plus ``__metadata__``), padded with spaces to a multiple of 8, then the raw
little-endian tensor data. Reading a header goes through
:func:`glmdesk.engine.files.file_checks.read_safetensors_header`, the one parser.
"""

from __future__ import annotations

import json
import pickle
import struct
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError, safe_open

from glmdesk.core.errors import GlmdeskError, corrupt_weights
from glmdesk.engine.files.file_checks import (
    SafetensorsHeader,
    SafetensorsHeaderError,
    read_safetensors_header,
)

_TORCH_TO_ST = {
    torch.float64: "F64",
    torch.float32: "F32",
    torch.float16: "F16",
    torch.bfloat16: "BF16",
    torch.int64: "I64",
    torch.int32: "I32",
    torch.int16: "I16",
    torch.int8: "I8",
    torch.uint8: "U8",
    torch.bool: "BOOL",
}
ST_SIZES = {
    "F64": 8,
    "F32": 4,
    "F16": 2,
    "BF16": 2,
    "I64": 8,
    "I32": 4,
    "I16": 2,
    "I8": 1,
    "U8": 1,
    "BOOL": 1,
}


class ShardReader:
    """Uniform lazy access to one ``.safetensors`` or ``.bin`` shard.

    Attributes:
        path: The shard file.
    """

    def __init__(
        self,
        path: Path,
        handle: Any,
        tensors: dict[str, torch.Tensor] | None,
        header: SafetensorsHeader | None = None,
    ) -> None:
        self.path = path
        self._handle = handle  # safe_open handle, or None for .bin
        self._tensors = tensors  # mmapped state dict for .bin
        self._header = header  # parsed safetensors header, or None for .bin

    def _st_header(self) -> SafetensorsHeader:
        """The safetensors header of a reader without a state dict.

        Raises:
            ValueError: for a reader made with neither.
        """
        if self._header is None:
            raise ValueError(f"{self.path}: neither a state dict nor a safetensors header was read")
        return self._header

    def keys(self) -> list[str]:
        """Tensor names in file order (safetensors: sorted by name)."""
        if self._tensors is not None:
            return [k for k, v in self._tensors.items() if isinstance(v, torch.Tensor)]
        return sorted(self._st_header().tensors)

    def shape(self, key: str) -> list[int]:
        """Shape without reading the data."""
        if self._tensors is not None:
            return list(self._tensors[key].shape)
        return [int(d) for d in self._st_header().tensors[key]["shape"]]

    def dtype(self, key: str) -> str:
        """safetensors dtype code (``"F16"``, ``"BF16"``...)."""
        if self._tensors is not None:
            return _TORCH_TO_ST[self._tensors[key].dtype]
        return str(self._st_header().tensors[key]["dtype"])

    def tensor(self, key: str) -> torch.Tensor:
        """The tensor's data (a memory-mapped view for ``.bin``)."""
        if self._tensors is not None:
            return self._tensors[key]
        return self._handle.get_tensor(key)


def _what_is_wrong(exc: BaseException) -> str:
    """Our own words for a reader's failure: the libraries' messages carry advice meant
    for programmers (torch's ``weights_only``, "file an issue"), never shown."""
    if isinstance(exc, EOFError):
        return "it ends early"
    if isinstance(exc, pickle.UnpicklingError) or "pickle" in str(exc).lower():
        return "it is not a PyTorch weight file"
    if isinstance(exc, OSError):
        return f"the system could not read it ({exc.strerror or exc.__class__.__name__})"
    if isinstance(exc, (SafetensorError, SafetensorsHeaderError)) or "header" in str(exc).lower():
        return "its safetensors header is damaged"
    return "its contents are not a weight file"


def _corrupt(src: Path, file: Path, exc: BaseException) -> GlmdeskError:
    return corrupt_weights(
        file,
        f"The weight file {file.name} in {src} could not be read ({_what_is_wrong(exc)}); it may be "
        "damaged or incomplete: download it again.",
        exc,
    )


@contextmanager
def open_shard(file: Path, src: Path) -> Iterator[ShardReader]:
    """Open one shard lazily: the header (names, dtypes, shapes) through
    :func:`~glmdesk.engine.files.file_checks.read_safetensors_header`, the data through
    ``safe_open``; or ``torch.load(weights_only=True, mmap=True)`` for ``.bin``.

    Raises:
        GlmdeskError: ``corrupt_weights`` when the file cannot be parsed.
    """
    if file.suffix == ".safetensors":
        try:
            header = read_safetensors_header(file)
            handle = safe_open(str(file), framework="pt", device="cpu")
        except (SafetensorError, OSError, ValueError) as exc:
            raise _corrupt(src, file, exc) from exc
        try:
            yield ShardReader(file, handle, None, header)
        finally:
            del handle
        return
    try:
        try:
            state = torch.load(file, map_location="cpu", weights_only=True, mmap=True)
        except RuntimeError as exc:
            if "mmap" not in str(exc).lower() and "zip" not in str(exc).lower():
                raise
            # A legacy (pre-zip) pickle cannot be memory-mapped: read it whole.
            state = torch.load(file, map_location="cpu", weights_only=True)
    except (RuntimeError, OSError, EOFError, ValueError, pickle.UnpicklingError) as exc:
        raise _corrupt(src, file, exc) from exc
    if not isinstance(state, dict):
        raise _corrupt(src, file, ValueError("not a state dict"))
    try:
        yield ShardReader(file, None, state)
    finally:
        state.clear()
        del state


def write_safetensors(
    path: Path,
    entries: Sequence[tuple[str, str, tuple[int, ...]]],
    tensors: Iterable[torch.Tensor],
    on_tensor: Callable[[int], None] | None = None,
) -> None:
    """Write a safetensors file, streaming the tensors in ``entries`` order.

    Args:
        path: Output file.
        entries: ``(name, dtype code, shape)`` of every tensor, in write order.
        tensors: The tensors, same order; each must match its entry.
        on_tensor: Called with the data bytes written so far after each tensor.

    Raises:
        ValueError: if a tensor does not match its entry or the counts differ.
    """
    header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, dtype, shape in entries:
        numel = 1
        for d in shape:
            numel *= d
        size = numel * ST_SIZES[dtype]
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header, separators=(",", ":")).encode("utf-8")
    raw += b" " * (-len(raw) % 8)
    done = 0
    with path.open("wb") as f:
        f.write(struct.pack("<Q", len(raw)))
        f.write(raw)
        it = iter(tensors)
        for name, dtype, shape in entries:
            t = next(it)
            if tuple(t.shape) != tuple(shape) or _TORCH_TO_ST[t.dtype] != dtype:
                raise ValueError(f"tensor {name}: {tuple(t.shape)} {t.dtype} does not match {shape} {dtype}")
            t = t.contiguous()
            f.write(t.reshape(-1).view(torch.uint8).numpy().data)
            done += t.numel() * t.element_size()
            del t
            if on_tensor is not None:
                on_tensor(done)
        if next(it, None) is not None:
            raise ValueError("more tensors than entries")
