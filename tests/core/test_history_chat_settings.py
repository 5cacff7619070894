"""Each conversation's own settings: kept across reopening, per conversation, removable,
and a damaged value reads as none."""

from __future__ import annotations

import pytest

from glmdesk.core.history import History
from glmdesk.core.history_schema import SCHEMA_VERSION, schema_version


def test_a_chat_setting_is_kept_per_conversation_after_reopening(tmp_path) -> None:
    path = tmp_path / "history.sqlite3"
    with History(path) as history:
        first = history.create_conversation("first")
        second = history.create_conversation("second")
        history.set_chat_setting(first, "keep_thinking", True)
        history.set_chat_setting(first, "documents", {"paths": ["notes.md"]})
    with History(path) as history:
        assert schema_version(history.connection) == SCHEMA_VERSION == 9
        assert history.chat_settings(first) == {"keep_thinking": True, "documents": {"paths": ["notes.md"]}}
        assert history.chat_settings(second) == {}
        history.set_chat_setting(first, "keep_thinking", None)  # back to the model's default
        assert history.chat_settings(first) == {"documents": {"paths": ["notes.md"]}}


def test_unknown_conversations_and_damaged_values(tmp_path) -> None:
    with History(tmp_path / "h.sqlite3") as history:
        cid = history.create_conversation("x")
        history.connection.execute("UPDATE conversations SET chat_settings = '[1, 2' WHERE id = ?", (cid,))
        assert history.chat_settings(cid) == {}
        with pytest.raises(KeyError):
            history.chat_settings(cid + 100)
        with pytest.raises(KeyError):
            history.set_chat_setting(cid + 100, "keep_thinking", False)
