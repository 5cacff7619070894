"""Mapping between :mod:`glmdesk.core.history_types` values and database rows."""

from __future__ import annotations

import json
from typing import Any

from glmdesk.core.history_types import (
    Conversation,
    GenerationStats,
    StoredMessage,
    clean_text,
    decode_text,
    encode_text,
    settings_dict,
)

CONV_COLS = "id, title, created, updated, model, deleted"
MSG_COLS = (
    "id, conversation_id, role, text, text_raw, created, updated, state, finish_reason, model, settings, "
    "ttft_s, tokens_per_s, n_tokens, prompt_tokens, dropped_tokens, dropped_messages, parent_id"
)
#: Every message column but ``id``, ``conversation_id`` and ``parent_id`` (copies and imports).
COPY_COLS = MSG_COLS.split(", ", 2)[2].removesuffix(", parent_id")
STATS_ASSIGN = (
    "finish_reason = ?, ttft_s = ?, tokens_per_s = ?, n_tokens = ?, prompt_tokens = ?, "
    "dropped_tokens = ?, dropped_messages = ?"
)
TITLE_CHARS = 60


def to_conversation(row: tuple[Any, ...]) -> Conversation:
    """Row of ``CONV_COLS`` -> :class:`Conversation`."""
    return Conversation(*row)


def to_message(row: tuple[Any, ...]) -> StoredMessage:
    """Row of ``MSG_COLS`` -> :class:`StoredMessage` (exact text restored)."""
    mid, cid, role, text, raw, created, updated, state, finish, model, settings, *stats, parent = row
    settings_value = None if settings is None else json.loads(settings)
    stats_value = GenerationStats(*stats[:5], tuple(json.loads(stats[5] or "[]")))
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
        parent,
    )


def auto_title(text: str) -> str:
    """First non-blank line of ``text``, at most ``TITLE_CHARS`` characters."""
    line = next((ln.strip() for ln in clean_text(text).splitlines() if ln.strip()), "")
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
    return (finish_reason, s.ttft_s, s.tokens_per_s, s.n_tokens, s.prompt_tokens, s.dropped_tokens, dropped)


def copy_params(item: dict[str, Any]) -> tuple[Any, ...]:
    """Parameters for ``COPY_COLS`` from a dict made by ``history_io.parse_json``."""
    stored, raw = encode_text(item["text"])
    (finish, *stats) = stats_params(item["finish_reason"], item["stats"])
    return (
        item["role"], stored, raw, item["created"], item["updated"], item["state"], finish,
        item["model"], settings_json(item["settings"]), *stats,
    )  # fmt: skip
