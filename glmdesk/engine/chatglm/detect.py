"""Which checkpoint family a path holds, from ``config.json`` and the files present.

The families' own modules recognise them (:mod:`glmdesk.engine.families`); this module
reads the path. Families:

- ``chatglm2``, ``chatglm2-32k``: THUDM ChatGLM2-6B (-32K) original layout.
- ``chatglm3``, ``chatglm3-32k``: ChatGLM3-6B; ``-32k`` also covers -128K and any
  ChatGLM3 with ``rope_ratio > 1``.
- ``glm4``: GLM-4-9B(-chat) in THUDM's original layout (model_type ``chatglm``).
- ``glm4-hf``: the transformers-native sibling (model_type ``glm``).
- ``chatglm-v1``: ChatGLM-6B (first generation), a different network.
- ``glm4-0414``, ``glm-z1``: GLM-4-0414 and GLM-Z1 (model_type ``glm4``).
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
from glmdesk.engine import families
from glmdesk.engine.families.files import (  # noqa: F401 (named here by the converter and tests)
    declared_tokenizer,
    is_chatglm_config,
    is_tiktoken_file,
    rope_ratio,
)

#: Every name :func:`detect_family` returns (the registry's families' variants).
FAMILIES = tuple(v for v in families.variants() if v not in ("generic", "hub", "embedded", "remote"))
#: Families in THUDM's original layout, converted before loading.
ORIGINAL_FAMILIES = frozenset(v for f in families.FAMILIES if f.converted for v in f.variants)
#: Families whose tokenizer is :class:`~glmdesk.engine.formats.chatglm_tokenizer.ChatGLMTokenizer`.
SENTENCEPIECE_FAMILIES = frozenset(v for f in families.FAMILIES if f.sentencepiece for v in f.variants)

#: Written into every converted folder by :func:`~glmdesk.engine.chatglm.convert.convert_checkpoint`;
#: its presence marks a complete conversion, and its ``family`` names the source's family.
MARKER_FILE = "glmdesk_conversion.json"


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
    family = families.recognise_folder(config, p)
    if family is not None:
        return family
    raise GlmdeskError(
        "not_a_model",
        f"The config.json in {p} names no model type, so glmdesk cannot tell what model it is.",
        path=str(p),
    )
