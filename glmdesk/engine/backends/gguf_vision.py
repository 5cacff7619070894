"""Whether a GGUF model comes with a vision projector (``mmproj``), which llama.cpp here cannot run.

llama.cpp keeps a vision model's image encoder and projector in a second GGUF file, by
convention ``mmproj-*.gguf`` beside the language model, with ``general.architecture``
``clip`` (llama.cpp's ``tools/mtmd``). llama-cpp-python runs one through a chat handler
(``llama_cpp/llama_chat_format.py``). Checked in llama-cpp-python 0.3.36: there is no GLM
handler (its handlers are ``Llava15``, ``Llava16``, ``Obsidian``, ``Moondream``,
``NanoLlava``, ``Llama3VisionAlpha``, ``MiniCPMv26``, ``Qwen25VL`` and the generic
``MTMDChatHandler`` with ``Gemma4``), and the generic one needs llama.cpp's ``libmtmd``,
which the installed wheel does not ship (``llama_cpp/lib`` holds ``libggml*`` and
``libllama`` only; ``import llama_cpp.mtmd_cpp`` raises ``FileNotFoundError``). So the
llama.cpp engine runs such a model's text only, and Open model says that images need
the transformers engine (the model's Hugging Face folder) or a server.
"""

from __future__ import annotations

from pathlib import Path

from glmdesk.core.errors import GlmdeskError

#: ``general.architecture`` of llama.cpp's vision projector files.
PROJECTOR_ARCHITECTURE = "clip"


def is_projector(path: Path) -> bool:
    """True when ``path`` is a GGUF vision projector (its header says ``clip``); a file
    that cannot be read as GGUF is not one."""
    from glmdesk.engine.files.gguf_header import read_gguf_header

    try:
        return read_gguf_header(path).architecture == PROJECTOR_ARCHITECTURE
    except (GlmdeskError, OSError):
        return False


def vision_projector(model: str | None) -> Path | None:
    """The vision projector that comes with the GGUF model ``model``, or ``None``.

    That is ``model`` itself when it is a projector, else an ``*mmproj*.gguf`` file in
    its folder (only files so named are read, a header each: a fraction of a millisecond
    for a projector's few keys). Cheap enough for the GUI thread as the path is typed.

    Args:
        model: What Open model's model field holds (a path, a hub id, or nothing).
    """
    if not model or not model.lower().endswith(".gguf"):
        return None
    path = Path(model).expanduser()
    if not path.is_file():
        return None
    if "mmproj" in path.name.lower() and is_projector(path):
        return path
    for other in sorted(path.parent.glob("*.gguf")):
        if other != path and "mmproj" in other.name.lower() and is_projector(other):
            return other
    return None
