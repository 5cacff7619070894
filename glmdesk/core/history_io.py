"""Export conversations as JSON and read the JSON back (Markdown: :mod:`glmdesk.core.history_markdown`).

JSON format (``"format": "glmdesk-conversation"``, ``"version": 4``)::

    {"format": "glmdesk-conversation", "version": 4,
     "conversation": {"title": str, "created": s, "updated": s, "model": str | null,
                      "active": int | null,
                      "tools": {"mode", "functions", "max_rounds", "timeout_s"}},
     "messages": [{"parent": int | null, "role": str, "text": str, "created": s, "updated": s,
                   "state": "partial" | "complete", "finish_reason": str | null,
                   "model": str | null, "settings": {...} | null,
                   "stats": {"ttft_s": s, "tokens_per_s": tokens/s, "n_tokens": int,
                             "prompt_tokens": int, "dropped_tokens": int,
                             "dropped_messages": [int], "answer_ttft_s": s,
                             "reasoning_tokens": int},
                   "reasoning": str (an answer's thinking, only when it has some),
                   "text_b64": str (only when needed, see below),
                   "kind": "text" | "tool_call" | "observation" | "image",
                   "tool_call": {"name", "arguments", "raw", "kind", "call_id"} (tool_call),
                   "tool_name": str (observation, image),
                   "image_b64": str, base64 of the PNG file (image),
                   "attachments": [{"name", "mime", "data_b64"}] (a user message's images),
                   "documents": [str] (the paths of the documents a user message was given)}]}

Version 3 holds the whole tree of a conversation (see :mod:`glmdesk.core.history_tree`):
messages are listed parents first; ``parent`` is the index in ``messages`` of the
message each one follows (``null`` for a first message) and ``active`` the index of
the last message of the branch on screen. Version 4 adds the conversation's Tools
section, ``tools`` (see :mod:`glmdesk.core.history_io_tools`); an answer's
``reasoning`` and its ``answer_ttft_s`` / ``reasoning_tokens`` statistics are optional
fields of version 4 (older readers skip them), and so is a question's ``documents``. Older files are still
read: version 3 without ``tools`` (no tools offered), version 1 (no tool messages)
and version 2 (tool messages), which hold a single branch without ``parent`` or
``active``, so each message follows the one before it.

Times are seconds since the Unix epoch. Database ids are not exported, so
``export_json(import_json(x)) == x``. Lone surrogates are written as ``\\uXXXX``
escapes; a high surrogate directly followed by a low one would read back as the
single character the pair encodes (that is what the escapes mean in JSON), so such
text also gets ``text_b64``, the base64 of its UTF-8 with ``surrogatepass``, which
import prefers. NUL and other control characters are escaped by ``json``.
"""

from __future__ import annotations

import base64
import codecs
import json
import math
import re
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from glmdesk.core.history_documents import DocumentUse, parse_documents
from glmdesk.core.history_images import attachments_json, parse_attachments
from glmdesk.core.history_io_tools import parse_tools, tools_json
from glmdesk.core.history_types import (
    MESSAGE_KINDS,
    STAT_NAMES,
    STATES,
    Conversation,
    GenerationStats,
    StoredMessage,
)
from glmdesk.core.images import ImageAttachment
from glmdesk.core.messages import FINISH_REASONS, ROLES
from glmdesk.core.tools import ConversationTools, ToolCall

FORMAT = "glmdesk-conversation"
VERSION = 4

_SURROGATE = re.compile("[\ud800-\udfff]")
_PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")
_STAT_NAMES = (*STAT_NAMES, "answer_ttft_s", "reasoning_tokens")


def _message_json(
    message: StoredMessage,
    parent: int | None,
    images: Sequence[ImageAttachment] = (),
    documents: Sequence[DocumentUse] = (),
) -> dict[str, Any]:
    stats = message.stats
    item: dict[str, Any] = {
        "parent": parent,
        "role": message.role,
        "text": message.text,
        "created": message.created,
        "updated": message.updated,
        "state": message.state,
        "finish_reason": message.finish_reason,
        "model": message.model,
        "settings": message.settings,
        "stats": {name: getattr(stats, name) for name in _STAT_NAMES}
        | {"dropped_messages": list(stats.dropped_messages)},
    }
    if _PAIR.search(message.text):
        item["text_b64"] = base64.b64encode(message.text.encode("utf-8", "surrogatepass")).decode("ascii")
    if message.kind != "text":
        item["kind"] = message.kind
    if message.reasoning:
        item["reasoning"] = message.reasoning
    if message.tool_call is not None:
        item["tool_call"] = message.tool_call.to_dict()
    if message.kind in ("observation", "image"):
        item["tool_name"] = message.tool_name
    if message.image is not None:
        item["image_b64"] = base64.b64encode(message.image).decode("ascii")
    if images:
        item["attachments"] = attachments_json(images)
    if documents:
        item["documents"] = [d.path for d in documents]
    return item


def to_json(
    conversation: Conversation,
    messages: Sequence[StoredMessage],
    active_leaf: int | None = None,
    tools: ConversationTools | None = None,
    images: Mapping[int, Sequence[ImageAttachment]] | None = None,
    documents: Mapping[int, Sequence[DocumentUse]] | None = None,
) -> str:
    """Serialize a conversation losslessly (see the module docstring); returns valid UTF-8 text.

    Args:
        conversation: Its header.
        messages: Every message, parents before children (``parent_id`` links them;
            a parent missing from ``messages`` makes a message a first one).
        active_leaf: Id of the last message of the branch on screen, or ``None``.
        tools: Its Tools section (``None``: no tools).
        images: Each user message's attached images by message id (embedded).
        documents: Each user message's documents by message id (their paths, not their text).
    """
    index = {m.id: i for i, m in enumerate(messages)}
    images = images or {}
    documents = documents or {}
    document = {
        "format": FORMAT,
        "version": VERSION,
        "conversation": {
            "title": conversation.title,
            "created": conversation.created,
            "updated": conversation.updated,
            "model": conversation.model,
            "active": index.get(active_leaf) if active_leaf is not None else None,
            "tools": tools_json(tools or ConversationTools()),
        },
        "messages": [
            _message_json(
                m,
                None if m.parent_id is None else index.get(m.parent_id),
                images.get(m.id, ()),
                documents.get(m.id, ()),
            )
            for m in messages
        ],
    }
    text = json.dumps(document, ensure_ascii=False, indent=1, allow_nan=False)
    # Raw surrogates can only sit inside JSON strings: escaping them keeps the JSON valid.
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _number(value: Any, name: str, default: float | None) -> float | None:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{name} must be a number, not {value!r}.")
    return value


def _optional_str(value: Any, name: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise ValueError(f"{name} must be text or null, not {value!r}.")
    return value


_BOMS = (  # longest first: the UTF-32 LE mark begins with the UTF-16 LE one
    (codecs.BOM_UTF32_LE, "utf-32-le", "UTF-32"),
    (codecs.BOM_UTF32_BE, "utf-32-be", "UTF-32"),
    (codecs.BOM_UTF8, "utf-8", "UTF-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le", "UTF-16"),
    (codecs.BOM_UTF16_BE, "utf-16-be", "UTF-16"),
)

#: Largest export file read, in bytes (a conversation of a million characters is ~4 MB).
MAX_IMPORT_BYTES = 256 * 1024 * 1024


def decode_export(data: bytes) -> str:
    """The text of an exported conversation as an editor may have saved it back.

    Accepts UTF-8 with or without a byte order mark, and UTF-16 or UTF-32 with one
    (what Windows editors write as "Unicode"); line ends, indentation, key order,
    ``\\uXXXX`` escapes and a trailing newline are JSON's business and need nothing
    here.

    Raises:
        ValueError: a sentence naming the problem (empty, not text, an encoding
            other than UTF-8/16/32).
    """
    if not data.strip():
        raise ValueError("The file is empty.")
    for bom, codec, name in _BOMS:
        if data.startswith(bom):
            try:
                return data[len(bom) :].decode(codec)
            except UnicodeDecodeError as exc:
                raise ValueError(
                    f"The file starts with a {name} byte order mark but is not {name} text "
                    f"(byte {exc.start} cannot be read)."
                ) from exc
    if b"\x00" in data[:4096]:
        raise ValueError(
            "The file is not text (it contains NUL bytes); choose a .json file exported by glmdesk."
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"The file is not UTF-8 text (byte 0x{data[exc.start]:02X} at position {exc.start}); "
            "save it as UTF-8 and import it again."
        ) from exc


def read_export(path: str | Path) -> str:
    """Read an exported conversation file (see :func:`decode_export`).

    Raises:
        OSError: when the file cannot be read.
        ValueError: a sentence naming the problem, also for a file over
            :data:`MAX_IMPORT_BYTES` or a folder.
    """
    path = Path(path)
    if path.is_dir():
        raise ValueError("It is a folder, not an exported conversation file.")
    size = path.stat().st_size
    if size > MAX_IMPORT_BYTES:
        raise ValueError(f"The file is {size / 2**20:.0f} MiB, larger than any conversation export.")
    return decode_export(path.read_bytes())


def parse_json(text: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Validate an exported conversation.

    Returns:
        The conversation header (title, created, updated, model, ``active``: index of
        the active leaf or ``None``, ``tools``: a :class:`ConversationTools` or ``None``,
        ``tools_note``: an :class:`~glmdesk.core.errors.ErrorInfo` when the Tools
        section could not be used as it is, else ``None``) and the messages as dicts
        with the columns of :class:`StoredMessage` (``stats`` as a
        :class:`GenerationStats`) and ``parent`` (index of an earlier message, or ``None``).

    Raises:
        ValueError: with a sentence saying what is wrong, for anything but a
            conversation exported by glmdesk (JSON format version 1 to 4). A Tools
            section that cannot be used is not one: it gives ``tools_note``.
    """
    try:
        document = json.loads(text.removeprefix("\ufeff"))  # a byte order mark read as text
    except json.JSONDecodeError as exc:
        raise ValueError(f"This file is not valid JSON ({exc}).") from exc
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise ValueError("This file is not a conversation exported by glmdesk.")
    version = document.get("version")
    if not isinstance(version, int) or not 1 <= version <= VERSION:
        raise ValueError(
            f"This conversation uses export format {version!r}; this glmdesk reads 1 to {VERSION}."
        )
    header = document.get("conversation")
    items = document.get("messages")
    if not isinstance(header, dict) or not isinstance(items, list):
        raise ValueError("The file has no conversation or no message list.")
    now = time.time()
    conv = {
        "title": _optional_str(header.get("title"), "title") or "",
        "created": _number(header.get("created"), "created", now),
        "model": _optional_str(header.get("model"), "model"),
    }
    conv["updated"] = _number(header.get("updated"), "updated", conv["created"])
    conv["tools"], conv["tools_note"] = parse_tools(header.get("tools"), conv["title"])
    messages = [_parse_message(i, item, now) for i, item in enumerate(items)]
    single_branch = version < 3 and all("parent" not in item for item in items)
    if single_branch:  # versions 1 and 2: each message follows the one before it
        for i, message in enumerate(messages):
            message["parent"] = i - 1 if i > 0 else None
    default_active = len(messages) - 1 if messages else None
    conv["active"] = _index(header.get("active", default_active), "The active message", len(messages))
    if single_branch:
        conv["active"] = default_active
    return conv, messages


def _index(value: Any, what: str, count: int) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < count:
        raise ValueError(f"{what} refers to message {value!r}, which the file does not have.")
    return value


def _parse_message(index: int, item: Any, now: float) -> dict[str, Any]:
    where = f"Message {index + 1}"
    if not isinstance(item, dict):
        raise ValueError(f"{where} is not an object.")
    role, text = item.get("role"), item.get("text")
    if role not in ROLES:
        raise ValueError(f"{where} has an unknown role {role!r}.")
    if not isinstance(text, str):
        raise ValueError(f"{where} has no text.")
    if isinstance(item.get("text_b64"), str):
        text = base64.b64decode(item["text_b64"]).decode("utf-8", "surrogatepass")
    state = item.get("state", "complete")
    finish = item.get("finish_reason")
    if state not in STATES:
        raise ValueError(f"{where} has an unknown state {state!r}.")
    if finish is not None and finish not in FINISH_REASONS:
        raise ValueError(f"{where} has an unknown finish reason {finish!r}.")
    settings = item.get("settings")
    if settings is not None and not isinstance(settings, dict):
        raise ValueError(f"{where} has settings that are not an object.")
    raw_stats = item.get("stats") or {}
    if not isinstance(raw_stats, dict):
        raise ValueError(f"{where} has statistics that are not an object.")
    # JSON numbers, int or float as written (a count written as 3.0 stays a float); finite
    # here, and GenerationStats checks their sign.
    numbers: dict[str, Any] = {name: _number(raw_stats.get(name), name, None) for name in _STAT_NAMES}
    try:
        stats = GenerationStats(
            **numbers,
            dropped_messages=tuple(raw_stats.get("dropped_messages") or ()),
        )
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{where} has invalid statistics: {exc}") from exc
    created = _number(item.get("created"), "created", now)
    tool_fields = _parse_tool_fields(where, role, item)
    if item.get("attachments") and role != "user":
        raise ValueError(f"{where} is a {role} message with attached images; only user messages have them.")
    reasoning = item.get("reasoning") or ""
    if not isinstance(reasoning, str) or reasoning and role != "assistant":
        raise ValueError(f"{where} has reasoning that is not an assistant's text.")
    return tool_fields | {
        "parent": _index(item.get("parent"), f"{where}'s parent", index),  # parents come first
        "role": role,
        "text": text,
        "created": created,
        "updated": _number(item.get("updated"), "updated", created),
        "state": state,
        "finish_reason": finish,
        "model": _optional_str(item.get("model"), "model"),
        "settings": settings,
        "stats": stats,
        "attachments": parse_attachments(where, item.get("attachments")),
        "documents": parse_documents(item.get("documents")) if role == "user" else (),
        "reasoning": reasoning,
    }


def _parse_tool_fields(where: str, role: str, item: dict[str, Any]) -> dict[str, Any]:
    """``kind``, ``tool_call``, ``tool_name`` and ``image`` of an exported message.

    Raises:
        ValueError: with a sentence, for an inconsistent tool message.
    """
    kind = item.get("kind", "observation" if role == "observation" else "text")
    if kind not in MESSAGE_KINDS:
        raise ValueError(f"{where} has an unknown kind {kind!r}.")
    expected = {"tool_call": "assistant", "observation": "observation", "image": "observation"}.get(kind)
    if expected is not None and role != expected or expected is None and role == "observation":
        raise ValueError(f"{where} is a {kind} message with the role {role!r}.")
    out: dict[str, Any] = {"kind": kind, "tool_call": None, "tool_name": "", "image": None}
    if kind == "tool_call":
        try:
            out["tool_call"] = ToolCall.from_dict(item.get("tool_call"))
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from exc
    if kind in ("observation", "image"):
        out["tool_name"] = _optional_str(item.get("tool_name"), "tool_name") or ""
    if kind == "image":
        try:
            out["image"] = base64.b64decode(item.get("image_b64") or "", validate=True)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"{where} has an image that is not base64.") from exc
        if not out["image"]:
            raise ValueError(f"{where} is an image message without an image.")
    return out
