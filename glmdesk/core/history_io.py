"""Export conversations as Markdown and JSON, and read the JSON back.

JSON format (``"format": "glmdesk-conversation"``, ``"version": 2``)::

    {"format": "glmdesk-conversation", "version": 2,
     "conversation": {"title": str, "created": s, "updated": s, "model": str | null,
                      "active": int | null},
     "messages": [{"parent": int | null, "role": str, "text": str, "created": s, "updated": s,
                   "state": "partial" | "complete", "finish_reason": str | null,
                   "model": str | null, "settings": {...} | null,
                   "stats": {"ttft_s": s, "tokens_per_s": tokens/s, "n_tokens": int,
                             "prompt_tokens": int, "dropped_tokens": int,
                             "dropped_messages": [int]},
                   "text_b64": str (only when needed, see below)}]}

Version 2 holds the whole tree of a conversation (see :mod:`glmdesk.core.history_tree`):
messages are listed parents first; ``parent`` is the index in ``messages`` of the
message each one follows (``null`` for a first message) and ``active`` the index of
the last message of the branch on screen. Version 1 (a single branch, no ``parent``
or ``active``) is still read: each message then follows the one before it.

Times are seconds since the Unix epoch. Database ids are not exported, so
``export_json(import_json(x)) == x``. Lone surrogates are written as ``\\uXXXX``
escapes; a high surrogate directly followed by a low one would read back as the
single character the pair encodes (that is what the escapes mean in JSON), so such
text also gets ``text_b64``, the base64 of its UTF-8 with ``surrogatepass``, which
import prefers. NUL and other control characters are escaped by ``json``.
"""

from __future__ import annotations

import base64
import json
import math
import re
import time
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from glmdesk.core.history_types import (
    FINISH_REASONS,
    STATES,
    Conversation,
    GenerationStats,
    StoredMessage,
    clean_text,
)
from glmdesk.core.messages import ROLES

FORMAT = "glmdesk-conversation"
VERSION = 2

#: English labels used by :func:`to_markdown`; the UI passes translated ones.
MARKDOWN_LABELS = {
    "system": "System",
    "user": "User",
    "assistant": "Assistant",
    "untitled": "Untitled",
    "partial": "(unfinished)",
    "cancelled": "(stopped)",
    "error": "(failed)",
}

_SURROGATE = re.compile("[\ud800-\udfff]")
_PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")
_STAT_NAMES = ("ttft_s", "tokens_per_s", "n_tokens", "prompt_tokens", "dropped_tokens")


def to_markdown(
    conversation: Conversation, messages: Sequence[StoredMessage], labels: Mapping[str, str] | None = None
) -> str:
    """Render a conversation as Markdown (valid UTF-8: NULs and lone surrogates become U+FFFD).

    Args:
        conversation: Its header.
        messages: Its messages in order.
        labels: Headings and markers keyed as :data:`MARKDOWN_LABELS` (missing keys
            fall back to English).
    """
    words = {**MARKDOWN_LABELS, **(labels or {})}
    when = datetime.fromtimestamp(conversation.created).astimezone().strftime("%Y-%m-%d %H:%M")
    lines = [f"# {clean_text(conversation.title) or words['untitled']}", ""]
    lines += [f"_{when}" + (f" · {conversation.model}_" if conversation.model else "_"), ""]
    for message in messages:
        heading = f"### {words[message.role]}"
        if not message.complete:
            heading += f" {words['partial']}"
        elif message.finish_reason in ("cancelled", "error"):
            heading += f" {words[message.finish_reason]}"
        lines += [heading, "", clean_text(message.text), ""]
    return "\n".join(lines)


def _message_json(message: StoredMessage, parent: int | None) -> dict[str, Any]:
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
    return item


def to_json(
    conversation: Conversation, messages: Sequence[StoredMessage], active_leaf: int | None = None
) -> str:
    """Serialize a conversation losslessly (see the module docstring); returns valid UTF-8 text.

    Args:
        conversation: Its header.
        messages: Every message, parents before children (``parent_id`` links them;
            a parent missing from ``messages`` makes a message a first one).
        active_leaf: Id of the last message of the branch on screen, or ``None``.
    """
    index = {m.id: i for i, m in enumerate(messages)}
    document = {
        "format": FORMAT,
        "version": VERSION,
        "conversation": {
            "title": conversation.title,
            "created": conversation.created,
            "updated": conversation.updated,
            "model": conversation.model,
            "active": index.get(active_leaf) if active_leaf is not None else None,
        },
        "messages": [_message_json(m, index.get(m.parent_id)) for m in messages],
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


def parse_json(text: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Validate an exported conversation.

    Returns:
        The conversation header (title, created, updated, model, ``active``: index of
        the active leaf or ``None``) and the messages as dicts with the columns of
        :class:`StoredMessage` (``stats`` as a :class:`GenerationStats`) and ``parent``
        (index of an earlier message, or ``None``).

    Raises:
        ValueError: with a sentence saying what is wrong, for anything but a
            conversation exported by glmdesk (JSON format version 1 or 2).
    """
    try:
        document = json.loads(text)
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
    messages = [_parse_message(i, item, now) for i, item in enumerate(items)]
    if version == 1:  # one branch: each message follows the one before it
        for i, message in enumerate(messages):
            message["parent"] = i - 1 if i > 0 else None
    default_active = len(messages) - 1 if messages else None
    conv["active"] = _index(header.get("active", default_active), "The active message", len(messages))
    if version == 1:
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
    try:
        stats = GenerationStats(
            **{name: _number(raw_stats.get(name), name, None) for name in _STAT_NAMES},
            dropped_messages=tuple(raw_stats.get("dropped_messages") or ()),
        )
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{where} has invalid statistics: {exc}") from exc
    created = _number(item.get("created"), "created", now)
    return {
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
    }
