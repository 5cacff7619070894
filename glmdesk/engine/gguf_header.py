"""Read a GGUF file's header in milliseconds, before any engine loads it.

What a file holds (architecture, tensor count, quantization types) decides whether
an engine can run it; knowing that before transformers spends minutes
dequantizing, or before llama.cpp maps gigabytes, lets glmdesk refuse at once with
a sentence that names the problem.

The header is parsed here with the ``gguf`` package's own constants
(``GGUF_MAGIC``, ``GGUFValueType``, ``GGMLQuantizationType``) rather than its
``GGUFReader``, which turns every metadata array (the whole vocabulary and merge
list) into numpy objects: seconds for the 90 MB embedded model on this machine.
Arrays are skipped here, so reading costs about one pass over the vocabulary's
string lengths.

Source of the layout: ggml ``docs/gguf.md`` (header, metadata key/value pairs,
tensor infos; versions 2 and 3, little- or big-endian).
"""

from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass, field
from pathlib import Path

from gguf import GGUF_MAGIC, GGMLQuantizationType, GGUFValueType

from glmdesk.core.errors import GlmdeskError, corrupt_weights
from glmdesk.engine.file_checks import is_lfs_pointer, lfs_pointer_error

_SCALARS = {
    GGUFValueType.UINT8: "B",
    GGUFValueType.INT8: "b",
    GGUFValueType.UINT16: "H",
    GGUFValueType.INT16: "h",
    GGUFValueType.UINT32: "I",
    GGUFValueType.INT32: "i",
    GGUFValueType.FLOAT32: "f",
    GGUFValueType.BOOL: "?",
    GGUFValueType.UINT64: "Q",
    GGUFValueType.INT64: "q",
    GGUFValueType.FLOAT64: "d",
}


@dataclass(frozen=True)
class GgufHeader:
    """What a GGUF file says about itself.

    Attributes:
        path: The file.
        version: GGUF format version (2 or 3).
        architecture: ``general.architecture`` (``llama``, ``chatglm``, ``glm4``...).
        name: ``general.name`` when present.
        tensor_count: Number of tensors.
        quantization_types: Names of the tensor types used, sorted
            (``("F32", "Q4_1", "Q8_0")``).
        context_length: ``<architecture>.context_length`` in tokens, when present.
        metadata: Every scalar and string metadata value (arrays left out).
    """

    path: Path
    version: int
    architecture: str
    name: str | None
    tensor_count: int
    quantization_types: tuple[str, ...]
    context_length: int | None
    metadata: dict[str, object] = field(repr=False, default_factory=dict)


class _Cursor:
    def __init__(self, buf, endian: str) -> None:
        self.buf, self.pos, self.endian = buf, 0, endian

    def take(self, fmt: str):
        value = struct.unpack_from(self.endian + fmt, self.buf, self.pos)[0]
        self.pos += struct.calcsize(fmt)
        return value

    def string(self) -> str:
        n = self.take("Q")
        if self.pos + n > len(self.buf):
            raise ValueError("a string runs past the end of the file")
        raw = bytes(self.buf[self.pos : self.pos + n])
        self.pos += n
        return raw.decode("utf-8", errors="replace")

    def value(self, kind: int):
        if kind == GGUFValueType.STRING:
            return self.string()
        if kind == GGUFValueType.ARRAY:
            self.skip_array()
            return None
        return self.take(_SCALARS[GGUFValueType(kind)])

    def skip_array(self) -> None:
        item, count = GGUFValueType(self.take("I")), self.take("Q")
        if item == GGUFValueType.STRING:
            for _ in range(count):
                self.pos += 8 + struct.unpack_from(self.endian + "Q", self.buf, self.pos)[0]
        elif item == GGUFValueType.ARRAY:
            for _ in range(count):
                self.skip_array()
        else:
            self.pos += count * struct.calcsize(_SCALARS[item])
        if self.pos > len(self.buf):
            raise ValueError("an array runs past the end of the file")


def _preview(head: bytes) -> str:
    text = head[:24].decode("utf-8", errors="replace")
    return "".join(c if c.isprintable() else "." for c in text)


def read_gguf_header(path: str | Path) -> GgufHeader:
    """Read the header, metadata and tensor infos of a GGUF file (not its tensors).

    Args:
        path: The ``.gguf`` file.

    Returns:
        A :class:`GgufHeader`.

    Raises:
        GlmdeskError: ``model_not_found`` when the file does not exist;
            ``lfs_pointer`` for a git-lfs pointer; ``not_gguf`` when the file does
            not start with the GGUF magic bytes (a text file, an HTML page saved
            under that name); ``corrupt_weights`` for a cut-off or damaged header
            or an unknown format version.
    """
    path = Path(path)
    if not path.is_file():
        raise GlmdeskError("model_not_found", f"The model file {path} does not exist.", path=str(path))
    if is_lfs_pointer(path):
        raise lfs_pointer_error(path)
    with path.open("rb") as fh:
        head = fh.read(24)
        if len(head) < 4 or struct.unpack("<I", head[:4])[0] != GGUF_MAGIC:
            raise GlmdeskError(
                "not_gguf",
                f'{path.name} is not a GGUF file: a GGUF file starts with the bytes "GGUF", this one '
                f'starts with "{_preview(head)}". Choose the .gguf file itself (not a page or a text '
                "file saved under that name).",
                path=str(path.parent),
                file=path.name,
                head=_preview(head),
            )
        try:
            with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as buf:
                return _parse(path, buf)
        except (ValueError, struct.error, KeyError, OverflowError) as exc:
            raise corrupt_weights(
                path, f"The GGUF file {path.name} in {path.parent} is damaged or incomplete ({exc}).", exc
            ) from exc


def _parse(path: Path, buf) -> GgufHeader:
    endian = "<"
    version = struct.unpack_from("<I", buf, 4)[0]
    if version & 0xFFFF == 0:  # written big-endian
        endian, version = ">", struct.unpack_from(">I", buf, 4)[0]
    if version not in (2, 3):
        raise ValueError(f"GGUF format version {version}; glmdesk reads versions 2 and 3")
    cur = _Cursor(buf, endian)
    cur.pos = 8
    n_tensors, n_kv = cur.take("Q"), cur.take("Q")
    metadata: dict[str, object] = {}
    for _ in range(n_kv):
        key = cur.string()
        value = cur.value(cur.take("I"))
        if value is not None:
            metadata[key] = value
    types: set[str] = set()
    for _ in range(n_tensors):
        cur.string()
        n_dims = cur.take("I")
        cur.pos += 8 * n_dims
        kind = cur.take("I")
        cur.take("Q")
        try:
            types.add(GGMLQuantizationType(kind).name)
        except ValueError:
            types.add(f"type {kind}")
    architecture = metadata.get("general.architecture")
    if not isinstance(architecture, str) or not architecture:
        raise ValueError("its metadata names no architecture")
    context = metadata.get(f"{architecture}.context_length")
    name = metadata.get("general.name")
    return GgufHeader(
        path=path,
        version=version,
        architecture=architecture,
        name=name if isinstance(name, str) else None,
        tensor_count=n_tensors,
        quantization_types=tuple(sorted(types)),
        context_length=int(context) if isinstance(context, int) else None,
        metadata=metadata,
    )


def transformers_architectures() -> frozenset[str]:
    """GGUF architectures transformers can dequantize and load (its own list)."""
    from transformers.modeling_gguf_pytorch_utils import GGUF_SUPPORTED_ARCHITECTURES

    return frozenset(GGUF_SUPPORTED_ARCHITECTURES)


def check_transformers_can_load(header: GgufHeader) -> None:
    """Refuse a GGUF file the transformers engine cannot run, before dequantizing.

    Raises:
        GlmdeskError: ``gguf_unsupported`` naming the file, its architecture and
            the engine.
    """
    supported = transformers_architectures()
    arch = header.architecture
    if arch in supported or arch.replace("-", "_") in supported:
        return
    raise GlmdeskError(
        "gguf_unsupported",
        f"{header.path.name} holds a model of architecture {arch}, which the transformers engine "
        f"cannot run from a GGUF file (it runs {', '.join(sorted(supported - {'general', 'tokenizer'}))}). "
        "Open it with the llama.cpp engine, or open the model's original folder.",
        path=str(header.path.parent),
        file=header.path.name,
        architecture=arch,
        engine="transformers",
    )
