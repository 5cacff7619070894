"""A conversation's Tools section stored with it: schema 5, round trip, damaged values."""

from __future__ import annotations

from pathlib import Path

import pytest

from glmdesk.core.history import History
from glmdesk.core.history_schema import MIGRATIONS, connect, schema_version
from glmdesk.core.tools import ConversationTools

FUNCTIONS = '[{"name": "get_weather", "description": "天气"}]'


def test_a_version_4_database_gains_the_tools_column_and_keeps_its_conversations(tmp_path: Path) -> None:
    old = tmp_path / "v4.sqlite3"
    conn = connect(old, target=4)
    assert schema_version(conn) == 4
    assert "tools" not in {row[1] for row in conn.execute("PRAGMA table_info(conversations)")}
    conn.execute("INSERT INTO conversations (title, created, updated) VALUES ('old', 1, 1)")
    conn.execute(
        "INSERT INTO messages (conversation_id, role, text, created, updated) VALUES (1, 'user', 'hi', 1, 1)"
    )
    conn.close()
    with History(old) as h:
        assert schema_version(h.connection) == len(MIGRATIONS)
        assert h.get_conversation(1).title == "old" and [m.text for m in h.messages(1)] == ["hi"]
        assert h.conversation_tools(1) == ConversationTools()  # none until set
        h.set_conversation_tools(1, ConversationTools("interpreter", timeout_s=30.0))
        assert h.conversation_tools(1).mode == "interpreter"
    conn = connect(tmp_path / "again.sqlite3")
    MIGRATIONS[4](conn)  # runs again on a current database: nothing to do
    conn.close()


def test_tools_round_trip_per_conversation_and_survive_reopening_the_file(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite3"
    with History(path) as h:
        a, b = h.create_conversation("a"), h.create_conversation("b")
        typed = ConversationTools("functions", FUNCTIONS + "  // half typed", max_rounds=3, timeout_s=12.5)
        h.set_conversation_tools(a, typed)
        h.set_conversation_tools(b, ConversationTools("interpreter"))
    with History(path) as h:
        assert h.conversation_tools(a) == typed  # invalid JSON as typed is kept too
        assert h.conversation_tools(b) == ConversationTools("interpreter")
        with pytest.raises(KeyError):
            h.set_conversation_tools(999, typed)
        with pytest.raises(KeyError):
            h.conversation_tools(999)


def test_damaged_stored_values_open_as_no_tools(tmp_path: Path) -> None:
    with History(tmp_path / "h.sqlite3") as h:
        cid = h.create_conversation()
        for bad in ("{not json", '{"mode": "shell"}', '{"max_rounds": 0}', "[1, 2]", '{"timeout_s": "x"}'):
            h.connection.execute("UPDATE conversations SET tools = ? WHERE id = ?", (bad, cid))
            assert h.conversation_tools(cid) == ConversationTools(), bad


def test_values_out_of_range_are_refused_with_a_sentence() -> None:
    with pytest.raises(ValueError, match="Unknown tools mode"):
        ConversationTools("shell")
    with pytest.raises(ValueError, match="1 to 50"):
        ConversationTools(max_rounds=51)
    assert (
        ConversationTools.from_json(ConversationTools("functions", FUNCTIONS).to_json()).functions_json
        == FUNCTIONS
    )
