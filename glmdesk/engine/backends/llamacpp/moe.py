"""Experts in system RAM: a MoE GGUF's routed-expert tensors kept in RAM while the rest
goes to the GPU, as llama.cpp's ``--cpu-moe`` does.

llama.cpp does it with tensor buffer-type overrides: ``llama_model_params``'s
``tensor_buft_overrides``, a list of ``{const char *pattern; ggml_backend_buffer_type_t
buft;}`` ended by a null pattern, each tensor whose name matches a pattern (a
``std::regex`` search) being allocated in that buffer type (``llama.h``; ``--cpu-moe``
in llama.cpp's ``common/arg.cpp`` gives the ``ffn_(up|down|gate|gate_up)_exps`` tensors
the CPU device's buffer type). llama-cpp-python 0.3.36 declares the field (as a
``c_void_p``, "unused") but its ``Llama`` class has no parameter for it, so the list is
built here with ctypes and the CPU buffer type asked from ggml
(``ggml_backend_dev_buffer_type(ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU))``,
``ggml-backend.h``). llama.cpp says which tensors it moved in its log (``tensor NAME
(... ) buffer type overridden to CPU``), which :func:`overridden_tensor` reads back.
"""

from __future__ import annotations

import ctypes
import re

#: The routed experts' tensors (llama.cpp's ``--cpu-moe`` pattern).
EXPERT_PATTERN = rb"\.ffn_(up|down|gate|gate_up)_exps"
_GGML_BACKEND_DEVICE_TYPE_CPU = 0
_OVERRIDDEN = re.compile(r"tensor (\S+) \(.*\) buffer type overridden to (\S+)")


class TensorBufferOverride(ctypes.Structure):
    """``struct llama_model_tensor_buft_override`` (``llama.h``)."""

    _fields_ = [("pattern", ctypes.c_char_p), ("buft", ctypes.c_void_p)]


def expert_count(header) -> int:
    """Routed experts per MoE layer from the GGUF header (``{arch}.expert_count``:
    ``glm4moe``, ``deepseek2``...; 0 for a dense model)."""
    value = header.get("{arch}.expert_count", 0)
    return int(value) if isinstance(value, int) else 0


def cpu_buffer_type(lib) -> int:
    """The CPU device's buffer type (a pointer), from ggml through llama-cpp-python's
    library handle (ggml's symbols are loaded with it, globally).

    Raises:
        OSError: when ggml's backend functions cannot be found or give no CPU device.
    """
    handle = lib._lib if hasattr(lib, "_lib") else lib.llama_cpp._lib
    by_type, buffer_type = handle.ggml_backend_dev_by_type, handle.ggml_backend_dev_buffer_type
    by_type.argtypes, by_type.restype = [ctypes.c_int], ctypes.c_void_p
    buffer_type.argtypes, buffer_type.restype = [ctypes.c_void_p], ctypes.c_void_p
    device = by_type(_GGML_BACKEND_DEVICE_TYPE_CPU)
    buft = buffer_type(device) if device else None
    if not buft:
        raise OSError("ggml reports no CPU buffer type")
    return buft


def expert_overrides(lib) -> ctypes.Array:
    """The null-ended override list that keeps the experts in RAM (keep it alive while
    the model loads; ``params.tensor_buft_overrides = ctypes.addressof(it)``).

    Raises:
        OSError: see :func:`cpu_buffer_type`.
    """
    overrides = (TensorBufferOverride * 2)()
    overrides[0].pattern = EXPERT_PATTERN
    overrides[0].buft = cpu_buffer_type(lib)
    return overrides


def overridden_tensor(line: str) -> tuple[str, str] | None:
    """``(tensor name, buffer type)`` from one of llama.cpp's override log lines."""
    match = _OVERRIDDEN.search(line)
    return (match.group(1), match.group(2)) if match else None
