"""Which GGUF architectures the installed llama.cpp can run, and shapes it cannot.

The ``gguf`` package's ``MODEL_ARCH_NAMES`` lag behind the library that llama-cpp-python
builds (``gguf`` 0.19 has no ``glm5-next``, which llama-cpp-python 0.3.36 runs). The
library itself holds each architecture's name as a C string (``LLM_ARCH_NAMES`` in
llama.cpp's ``src/llama-arch.cpp``), so the names are read from ``libllama``'s bytes,
without loading it.
"""

from __future__ import annotations

import functools
import importlib.util
from collections.abc import Mapping
from pathlib import Path

#: GGUF architectures whose sparse-attention indexer rotates its keys with a Hadamard
#: matrix at least 64 wide (llama.cpp's ``llama_kv_cache::build_input_k_rot``): a key
#: width that is not a multiple of 64 aborts the process while the context is made.
INDEXED_ARCHITECTURES = frozenset({"glm-dsa", "glm5-next", "deepseek32"})
HADAMARD_WIDTH = 64


def _library_files() -> list[Path]:
    spec = importlib.util.find_spec("llama_cpp")
    if spec is None or spec.origin is None:
        return []
    return sorted({path.resolve() for path in (Path(spec.origin).parent / "lib").glob("libllama.*")})


@functools.lru_cache(maxsize=32)
def library_knows(architecture: str) -> bool:
    """Whether the installed ``libllama`` names ``architecture`` (``"glm5-next"``); False
    where llama-cpp-python or its library is not found."""
    wanted = b"\0" + architecture.encode() + b"\0"
    for path in _library_files():
        try:
            if wanted in path.read_bytes():
                return True
        except OSError:
            continue
    return False


def unrunnable_shape(architecture: str, metadata: Mapping[str, object]) -> str | None:
    """Why llama.cpp would abort on this file's shapes, as a clause, or None.

    ``metadata``: the GGUF header's key -> value (``{arch}.attention.indexer.key_length``
    is the indexer's key width in elements).
    """
    if architecture == "glm5-next" and metadata.get("glm5-next.hyper_connection.count", 4) != 4:
        # src/models/glm5-next.cpp: GGML_ASSERT(hparams.dsv4_hc_mult == 4)
        return "it mixes its layers over other than 4 hyper-connection streams, which llama.cpp does not run"
    if architecture not in INDEXED_ARCHITECTURES:
        return None
    width = metadata.get(f"{architecture}.attention.indexer.key_length")
    if isinstance(width, int) and width % HADAMARD_WIDTH:
        return (
            f"its sparse-attention indexer keys are {width} wide, and llama.cpp needs a "
            f"multiple of {HADAMARD_WIDTH} there"
        )
    return None
