"""Read a GGUF file's header quickly, before any long load, and name what is wrong.

Shared by the llama.cpp backend and the transformers path (which converts GGUF files):
both call :func:`read_gguf_header` first, so a file that is not GGUF, a truncated one
or one with a tensor type the engine cannot read gets a sentence within a second
instead of after a minute of loading.

The format (magic ``GGUF``, version, tensor count, key/value metadata, tensor infos,
aligned tensor data) is the one documented in ggml's ``docs/gguf.md``; the value and
tensor type codes and the block sizes come from the ``gguf`` package (llama.cpp's own
Python package: ``GGUFValueType``, ``GGMLQuantizationType``, ``GGML_QUANT_SIZES``).
``gguf.GGUFReader`` itself is not used here: it decodes every vocabulary string and
merge into NumPy parts (about 11 s for the embedded model's 49K tokens on two busy
cores); this reader skips long arrays unless asked for them (about 50 ms).
"""

from __future__ import annotations

import functools
import io
import os
import struct
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from glmdesk.core.errors import GlmdeskError, corrupt_weights
from glmdesk.engine.files.file_checks import is_lfs_pointer, lfs_pointer_error

#: Arrays longer than this are recorded as their length only, unless asked for.
SHORT_ARRAY = 64

_SCALARS = {  # GGUFValueType code -> struct format
    0: "<B",
    1: "<b",
    2: "<H",
    3: "<h",
    4: "<I",
    5: "<i",
    6: "<f",
    7: "<?",
    10: "<Q",
    11: "<q",
    12: "<d",
}
_STRING, _ARRAY = 8, 9


@dataclass(frozen=True)
class GGUFHeader:
    """What a GGUF file's header says.

    Attributes:
        path: The file.
        version: GGUF format version (1-3).
        architecture: ``general.architecture`` (``llama``, ``chatglm``...; ``""`` if absent).
        metadata: Key -> value for scalars, strings and short arrays; a long array is
            ``("array", length)`` unless its key was asked for.
        tensor_types: Names of the ggml tensor types used (``Q4_1``, ``F32``...); an
            unknown code is ``"type N"``.
        n_tensors: Number of tensors.
        data_bytes: Bytes the file must have to hold every tensor, in bytes.
        file_bytes: The file's size, in bytes.
        tensor_bytes: Bytes of all tensors' data (what llama.cpp loads), in bytes.
        expert_bytes: Bytes of the routed experts' tensors (names with ``_exps.``:
            ``ffn_up_exps``, ``ffn_gate_exps``, ``ffn_down_exps``), in bytes.
        tensor_elements: Elements of all tensors (the parameter count).
    """

    path: str
    version: int
    architecture: str
    metadata: Mapping[str, object] = field(default_factory=dict)
    tensor_types: frozenset[str] = frozenset()
    n_tensors: int = 0
    data_bytes: int = 0
    file_bytes: int = 0
    tensor_bytes: int = 0
    expert_bytes: int = 0
    tensor_elements: int = 0

    def get(self, key: str, default=None):
        """A metadata value, ``{arch}`` in ``key`` replaced by the architecture."""
        return self.metadata.get(key.replace("{arch}", self.architecture), default)

    @property
    def context_length(self) -> int:
        """``{arch}.context_length``, in tokens (0 when absent)."""
        value = self.get("{arch}.context_length", 0)
        return int(value) if isinstance(value, int) else 0

    @property
    def name(self) -> str | None:
        """``general.name``, when present."""
        value = self.metadata.get("general.name")
        return value if isinstance(value, str) else None

    @property
    def quantization_types(self) -> tuple[str, ...]:
        """The tensor types used, sorted (``("F32", "Q4_1", "Q8_0")``)."""
        return tuple(sorted(self.tensor_types))

    @property
    def unknown_types(self) -> tuple[str, ...]:
        """Tensor types this build of the ``gguf`` package does not know."""
        return tuple(sorted(t for t in self.tensor_types if t.startswith("type ")))


class _Truncated(Exception):
    pass


class _Stream:
    """Little-endian reads from a buffered file; :class:`_Truncated` at its end."""

    def __init__(self, fh: BinaryIO) -> None:
        self.fh = fh

    def read(self, n: int) -> bytes:
        data = self.fh.read(n)
        if len(data) != n:
            raise _Truncated
        return data

    def unpack(self, fmt: str):
        return struct.unpack(fmt, self.read(struct.calcsize(fmt)))[0]

    def string(self) -> str:
        return self.read(self.unpack("<Q")).decode("utf-8", errors="replace")

    def skip_strings(self, n: int) -> None:
        for _ in range(n):
            self.fh.seek(self.unpack("<Q"), os.SEEK_CUR)

    def value(self, vtype: int, keep: bool):
        if vtype in _SCALARS:
            return self.unpack(_SCALARS[vtype])
        if vtype == _STRING:
            return self.string()
        if vtype != _ARRAY:
            raise ValueError(f"unknown metadata value type {vtype}")
        itype, n = self.unpack("<I"), self.unpack("<Q")
        if not keep and n > SHORT_ARRAY:
            if itype == _STRING:
                self.skip_strings(n)
            elif itype in _SCALARS:
                self.fh.seek(n * struct.calcsize(_SCALARS[itype]), os.SEEK_CUR)
            else:
                for _ in range(n):
                    self.value(itype, False)
            return ("array", n)
        return [self.value(itype, keep) for _ in range(n)]


def _preview(head: bytes) -> str:
    """The first bytes of a file as printable text (for the not-GGUF sentence)."""
    text = head[:24].decode("utf-8", errors="replace")
    return "".join(c if c.isprintable() else "." for c in text)


def read_gguf_header(path: str | Path, keep: Collection[str] = ()) -> GGUFHeader:
    """Read the header and tensor table of a GGUF file (no tensor data).

    Args:
        path: The ``.gguf`` file.
        keep: Keys of long arrays to return in full (e.g. ``tokenizer.ggml.tokens``).

    Returns:
        The :class:`GGUFHeader`.

    Raises:
        GlmdeskError: ``model_not_found`` when the file is missing; ``lfs_pointer`` for
            a git-lfs pointer; ``not_gguf`` when it does not start with the GGUF magic
            bytes (a text file or a page saved under that name); ``corrupt_weights`` when
            it ends before its header or its tensor data does (a truncated download),
            or the header is malformed.
    """
    import gguf

    path = Path(path)
    try:
        size = path.stat().st_size
        fh = io.BufferedReader(io.FileIO(path, "r"), 1 << 16)  # open(path, "rb") with a 64 KiB buffer
    except FileNotFoundError:
        raise GlmdeskError("model_not_found", f"The model {path} was not found.", path=str(path)) from None
    except OSError as exc:
        raise corrupt_weights(path, f"{path.name} cannot be read ({exc.strerror or exc}).", exc) from exc
    if is_lfs_pointer(path):
        fh.close()
        raise lfs_pointer_error(path)
    with fh:
        head = fh.peek(24)[:24]
        s = _Stream(fh)
        try:
            magic = s.read(4)
        except _Truncated:
            magic = b""
        if magic != struct.pack("<I", gguf.GGUF_MAGIC):
            preview = _preview(head)
            raise GlmdeskError(
                "not_gguf",
                f'{path.name} is not a GGUF file: a GGUF file starts with the bytes "GGUF", this one '
                f'starts with "{preview}". Choose the .gguf file itself (not a page or a text '
                "file saved under that name).",
                path=str(path.parent),
                file=path.name,
                head=preview,
            )
        try:
            return _read_rest(s, path, size, set(keep), gguf)
        except _Truncated:
            raise corrupt_weights(
                path,
                f"{path.name} ends inside its header: the file is truncated; download it again.",
                "truncated header",
            ) from None
        except (ValueError, UnicodeDecodeError, struct.error) as exc:
            raise corrupt_weights(path, f"{path.name} has a malformed GGUF header ({exc}).", exc) from exc


def _read_rest(s: _Stream, path: Path, size: int, keep: set[str], gguf) -> GGUFHeader:
    version = s.unpack("<I")
    if version not in (1, 2, 3):
        raise ValueError(f"GGUF version {version} is not one this reader knows (1-3)")
    n_tensors, n_kv = s.unpack("<Q"), s.unpack("<Q")
    if n_tensors > 1 << 24 or n_kv > 1 << 20:
        raise ValueError(f"implausible counts ({n_tensors} tensors, {n_kv} keys)")
    metadata: dict[str, object] = {}
    for _ in range(n_kv):
        key = s.string()
        metadata[key] = s.value(s.unpack("<I"), key in keep)
    types: set[str] = set()
    end = tensor_bytes = expert_bytes = elements = 0
    for _ in range(n_tensors):
        name = s.string()
        dims = [s.unpack("<Q") for _ in range(s.unpack("<I"))]
        code, offset = s.unpack("<I"), s.unpack("<Q")
        try:
            qtype = gguf.GGMLQuantizationType(code)
        except ValueError:
            types.add(f"type {code}")
            continue
        types.add(qtype.name)
        block, type_bytes = gguf.GGML_QUANT_SIZES[qtype]
        count = 1
        for d in dims:
            count *= d
        nbytes = count // block * type_bytes
        end = max(end, offset + nbytes)
        tensor_bytes += nbytes
        elements += count
        expert_bytes += nbytes if "_exps." in name else 0
    alignment = metadata.get("general.alignment", gguf.GGUF_DEFAULT_ALIGNMENT)
    alignment = alignment if isinstance(alignment, int) and alignment > 0 else gguf.GGUF_DEFAULT_ALIGNMENT
    here = s.fh.tell()
    data_start = -(-here // alignment) * alignment
    header = GGUFHeader(
        path=str(path),
        version=version,
        architecture=str(metadata.get("general.architecture", "")),
        metadata=metadata,
        tensor_types=frozenset(types),
        n_tensors=n_tensors,
        data_bytes=data_start + end,
        file_bytes=size,
        tensor_bytes=tensor_bytes,
        expert_bytes=expert_bytes,
        tensor_elements=elements,
    )
    if header.data_bytes > size:
        raise corrupt_weights(
            path,
            f"{path.name} is truncated: its tensors need {header.data_bytes:,} bytes but the file has "
            f"{size:,}; download it again.",
            f"truncated: {size} of {header.data_bytes} bytes",
        )
    return header


def transformers_architectures() -> frozenset[str]:
    """GGUF architectures transformers can dequantize and load (its own list)."""
    from transformers.modeling_gguf_pytorch_utils import GGUF_SUPPORTED_ARCHITECTURES

    return frozenset(GGUF_SUPPORTED_ARCHITECTURES)


@functools.cache
def transformers_dequantizes(type_name: str) -> bool:
    """Whether transformers' GGUF loader can dequantize tensors of ggml type ``type_name``.

    That loader hands every tensor to ``gguf.dequantize`` (transformers
    ``modeling_gguf_pytorch_utils.load_gguf_checkpoint``), which raises
    ``NotImplementedError`` for a type it has no dequantizer for (``Q8_1``, ``Q8_K``,
    the integer types). So the answer comes from that function itself, asked about one
    block of zeros (microseconds), never from a list kept here.

    Args:
        type_name: A :class:`gguf.GGMLQuantizationType` name (``"Q4_K"``); an unknown
            name (``"type 99"``) is not dequantizable.
    """
    import gguf
    import numpy as np

    try:
        qtype = gguf.GGMLQuantizationType[type_name]
        _block, type_bytes = gguf.GGML_QUANT_SIZES[qtype]
    except KeyError:
        return False
    try:
        gguf.dequantize(np.zeros((1, type_bytes), dtype=np.uint8), qtype)
    except NotImplementedError:
        return False
    except Exception:  # the probe itself misfired: let the loader decide
        return True
    return True


#: ggml types that hold activations only: ggml-cpu gives them no matrix product with
#: weights of that type (``ggml-cpu.c``'s type traits have no ``vec_dot`` for them), so
#: no llama.cpp build runs a model whose weights use them.
ACTIVATION_ONLY_TYPES = frozenset({"Q8_1", "Q8_K"})


def llama_cpp_runs(header: GGUFHeader) -> bool:
    """Whether the llama.cpp engine could run this file, judged from the header.

    True when llama-cpp-python is installed, the architecture is one the ``gguf``
    package (llama.cpp's own) names, and every tensor type is known to it and not
    one of :data:`ACTIVATION_ONLY_TYPES`.
    """
    import importlib.util

    import gguf

    if importlib.util.find_spec("llama_cpp") is None:
        return False
    if header.architecture not in set(gguf.MODEL_ARCH_NAMES.values()):
        return False
    return not header.unknown_types and not (header.tensor_types & ACTIVATION_ONLY_TYPES)


def check_transformers_can_load(header: GGUFHeader) -> None:
    """Refuse a GGUF file the transformers engine cannot run, before dequantizing.

    Both the architecture and every tensor type are checked, from the header only
    (:func:`transformers_architectures`, :func:`transformers_dequantizes`): a file with
    one tensor of a type transformers cannot dequantize, placed last, was otherwise
    refused only after every other tensor was dequantized (issue 30: 22 s for the
    embedded 135M model with its last tensor in Q8_1).

    Raises:
        GlmdeskError: ``gguf_unsupported`` naming the file and the engine, and either
            the architecture or the tensor types (``tensor_types``, comma-separated);
            ``llamacpp`` says whether the llama.cpp engine could run it instead
            (:func:`llama_cpp_runs`), and the sentence offers it only then.
    """
    check_transformers_tensor_types(header)  # first: it needs the gguf package only
    supported = transformers_architectures()
    arch = header.architecture
    if arch in supported or arch.replace("-", "_") in supported:
        return
    raise GlmdeskError(
        "gguf_unsupported",
        f"{Path(header.path).name} holds a model of architecture {arch}, which the transformers engine "
        f"cannot run from a GGUF file (it runs {', '.join(sorted(supported - {'general', 'tokenizer'}))}). "
        "Open it with the llama.cpp engine, or open the model's original folder.",
        **_params(header),
    )


def _params(header: GGUFHeader) -> dict[str, str]:
    path = Path(header.path)
    return {
        "path": str(path.parent),
        "file": path.name,
        "architecture": header.architecture,
        "engine": "transformers",
    }


def check_transformers_tensor_types(header: GGUFHeader) -> None:
    """Refuse tensor types transformers cannot dequantize (:func:`transformers_dequantizes`).

    Needs only the ``gguf`` package (milliseconds), so the transformers engine calls it
    before it imports torch and transformers (seconds).

    Raises:
        GlmdeskError: ``gguf_unsupported`` with ``tensor_types`` and ``llamacpp`` (see
            :func:`check_transformers_can_load`).
    """
    unreadable = [t for t in header.quantization_types if not transformers_dequantizes(t)]
    if not unreadable:
        return
    types = ", ".join(unreadable)
    llamacpp = llama_cpp_runs(header)
    instead = (
        "Open it with the llama.cpp engine, or open the model's original folder."
        if llamacpp
        else "The llama.cpp engine cannot run it either: open the model's original folder, or a GGUF "
        "file quantized to a common type such as Q8_0 or Q4_K_M."
    )
    raise GlmdeskError(
        "gguf_unsupported",
        f"{Path(header.path).name} holds tensors of type {types}, which the transformers engine cannot "
        f"dequantize. {instead}",
        **_params(header),
        tensor_types=types,
        llamacpp=llamacpp,
    )


def weight_type(header: GGUFHeader) -> str:
    """The GGUF's weight quantization by ``general.file_type`` (``Q4_1``...), else the
    tensor types used."""
    import gguf

    code = header.get("general.file_type")
    if isinstance(code, int):
        try:
            return gguf.LlamaFileType(code).name.removeprefix("MOSTLY_")
        except ValueError:
            pass
    return "+".join(sorted(header.tensor_types - {"F32"})) or "F32"
