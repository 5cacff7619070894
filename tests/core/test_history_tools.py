"""Tool calls, observations and images in the history: migration, round trip, export."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from glmdesk.core.history import History
from glmdesk.core.history_schema import MIGRATIONS, connect, schema_version
from glmdesk.core.messages import ChatMessage
from glmdesk.core.tools import INTERPRETER, ToolCall

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) + b"\x00IEND"
CALL = ToolCall(
    "get_weather", {"city": "北京", "days": [1, 2]}, "```python\ntool_call(city='北京', days=[1, 2])\n```"
)
RUN = ToolCall(INTERPRETER, {"code": "print('```')\nplot()"}, "", "interpreter")


def fill(h: History) -> int:
    cid = h.create_conversation(model="glm-4-9b-chat")
    h.add_message(cid, "user", "北京天气？")
    h.add_tool_call(cid, CALL, "我来查一下。", model="glm-4-9b-chat")
    h.add_observation(cid, '{"temperature": 22}', name="get_weather")
    mid = h.begin_assistant_message(cid, model="glm-4-9b-chat")
    h.finish_assistant_message(mid, "", "tool_calls", tool_call=RUN)
    h.add_observation(cid, "```result\n[Image]\n```", name=INTERPRETER)
    h.add_image(cid, PNG, name=INTERPRETER)
    h.add_message(cid, "assistant", "22 度，图在上面。", finish_reason="stop")
    return cid


def test_previous_version_database_gains_tool_messages(tmp_path: Path) -> None:
    old = tmp_path / "v2.sqlite3"
    conn = connect(old, target=2)
    assert schema_version(conn) == 2
    conn.execute("INSERT INTO conversations (title, created, updated) VALUES ('old', 1, 1)")
    conn.execute(
        "INSERT INTO messages (conversation_id, role, text, created, updated) VALUES (1, 'user', 'hi', 1, 1)"
    )
    conn.execute(
        "INSERT INTO messages (conversation_id, role, text, created, updated, finish_reason) "
        "VALUES (1, 'assistant', 'hello', 1, 1, 'stop')"
    )
    conn.close()
    with History(old) as h:
        assert schema_version(h.connection) == len(MIGRATIONS)
        assert [(m.role, m.kind, m.text) for m in h.messages(1)] == [
            ("user", "text", "hi"),
            ("assistant", "text", "hello"),
        ]
        h.add_tool_call(1, CALL)
        h.add_observation(1, "{}", name="get_weather")
        assert [m.role for m in h.chat_messages(1)] == ["user", "assistant", "assistant", "observation"]


def test_the_migration_only_adds_what_is_missing(tmp_path: Path) -> None:
    conn = connect(tmp_path / "x.sqlite3", target=2)
    conn.execute("ALTER TABLE messages ADD COLUMN parent_id INTEGER")  # another change landed first
    conn.execute("ALTER TABLE messages ADD COLUMN tool TEXT")
    MIGRATIONS[2](conn)
    MIGRATIONS[2](conn)  # twice: nothing to do the second time
    cols = {row[1] for row in conn.execute("PRAGMA table_info(messages)")}
    assert {"parent_id", "kind", "tool", "data"} <= cols
    with pytest.raises(sqlite3.IntegrityError):
        conn.execute(
            "INSERT INTO messages (conversation_id, role, text, created, updated, kind) VALUES (1, 'user', '', 1, 1, 'x')"
        )
    conn.close()


def test_calls_observations_and_images_round_trip(tmp_path: Path) -> None:
    with History(tmp_path / "h.sqlite3") as h:
        cid = fill(h)
        stored = h.messages(cid)
        assert [(m.role, m.kind) for m in stored] == [
            ("user", "text"), ("assistant", "tool_call"), ("observation", "observation"),
            ("assistant", "tool_call"), ("observation", "observation"), ("observation", "image"),
            ("assistant", "text"),
        ]  # fmt: skip
        assert stored[1].tool_call == CALL and stored[1].text == "我来查一下。"
        assert stored[1].finish_reason == "tool_calls" and stored[3].tool_call == RUN
        assert stored[5].image == PNG and stored[5].tool_name == INTERPRETER
        chat = h.chat_messages(cid)
        assert chat[1] == ChatMessage("assistant", "我来查一下。", tool_call=CALL)
        assert chat[2] == ChatMessage("observation", '{"temperature": 22}', name="get_weather")
        assert chat[3].tool_call == RUN and len(chat) == 6  # the image is not a prompt message
        assert chat[4].images == (PNG,) and chat[2].images == ()  # it rides on its observation

        exported = h.export_json(cid)
        copy = h.import_json(exported)
        assert h.export_json(copy) == exported
        again = h.messages(copy)
        assert [(m.role, m.kind, m.text, m.tool_call, m.tool_name, m.image) for m in again] == [
            (m.role, m.kind, m.text, m.tool_call, m.tool_name, m.image) for m in stored
        ]
        doc = json.loads(exported)
        assert doc["version"] == 4 and doc["messages"][1]["tool_call"]["arguments"] == {
            "city": "北京",
            "days": [1, 2],
        }
        dup = h.duplicate_conversation(cid)
        assert [m.image for m in h.messages(dup)][5] == PNG


def test_markdown_shows_calls_code_observations_and_images(tmp_path: Path) -> None:
    with History(tmp_path / "h.sqlite3") as h:
        md = h.export_markdown(fill(h))
    assert "**Tool call: `get_weather`**" in md and '"city": "北京"' in md and "```json" in md
    assert "````python\nprint('```')\nplot()\n````" in md  # the fence outgrows the code's backticks
    assert "### Observation (get_weather)" in md and '```\n{"temperature": 22}\n```' in md
    assert "![Image](data:image/png;base64," in md


def test_bad_tool_messages_in_an_import_are_refused_with_a_sentence(tmp_path: Path) -> None:
    with History(tmp_path / "h.sqlite3") as h:
        doc = json.loads(h.export_json(fill(h)))
        for change, words in [
            ({"kind": "image", "image_b64": ""}, "without an image"),
            ({"tool_call": {"name": "x", "arguments": [1]}}, "not an object"),
            ({"kind": "magic"}, "unknown kind"),
            ({"role": "user"}, "with the role"),
        ]:
            bad = json.loads(json.dumps(doc))
            index = 5 if change.get("kind") == "image" else 1
            bad["messages"][index].update(change)
            with pytest.raises(ValueError, match=words):
                h.import_json(json.dumps(bad))
        assert h.count_conversations() == 1
