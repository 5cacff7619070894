"""Each conversation's own settings (schema version 9): ``conversations.chat_settings`` holds
a JSON object, one key per setting, so that a new per-chat setting needs no new migration.

Keys in use: ``keep_thinking`` (bool: earlier turns' thinking stays in the prompt, the
template's ``clear_thinking`` negated), ``documents`` (the documents and library folders on
in this chat), ``mcp`` (the MCP servers and tools on in this chat). A key never set reads as
absent and the caller falls back to its own default (the model's, the app's).
Mixed into :class:`~glmdesk.core.history.History`.
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from glmdesk.core.history_errors import storage_errors


def add_column(conn: sqlite3.Connection) -> None:
    """Migration to schema version 9: the ``chat_settings`` column (added only when missing)."""
    have = {r[1] for r in conn.execute("PRAGMA table_info(conversations)")}
    if "chat_settings" not in have:
        conn.execute("ALTER TABLE conversations ADD COLUMN chat_settings TEXT")


def parse_chat_settings(value: object) -> dict[str, Any]:
    """A stored value as a dict (NULL, damaged JSON or a non-object: ``{}``)."""
    if not isinstance(value, str):
        return {}
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


class ChatSettings:
    """The per-chat settings methods of :class:`~glmdesk.core.history.History` (needs
    ``_conn`` and ``transaction``)."""

    _conn: sqlite3.Connection

    if TYPE_CHECKING:  # provided by History

        def transaction(self) -> AbstractContextManager[None]: ...

    @storage_errors
    def chat_settings(self, conversation_id: int) -> dict[str, Any]:
        """The conversation's settings (``{}`` when none was ever set).

        Raises:
            KeyError: for an unknown conversation.
        """
        row = self._conn.execute(
            "SELECT chat_settings FROM conversations WHERE id = ?", (conversation_id,)
        ).fetchone()
        if row is None:
            raise KeyError(f"no conversation {conversation_id}")
        return parse_chat_settings(row[0])

    @storage_errors
    def set_chat_setting(self, conversation_id: int, key: str, value: Any) -> None:
        """Set one setting of the conversation (``value`` JSON-serialisable; ``None``
        removes the key, so the default applies again).

        Raises:
            KeyError: for an unknown conversation.
            TypeError: when ``value`` cannot be written as JSON.
        """
        with self.transaction():
            settings = self.chat_settings(conversation_id)
            if value is None:
                settings.pop(key, None)
            else:
                settings[key] = value
            text = json.dumps(settings, ensure_ascii=False, sort_keys=True) if settings else None
            self._conn.execute(
                "UPDATE conversations SET chat_settings = ? WHERE id = ?", (text, conversation_id)
            )
