"""Tool calls, observations and images in the history (mixed into :class:`History`),
and each conversation's Tools section (``conversations.tools``, schema version 5).

Each is a message of its own kind (``messages.kind``, schema version 3, see
:mod:`glmdesk.core.history_schema`): an assistant message that made a call, the
tool's result (an observation), and an image a tool returned (PNG bytes).
"""

from __future__ import annotations

import sqlite3
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from glmdesk.core.history_errors import storage_errors
from glmdesk.core.history_rows import kind_params
from glmdesk.core.history_types import GenerationStats
from glmdesk.core.tools import ConversationTools, ToolCall


class ToolMessages:
    """The tool-message methods of :class:`~glmdesk.core.history.History` (needs its
    ``transaction``, ``_insert`` and ``_finish_fields``)."""

    _conn: sqlite3.Connection

    if TYPE_CHECKING:  # provided by History and MessageStore (declared only for type
        # checkers, so that they never shadow the real methods in History's method order)

        def transaction(self) -> AbstractContextManager[None]: ...

        def _insert(
            self,
            conversation_id: int,
            role: str,
            text: str,
            state: str,
            model: str | None,
            settings: Any,
            extra: tuple[Any, ...] = ("text", None, None),
            parent_id: Any = ...,
        ) -> int: ...

        def _finish_fields(
            self, message_id: int, finish_reason: str | None, stats: GenerationStats | None
        ) -> None: ...

    @storage_errors
    def add_tool_call(
        self,
        conversation_id: int,
        call: ToolCall,
        text: str = "",
        *,
        model: str | None = None,
        settings: Any = None,
        stats: GenerationStats | None = None,
    ) -> int:
        """Append an assistant message that made a tool call (finish reason ``tool_calls``).

        Args:
            conversation_id: Conversation to append to.
            call: The call.
            text: What the assistant showed before the call (may be empty).

        Raises:
            KeyError: for an unknown conversation.
        """
        with self.transaction():
            extra = kind_params("tool_call", call, "", None)
            mid = self._insert(conversation_id, "assistant", text, "complete", model, settings, extra)
            self._finish_fields(mid, "tool_calls", stats)
        return mid

    @storage_errors
    def add_observation(self, conversation_id: int, text: str, name: str = "") -> int:
        """Append a tool's result (the observation turn the answer continues from).

        Raises:
            KeyError: for an unknown conversation.
        """
        with self.transaction():
            extra = kind_params("observation", None, name, None)
            return self._insert(conversation_id, "observation", text, "complete", None, None, extra)

    @storage_errors
    def add_image(self, conversation_id: int, png: bytes, name: str = "", text: str = "") -> int:
        """Append an image a tool returned (PNG bytes, kept exactly).

        Args:
            conversation_id: Conversation to append to.
            png: The PNG file's bytes.
            name: The tool that returned it.
            text: A caption (may be empty).

        Raises:
            KeyError: for an unknown conversation.
            ValueError: for empty bytes.
        """
        with self.transaction():
            extra = kind_params("image", None, name, png)
            return self._insert(conversation_id, "observation", text, "complete", None, None, extra)

    @storage_errors
    def set_conversation_tools(self, conversation_id: int, tools: ConversationTools) -> None:
        """Remember a conversation's Tools section (mode, functions as typed, limits).

        Raises:
            KeyError: for an unknown conversation.
        """
        with self.transaction():
            cur = self._conn.execute(
                "UPDATE conversations SET tools = ? WHERE id = ?", (tools.to_json(), conversation_id)
            )
            if cur.rowcount == 0:
                raise KeyError(f"no conversation {conversation_id}")

    @storage_errors
    def conversation_tools(self, conversation_id: int) -> ConversationTools:
        """A conversation's Tools section (no tools when never set or unreadable).

        Raises:
            KeyError: for an unknown conversation.
        """
        row = self._conn.execute(
            "SELECT tools FROM conversations WHERE id = ?", (conversation_id,)
        ).fetchone()
        if row is None:
            raise KeyError(f"no conversation {conversation_id}")
        return ConversationTools.from_json(row[0])
