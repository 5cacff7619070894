"""Mapping between :mod:`glmdesk.core.history_types` values and database rows."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from glmdesk.core.history_types import (
    MESSAGE_KINDS,
    Conversation,
    GenerationStats,
    StoredMessage,
    decode_text,
    encode_text,
    settings_dict,
)
from glmdesk.core.text import storable_text
from glmdesk.core.tools import ToolCall

CONV_COLS = "id, title, created, updated, model, deleted"
MSG_COLS = (
    "id, conversation_id, role, text, text_raw, created, updated, state, finish_reason, model, settings, "
    "ttft_s, tokens_per_s, n_tokens, prompt_tokens, dropped_tokens, dropped_messages, kind, tool, data, "
    "parent_id, reasoning, answer_ttft_s, reasoning_tokens"
)
#: Every message column but ``id``, ``conversation_id`` and ``parent_id`` (copies and imports).
COPY_COLS = MSG_COLS.split(", ", 2)[2].replace(", parent_id", "")
STATS_ASSIGN = (
    "finish_reason = ?, ttft_s = ?, tokens_per_s = ?, n_tokens = ?, prompt_tokens = ?, "
    "dropped_tokens = ?, dropped_messages = ?, answer_ttft_s = ?, reasoning_tokens = ?"
)
TITLE_CHARS = 60


def to_conversation(row: tuple[Any, ...]) -> Conversation:
    """Row of ``CONV_COLS`` -> :class:`Conversation`."""
    return Conversation(*row)


def to_message(row: tuple[Any, ...]) -> StoredMessage:
    """Row of ``MSG_COLS`` -> :class:`StoredMessage` (exact text restored)."""
    (
        mid,
        cid,
        role,
        text,
        raw,
        created,
        updated,
        state,
        finish,
        model,
        settings,
        ttft_s,
        tokens_per_s,
        n_tokens,
        prompt_tokens,
        dropped_tokens,
        dropped_messages,
        kind,
        tool,
        data,
        parent,
        reasoning,
        answer_ttft,
        reasoning_tokens,
    ) = row
    settings_value = None if settings is None else json.loads(settings)
    stats_value = GenerationStats(
        ttft_s,
        tokens_per_s,
        n_tokens,
        prompt_tokens,
        dropped_tokens,
        tuple(json.loads(dropped_messages or "[]")),
        answer_ttft_s=answer_ttft,
        reasoning_tokens=reasoning_tokens,
    )
    kind = kind or "text"
    tool_value = None if tool is None else json.loads(tool)
    call = ToolCall.from_dict(tool_value) if kind == "tool_call" and tool_value else None
    name = str(tool_value.get("name", "")) if kind in ("observation", "image") and tool_value else ""
    if kind in ("observation", "image"):
        role = "observation"
    return StoredMessage(
        mid,
        cid,
        role,
        decode_text(text, raw),
        created,
        updated,
        state,
        finish,
        model,
        settings_value,
        stats_value,
        kind,
        call,
        name,
        None if data is None else bytes(data),
        parent,
        reasoning or "",
    )


def db_role(role: str, kind: str) -> str:
    """The ``role`` column for a message (observations and images are stored as 'user')."""
    return "user" if kind in ("observation", "image") else role


def kind_params(kind: str, tool_call: ToolCall | None, tool_name: str, image: bytes | None) -> tuple:
    """``(kind, tool, data)`` column values.

    Raises:
        ValueError: for an unknown kind or a kind without its payload.
    """
    if kind not in MESSAGE_KINDS:
        raise ValueError(f"unknown message kind {kind!r}; expected one of {MESSAGE_KINDS}")
    if kind == "tool_call":
        if tool_call is None:
            raise ValueError("a tool_call message needs its call")
        return kind, json.dumps(tool_call.to_dict(), ensure_ascii=False, allow_nan=False), None
    data = None
    if kind == "image":
        if not image:
            raise ValueError("an image message needs its PNG bytes")
        data = bytes(image)
    tool = json.dumps({"name": tool_name}, ensure_ascii=False) if kind in ("observation", "image") else None
    return kind, tool, data


#: Characters of a message read for its title before reading all of it (a 2 MB message
#: took 137 ms to split into lines, on the history writer's thread, holding the GIL).
TITLE_SCAN_CHARS = 4096


def auto_title(text: str) -> str:
    """First non-blank line of ``text``, at most ``TITLE_CHARS`` characters."""
    head = text[:TITLE_SCAN_CHARS]
    lines = head.splitlines()
    for n, raw in enumerate(lines):
        line = raw.strip()
        if not line:
            continue
        cut_short = len(head) < len(text) and n == len(lines) - 1  # the line may go on
        if not cut_short or len(line) > TITLE_CHARS:
            return _title(storable_text(line))
        break
    if len(head) == len(text):
        return ""
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return _title(storable_text(line))


def _title(line: str) -> str:
    return line if len(line) <= TITLE_CHARS else line[: TITLE_CHARS - 1].rstrip() + "…"


def settings_json(settings: Any) -> str | None:
    """Sampling settings (dataclass or mapping) -> JSON text, or ``None``.

    Raises:
        TypeError: for another type or values JSON cannot hold.
        ValueError: for NaN or infinite numbers.
    """
    value = settings_dict(settings)
    return None if value is None else json.dumps(value, sort_keys=True, allow_nan=False)


def stats_params(finish_reason: str | None, stats: GenerationStats | None) -> tuple[Any, ...]:
    """Parameters for ``STATS_ASSIGN``."""
    s = stats or GenerationStats()
    dropped = json.dumps(list(s.dropped_messages))
    return (
        finish_reason, s.ttft_s, s.tokens_per_s, s.n_tokens, s.prompt_tokens, s.dropped_tokens, dropped,
        s.answer_ttft_s, s.reasoning_tokens,
    )  # fmt: skip


def reasoning_param(reasoning: str) -> str | None:
    """The ``reasoning`` column's value: clean text (lone surrogates and NULs become
    U+FFFD, as for titles), ``None`` when there is none."""
    return storable_text(reasoning) if reasoning else None


def copy_params(item: dict[str, Any]) -> tuple[Any, ...]:
    """Parameters for ``COPY_COLS`` from a dict made by ``history_io.parse_json``."""
    stored, raw = encode_text(item["text"])
    (finish, *stats) = stats_params(item["finish_reason"], item["stats"])
    kind = item.get("kind", "text")
    extra = kind_params(kind, item.get("tool_call"), item.get("tool_name", ""), item.get("image"))
    return (
        db_role(item["role"], kind), stored, raw, item["created"], item["updated"], item["state"], finish,
        item["model"], settings_json(item["settings"]), *stats[:6], *extra,
        reasoning_param(item.get("reasoning", "")), *stats[6:],
    )  # fmt: skip


def inserted_id(cursor: sqlite3.Cursor) -> int:
    """The row id an ``INSERT`` just gave (``cursor.lastrowid``, which sqlite3 types as
    optional: it is ``None`` only for statements that insert nothing).

    Raises:
        RuntimeError: when the statement inserted no row.
    """
    if cursor.lastrowid is None:
        raise RuntimeError("The history statement inserted no row.")
    return cursor.lastrowid
