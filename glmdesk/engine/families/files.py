"""What a model folder's files say, read without loading anything (no torch).

The recognisers of :mod:`glmdesk.engine.families` ask these: whether a config names
THUDM's ChatGLM code, which tokenizer a ChatGLM-layout folder declares, its
``rope_ratio``, and the markers that tell ChatGLM3 from ChatGLM2.

Sources: the ``config.json`` and ``tokenization_chatglm.py`` files of THUDM's
chatglm2-6b, chatglm2-6b-32k, chatglm3-6b, chatglm3-6b-32k, chatglm3-6b-128k,
glm-4-9b-chat and glm-4-9b-chat-hf repositories.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

_CHATGLM_CLASSES = ("ChatGLMModel", "ChatGLMForConditionalGeneration", "ChatGLMForSequenceClassification")
_CHATGLM3_MARKERS = ("<|user|>", "<|observation|>")


def is_chatglm_config(config: Mapping[str, Any]) -> bool:
    """True when the config names THUDM's ChatGLM code (any generation)."""
    if config.get("model_type") == "chatglm":
        return True
    names = list(config.get("architectures") or [])
    auto_map = config.get("auto_map") or {}
    if isinstance(auto_map, dict):
        names += [str(v) for v in auto_map.values()]
    return any(any(cls in str(n) for cls in _CHATGLM_CLASSES) for n in names)


def rope_ratio(config: Mapping[str, Any]) -> float:
    """The config's ``rope_ratio`` (1.0 when absent or null)."""
    value = config.get("rope_ratio")
    return float(value) if value else 1.0


def is_v1_config(config: Mapping[str, Any]) -> bool:
    """True for a first-generation ChatGLM-6B config (2D positions, 130528/150528 ids)."""
    if "position_encoding_2d" in config or "inner_hidden_size" in config:
        return True
    return "padded_vocab_size" not in config and config.get("vocab_size") in (130528, 150528)


def read_text(file: Path, limit: int = 2_000_000) -> str:
    """The first ``limit`` characters of a text file (``""`` when it cannot be read)."""
    try:
        with file.open("r", encoding="utf-8", errors="replace") as f:
            return f.read(limit)
    except OSError:
        return ""


def read_json(file: Path) -> dict[str, Any]:
    """A JSON object file as a dict (``{}`` when missing, unreadable or not an object)."""
    try:
        value = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return {}
    return value if isinstance(value, dict) else {}


def chat_template_text(folder: Path) -> str:
    """The chat template a Hugging Face folder ships (``chat_template.jinja``, else
    ``tokenizer_config.json``'s ``chat_template``); ``""`` when none."""
    jinja = read_text(folder / "chat_template.jinja")
    if jinja:
        return jinja
    template = read_json(folder / "tokenizer_config.json").get("chat_template")
    return template if isinstance(template, str) else ""


def looks_chatglm3(folder: Path, config: Mapping[str, Any]) -> bool:
    """Whether a ChatGLM2/3-layout folder is ChatGLM3: its tokenizer files mention the
    role tokens, else its ``_name_or_path``, else ``rope_ratio >= 50``."""
    # Reading (never running) the tokenizer files is the strongest signal: the
    # ChatGLM3 tokenizer defines the role tokens, ChatGLM2's does not.
    for name in ("tokenizer_config.json", "tokenization_chatglm.py"):
        if any(m in read_text(folder / name) for m in _CHATGLM3_MARKERS):
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


#: The tokens that end a ChatGLM3 or GLM-4 reply besides eos (THUDM generation_config.json).
ROLE_END_TOKENS = ("<|endoftext|>", "<|user|>", "<|observation|>")
#: GLM's role tokens (ChatGLM3 and every GLM-4).
ROLE_TOKENS = ("<|system|>", "<|user|>", "<|assistant|>", "<|observation|>")


def has_role_tokens(lookup) -> bool:
    """Whether a vocabulary (``lookup(text) -> id or None``) has all of GLM's role tokens."""
    return all(lookup(name) is not None for name in ROLE_TOKENS)


def chatglm_generation(config: Mapping[str, Any], folder: Path) -> str | None:
    """Which generation a THUDM-layout folder holds: ``chatglm-v1``, ``glm4``,
    ``chatglm3`` or ``chatglm2``; ``None`` when the config does not name ChatGLM code.

    GLM-4 is told from ChatGLM2/3 by the tokenizer the folder declares
    (:func:`declared_tokenizer`), and only when it declares none by the vocabulary size
    (100K+ ids); ChatGLM3 from ChatGLM2 by :func:`looks_chatglm3`.
    """
    if not is_chatglm_config(config):
        return None
    if is_v1_config(config):
        return "chatglm-v1"
    declared = declared_tokenizer(folder)
    vocab = int(config.get("padded_vocab_size") or config.get("vocab_size") or 0)
    if declared == "tiktoken" or (declared is None and vocab >= 100_000):
        return "glm4"
    return "chatglm3" if looks_chatglm3(folder, config) else "chatglm2"
