"""An answer's reasoning in the history: saved with the answer, read back, exported
(JSON field, Markdown collapsed block) and imported; migration from schema version 6."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from glmdesk.core.history import History
from glmdesk.core.history_rounds import begin_round, save_round
from glmdesk.core.history_schema import SCHEMA_VERSION, connect, schema_version
from glmdesk.core.history_types import GenerationStats

THOUGHT = "The user greets me.\nI should greet back."
STATS = GenerationStats(ttft_s=0.2, tokens_per_s=9.0, n_tokens=30, answer_ttft_s=1.5, reasoning_tokens=12)


def _thinking_round(h: History) -> int:
    cid, mid = begin_round(h, None, "Hello")
    h.checkpoint_partial(mid, "", reasoning="The user")
    assert h.get_message(mid).reasoning == "The user"  # a crash keeps the thinking so far
    h.finish_assistant_message(mid, "Hi there!", "stop", stats=STATS, reasoning=THOUGHT)
    return cid


def test_the_answer_keeps_its_reasoning_and_statistics(tmp_path: Path) -> None:
    with History(tmp_path / "history.sqlite3") as h:
        cid = _thinking_round(h)
        question, answer = h.messages(cid)
        assert answer.text == "Hi there!" and answer.reasoning == THOUGHT and question.reasoning == ""
        assert answer.stats.answer_ttft_s == 1.5 and answer.stats.reasoning_tokens == 12
        (_q, chat_answer) = h.chat_messages(cid)
        assert chat_answer.content == "Hi there!" and chat_answer.reasoning == THOUGHT
        other = save_round(h, None, "Again", "Hello!", reasoning="short thought")
        assert h.messages(other)[1].reasoning == "short thought"


def test_a_database_of_version_6_migrates_and_keeps_its_answers(tmp_path: Path) -> None:
    old = tmp_path / "history.sqlite3"
    conn = connect(old, target=6)
    assert "reasoning" not in {row[1] for row in conn.execute("PRAGMA table_info(messages)")}
    conn.execute("INSERT INTO conversations (title, created, updated) VALUES ('old chat', 1, 1)")
    conn.execute(
        "INSERT INTO messages (conversation_id, role, text, created, updated, ttft_s) "
        "VALUES (1, 'assistant', 'an old answer', 1, 1, 0.5)"
    )
    conn.execute("UPDATE conversations SET active_leaf = 1")
    conn.close()
    with History(old) as h:
        assert schema_version(h.connection) == SCHEMA_VERSION
        (message,) = h.messages(1)
        assert message.text == "an old answer" and message.reasoning == ""
        assert message.stats.ttft_s == 0.5 and message.stats.answer_ttft_s is None
        mid = h.begin_assistant_message(1)
        h.finish_assistant_message(mid, "a new answer", "stop", reasoning="new thinking")
        assert h.messages(1)[-1].reasoning == "new thinking"


def test_export_and_import_carry_the_reasoning(tmp_path: Path) -> None:
    with History(tmp_path / "a.sqlite3") as h:
        cid = _thinking_round(h)
        exported = h.export_json(cid)
        markdown = h.export_markdown(cid)
    doc = json.loads(exported)
    answer = doc["messages"][1]
    assert answer["reasoning"] == THOUGHT and answer["text"] == "Hi there!"
    assert answer["stats"]["answer_ttft_s"] == 1.5 and answer["stats"]["reasoning_tokens"] == 12
    assert "reasoning" not in doc["messages"][0]
    block = markdown.split("### Assistant", 1)[1]
    assert (
        "<details>\n<summary>Thinking</summary>\n\n> The user greets me.\n> I should greet back.\n\n</details>"
        in block
    )
    assert block.index("</details>") < block.index("Hi there!")
    with History(tmp_path / "b.sqlite3") as h:
        new = h.import_json(exported)
        (_q, back) = h.messages(new)
        assert back.reasoning == THOUGHT and back.stats.reasoning_tokens == 12
        copy = h.duplicate_conversation(new)
        assert h.messages(copy)[1].reasoning == THOUGHT


def test_import_refuses_reasoning_on_a_user_message(tmp_path: Path) -> None:
    with History(tmp_path / "a.sqlite3") as h:
        cid = _thinking_round(h)
        doc = json.loads(h.export_json(cid))
        doc["messages"][0]["reasoning"] = "not mine"
        with pytest.raises(ValueError, match="Message 1 has reasoning"):
            h.import_json(json.dumps(doc))
