"""Which checkpoint family a path holds, from ``config.json`` and the files present.

Families:

- ``chatglm2``, ``chatglm2-32k``: THUDM ChatGLM2-6B (-32K) original layout.
- ``chatglm3``, ``chatglm3-32k``: ChatGLM3-6B; ``-32k`` also covers -128K and any
  ChatGLM3 with ``rope_ratio > 1``.
- ``glm4``: GLM-4-9B(-chat) in THUDM's original layout (model_type ``chatglm``).
- ``glm4-hf``: the transformers-native sibling (model_type ``glm``).
- ``chatglm-v1``: ChatGLM-6B (first generation), a different network.
- ``generic-hf``: any other Hugging Face folder with a ``model_type``.
- ``gguf``: a ``.gguf`` file (or a folder holding only ``.gguf`` files).

A folder written by ``glmdesk convert`` (model_type ``glm`` and :data:`MARKER_FILE`)
keeps the family of the folder it was converted from: its tokenizer file and prompt
format are that family's, not a Hugging Face tokenizer's.

GLM-4 is told from ChatGLM2/3 by the tokenizer the folder declares (the format of
``tokenizer.model``: tiktoken ranks or sentencepiece; ``tokenizer_config.json``'s
class), and only when it declares none by the vocabulary size.
ChatGLM2 and ChatGLM3 have the same config fields; they are told apart by their
tokenizer files (ChatGLM3's mention ``<|user|>``), then the config's
``_name_or_path``, then ``rope_ratio`` (ChatGLM2-6B-32K uses 16, ChatGLM3-32K 50,
-128K 500).

Sources: the ``config.json`` and ``tokenization_chatglm.py`` files of THUDM's
chatglm2-6b, chatglm2-6b-32k, chatglm3-6b, chatglm3-6b-32k, chatglm3-6b-128k,
glm-4-9b-chat and glm-4-9b-chat-hf repositories.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from glmdesk.core.errors import GlmdeskError

FAMILIES = (
    "chatglm2",
    "chatglm2-32k",
    "chatglm3",
    "chatglm3-32k",
    "glm4",
    "glm4-hf",
    "chatglm-v1",
    "generic-hf",
    "gguf",
)
ORIGINAL_FAMILIES = frozenset({"chatglm2", "chatglm2-32k", "chatglm3", "chatglm3-32k", "glm4"})

#: Families whose tokenizer is :class:`~glmdesk.engine.chatglm.tokenizer.ChatGLMTokenizer`.
SENTENCEPIECE_FAMILIES = frozenset({"chatglm2", "chatglm2-32k", "chatglm3", "chatglm3-32k"})

#: Written into every converted folder by :func:`~glmdesk.engine.chatglm.convert.convert_checkpoint`;
#: its presence marks a complete conversion, and its ``family`` names the source's family.
MARKER_FILE = "glmdesk_conversion.json"

_CHATGLM_CLASSES = ("ChatGLMModel", "ChatGLMForConditionalGeneration", "ChatGLMForSequenceClassification")
_CHATGLM3_MARKERS = ("<|user|>", "<|observation|>")


def is_original_checkpoint(family: str) -> bool:
    """True for THUDM-layout families that must be converted before loading."""
    return family in ORIGINAL_FAMILIES


def read_config(folder: Path) -> dict[str, Any]:
    """Return ``folder/config.json`` as a dict.

    Raises:
        GlmdeskError: ``not_a_model`` if it is missing, unreadable or not a JSON
            object.
    """
    file = folder / "config.json"
    try:
        config = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise GlmdeskError(
            "not_a_model", f"The folder {folder} has no config.json, so it is not a model.", path=str(folder)
        ) from exc
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise GlmdeskError(
            "not_a_model",
            f"The config.json in {folder} could not be read as JSON ({exc}).",
            path=str(folder),
        ) from exc
    if not isinstance(config, dict):
        raise GlmdeskError(
            "not_a_model", f"The config.json in {folder} is not a JSON object.", path=str(folder)
        )
    return config


def is_chatglm_config(config: dict[str, Any]) -> bool:
    """True when the config names THUDM's ChatGLM code (any generation)."""
    if config.get("model_type") == "chatglm":
        return True
    names = list(config.get("architectures") or [])
    auto_map = config.get("auto_map") or {}
    if isinstance(auto_map, dict):
        names += [str(v) for v in auto_map.values()]
    return any(any(cls in str(n) for cls in _CHATGLM_CLASSES) for n in names)


def converted_family(folder: Path, config: dict[str, Any] | None = None) -> str | None:
    """The source family of a folder ``glmdesk convert`` wrote, else ``None``.

    Args:
        folder: A model folder.
        config: Its ``config.json`` when already read (model_type must be ``glm``).
    """
    try:
        marker = json.loads((folder / MARKER_FILE).read_text(encoding="utf-8"))
        if config is None:
            config = read_config(folder)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, GlmdeskError):
        return None
    family = marker.get("family") if isinstance(marker, dict) else None
    if config.get("model_type") == "glm" and family in ORIGINAL_FAMILIES:
        return family
    return None


def rope_ratio(config: dict[str, Any]) -> float:
    """The config's ``rope_ratio`` (1.0 when absent or null)."""
    value = config.get("rope_ratio")
    return float(value) if value else 1.0


def _is_v1(config: dict[str, Any]) -> bool:
    if "position_encoding_2d" in config or "inner_hidden_size" in config:
        return True
    return "padded_vocab_size" not in config and config.get("vocab_size") in (130528, 150528)


def _text(file: Path, limit: int = 2_000_000) -> str:
    try:
        with file.open("r", encoding="utf-8", errors="replace") as f:
            return f.read(limit)
    except OSError:
        return ""


def _looks_chatglm3(folder: Path, config: dict[str, Any]) -> bool:
    # Reading (never running) the tokenizer files is the strongest signal: the
    # ChatGLM3 tokenizer defines the role tokens, ChatGLM2's does not.
    for name in ("tokenizer_config.json", "tokenization_chatglm.py"):
        if any(m in _text(folder / name) for m in _CHATGLM3_MARKERS):
            return True
    name = str(config.get("_name_or_path") or "").lower()
    if "chatglm3" in name:
        return True
    if "chatglm2" in name:
        return False
    return rope_ratio(config) >= 50


def is_tiktoken_file(file: Path) -> bool:
    """True when ``file`` starts like a tiktoken rank file (``base64 rank`` lines)."""
    try:
        with file.open("rb") as f:
            head = f.read(256)
    except OSError:
        return False
    first = head.split(b"\n", 1)[0].split(b" ")
    return len(first) == 2 and first[1].strip().isdigit()


def _is_sentencepiece_file(file: Path) -> bool:
    # A sentencepiece ModelProto starts with its repeated field 1 (pieces): tag 0x0A.
    try:
        with file.open("rb") as f:
            return f.read(1) == b"\x0a"
    except OSError:
        return False


def declared_tokenizer(folder: Path) -> str | None:
    """What tokenizer a ChatGLM-family folder declares: ``tiktoken`` (GLM-4) or
    ``sentencepiece`` (ChatGLM2/3); ``None`` when it declares neither.

    The tokenizer file's own format counts first (it is what must be read), then
    ``tokenizer_config.json``'s ``tokenizer_class`` (``ChatGLM4Tokenizer`` is GLM-4's,
    ``ChatGLMTokenizer`` ChatGLM2/3's), then a ``tokenizer.json`` without a
    ``tokenizer.model`` (only GLM-4 ships one).
    """
    model_file = folder / "tokenizer.model"
    if is_tiktoken_file(model_file):
        return "tiktoken"
    if _is_sentencepiece_file(model_file):
        return "sentencepiece"
    try:
        declared = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        declared = None
    name = str(declared.get("tokenizer_class") or "") if isinstance(declared, dict) else ""
    if name == "ChatGLM4Tokenizer":
        return "tiktoken"
    if name == "ChatGLMTokenizer":
        return "sentencepiece"
    if (folder / "tokenizer.json").is_file() and not model_file.exists():
        return "tiktoken"
    return None


def detect_family(path: str | Path) -> str:
    """Return the checkpoint family of a folder or file.

    Args:
        path: A model folder or a ``.gguf`` file.

    Returns:
        One of :data:`FAMILIES`.

    Raises:
        GlmdeskError: ``model_not_found`` if nothing exists at ``path``;
            ``not_a_model`` if it is neither a ``.gguf`` file nor a folder with a
            usable ``config.json``.
    """
    p = Path(path).expanduser()
    if not p.exists():
        raise GlmdeskError("model_not_found", f"Nothing exists at {p}.", path=str(p))
    if p.is_file():
        if p.suffix.lower() == ".gguf":
            return "gguf"
        raise GlmdeskError(
            "not_a_model", f"The file {p} is not a model (expected a folder or a .gguf file).", path=str(p)
        )
    if not (p / "config.json").exists() and any(p.glob("*.gguf")):
        return "gguf"
    config = read_config(p)
    converted = converted_family(p, config)
    if converted:
        return converted
    if is_chatglm_config(config):
        if _is_v1(config):
            return "chatglm-v1"
        declared = declared_tokenizer(p)
        vocab = int(config.get("padded_vocab_size") or config.get("vocab_size") or 0)
        if declared == "tiktoken" or (declared is None and vocab >= 100_000):
            return "glm4"
        long_context = rope_ratio(config) > 1.0
        if _looks_chatglm3(p, config):
            return "chatglm3-32k" if long_context else "chatglm3"
        return "chatglm2-32k" if long_context else "chatglm2"
    model_type = config.get("model_type")
    if model_type == "glm":
        return "glm4-hf"
    if model_type or config.get("architectures"):
        return "generic-hf"
    raise GlmdeskError(
        "not_a_model",
        f"The config.json in {p} names no model type, so glmdesk cannot tell what model it is.",
        path=str(p),
    )
