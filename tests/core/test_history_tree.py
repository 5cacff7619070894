"""Branches inside one conversation: the tree in the history database (no Qt)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from glmdesk.core import history_schema
from glmdesk.core.history import History
from glmdesk.core.history_rounds import begin_round, save_round
from glmdesk.core.history_schema import MIGRATIONS, SCHEMA_VERSION, connect, schema_version
from glmdesk.core.history_types import GenerationStats
from glmdesk.core.tools import ToolCall


@pytest.fixture
def history(tmp_path: Path):
    with History(tmp_path / "history.sqlite3") as h:
        yield h


def _texts(h: History, cid: int) -> list[str]:
    return [m.text for m in h.messages(cid)]


def _answer(h: History, cid: int, text: str, parent_id=None, reason: str = "stop") -> int:
    kwargs = {} if parent_id is None else {"parent_id": parent_id}
    mid = h.begin_assistant_message(cid, model="smol", settings={"temperature": 0.5}, **kwargs)
    h.finish_assistant_message(mid, text, reason, stats=GenerationStats(n_tokens=3))
    return mid


def _branched(h: History) -> dict[str, int]:
    """q1 -> a1 -> q2 -> a2, then a1 regenerated (a1b) and q2 edited (q2b -> a2b)."""
    cid = h.create_conversation()
    ids = {"cid": cid}
    ids["q1"] = h.add_message(cid, "user", "What is a qubit?")
    ids["a1"] = _answer(h, cid, "A quantum bit.")
    ids["q2"] = h.add_message(cid, "user", "And a gate?")
    ids["a2"] = _answer(h, cid, "An operation.")
    ids["a1b"] = _answer(h, cid, "量子比特 (regenerated)", parent_id=ids["q1"])
    h.switch_branch(ids["a1"])
    ids["q2b"] = h.add_message(cid, "user", "And a circuit?", parent_id=ids["a1"])
    ids["a2b"] = _answer(h, cid, "Gates in a row.")
    return ids


def test_new_messages_follow_the_branch_on_screen(history: History) -> None:
    cid = history.create_conversation()
    q = history.add_message(cid, "user", "hi")
    a = _answer(history, cid, "hello")
    stored = history.messages(cid)
    assert [(m.id, m.parent_id) for m in stored] == [(q, None), (a, q)]
    assert history.active_leaf(cid) == a


def test_regenerate_and_edit_make_siblings_not_copies(history: History) -> None:
    ids = _branched(history)
    cid = ids["cid"]
    assert history.count_conversations() == 1
    assert _texts(history, cid) == ["What is a qubit?", "A quantum bit.", "And a circuit?", "Gates in a row."]
    assert history.siblings(ids["a1"]) == (ids["a1"], ids["a1b"])
    assert history.siblings(ids["q2b"]) == (ids["q2"], ids["q2b"])
    assert history.siblings(ids["q1"]) == (ids["q1"],)
    positions = [(m.text, sibs.index(m.id) + 1, len(sibs)) for m, sibs in history.branch_with_siblings(cid)]
    assert positions == [
        ("What is a qubit?", 1, 1),
        ("A quantum bit.", 1, 2),
        ("And a circuit?", 2, 2),
        ("Gates in a row.", 1, 1),
    ]
    assert len(history.tree(cid)) == 7


def test_switching_siblings_shows_their_newest_branch(history: History) -> None:
    ids = _branched(history)
    cid = ids["cid"]
    assert history.switch_branch(ids["q2"]) == ids["a2"]
    assert _texts(history, cid) == ["What is a qubit?", "A quantum bit.", "And a gate?", "An operation."]
    assert history.switch_branch(ids["a1b"]) == ids["a1b"]
    assert _texts(history, cid) == ["What is a qubit?", "量子比特 (regenerated)"]
    # The next message continues the branch on screen, and survives a reopen.
    q3 = history.add_message(cid, "user", "Thanks")
    assert history.get_message(q3).parent_id == ids["a1b"]
    history.close()
    with History(history.path) as again:
        assert _texts(again, cid)[-2:] == ["量子比特 (regenerated)", "Thanks"]
        # Back at the first answer, its newest descendant is the edited question's answer.
        assert again.switch_branch(ids["a1"]) == ids["a2b"]
        assert again.chat_messages(cid)[-1].content == "Gates in a row."


def test_search_finds_text_on_any_branch_and_opens_it(history: History) -> None:
    ids = _branched(history)
    cid = ids["cid"]
    hits = history.search("operation")
    assert [(h.conversation_id, h.message_id) for h in hits] == [(cid, ids["a2"])]
    assert "An operation." not in _texts(history, cid)
    history.switch_branch(hits[0].message_id)
    assert _texts(history, cid)[-1] == "An operation."


def test_delete_keeps_replies_and_shows_a_sibling(history: History) -> None:
    ids = _branched(history)
    cid = ids["cid"]
    history.delete_message(ids["a2b"])  # the leaf on screen: its parent's branch stays
    assert _texts(history, cid) == ["What is a qubit?", "A quantum bit.", "And a circuit?"]
    history.switch_branch(ids["a2"])
    history.delete_message(ids["q2"])  # a middle message: its answer moves up to a1
    assert history.get_message(ids["a2"]).parent_id == ids["a1"]
    assert _texts(history, cid) == ["What is a qubit?", "A quantum bit.", "An operation."]
    with pytest.raises(KeyError):
        history.delete_message(ids["q2"])


def test_continue_reopens_only_the_last_answer(history: History) -> None:
    ids = _branched(history)
    with pytest.raises(ValueError, match="last answer"):
        history.resume_assistant_message(ids["a1"])  # it has replies
    with pytest.raises(KeyError):
        history.resume_assistant_message(ids["q2b"])  # not an answer
    cut = _answer(history, ids["cid"], "Gates are", parent_id=ids["q2b"], reason="length")
    history.resume_assistant_message(cut)
    assert history.get_message(cut).state == "partial"
    history.checkpoint_partial(cut, "Gates are applied")
    history.finish_assistant_message(cut, "Gates are applied in order.", "stop")
    message = history.get_message(cut)
    assert (message.text, message.finish_reason, message.complete) == (
        "Gates are applied in order.",
        "stop",
        True,
    )
    assert history.siblings(cut) == (ids["a2b"], cut)


def test_parent_must_be_in_the_conversation(history: History) -> None:
    ids = _branched(history)
    other = history.create_conversation()
    with pytest.raises(KeyError):
        history.add_message(other, "user", "x", parent_id=ids["q1"])
    with pytest.raises(KeyError):
        history.begin_assistant_message(ids["cid"], parent_id=10_000)


def test_json_export_holds_the_tree_and_markdown_the_branch(history: History) -> None:
    ids = _branched(history)
    cid = ids["cid"]
    exported = history.export_json(cid)
    doc = json.loads(exported)
    assert doc["version"] == 4
    assert [m["parent"] for m in doc["messages"]] == [None, 0, 1, 2, 0, 1, 5]
    assert doc["conversation"]["active"] == 6
    markdown = history.export_markdown(cid)
    assert "Gates in a row." in markdown and "An operation." not in markdown

    copy = history.import_json(exported)
    assert history.export_json(copy) == exported
    assert _texts(history, copy) == _texts(history, cid)
    assert [len(s) for _m, s in history.branch_with_siblings(copy)] == [1, 2, 2, 1]
    dup = history.duplicate_conversation(cid, "copy")
    dup_doc = json.loads(history.export_json(dup))
    assert dup_doc["messages"] == doc["messages"]
    assert (dup_doc["conversation"]["title"], dup_doc["conversation"]["active"]) == ("copy", 6)
    assert _texts(history, dup) == _texts(history, cid)


def test_import_reads_version_1_as_one_branch(history: History) -> None:
    doc = {
        "format": "glmdesk-conversation",
        "version": 1,
        "conversation": {"title": "old", "created": 1.0, "updated": 2.0, "model": None},
        "messages": [
            {"role": "user", "text": "q"},
            {"role": "assistant", "text": "a"},
            {"role": "user", "text": "q2"},
        ],
    }
    cid = history.import_json(json.dumps(doc))
    stored = history.messages(cid)
    assert [m.text for m in stored] == ["q", "a", "q2"]
    assert [m.parent_id for m in stored] == [None, stored[0].id, stored[1].id]


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (lambda d: d["messages"][1].update(parent=1), "parent"),
        (lambda d: d["messages"][1].update(parent=7), "parent"),
        (lambda d: d["conversation"].update(active=9), "active"),
        (lambda d: d["conversation"].update(active="x"), "active"),
    ],
)
def test_import_refuses_broken_trees(history: History, change, words: str) -> None:
    doc = json.loads(history.export_json(_branched(history)["cid"]))
    change(doc)
    with pytest.raises(ValueError, match=words):
        history.import_json(json.dumps(doc))
    assert history.count_conversations() == 1


def _previous_version_db(path: Path) -> None:
    """A database as the release before branches wrote it (schema version 3, tool calls), with raw SQL."""
    conn = connect(path, target=3)
    assert schema_version(conn) == 3
    for cid, title in ((1, "first"), (2, "second")):
        conn.execute(
            "INSERT INTO conversations (id, title, created, updated) VALUES (?, ?, 1, 1)", (cid, title)
        )
    rows = [(1, "user", "一 one"), (2, "user", "other"), (1, "assistant", "二 two"), (1, "user", "三 three")]
    for cid, role, text in rows:
        conn.execute(
            "INSERT INTO messages (conversation_id, role, text, created, updated) VALUES (?, ?, ?, 1, 1)",
            (cid, role, text),
        )
    conn.execute("INSERT INTO conversations (id, title, created, updated) VALUES (3, 'empty', 1, 1)")
    conn.close()


def test_migration_from_the_previous_version_makes_one_branch_each(tmp_path: Path) -> None:
    db = tmp_path / "old.sqlite3"
    _previous_version_db(db)
    with History(db) as h:
        assert schema_version(h.connection) == SCHEMA_VERSION
        assert [(m.id, m.parent_id) for m in h.messages(1)] == [(1, None), (3, 1), (4, 3)]
        assert [(m.id, m.parent_id) for m in h.messages(2)] == [(2, None)]
        assert h.messages(3) == [] and h.active_leaf(3) is None
        assert h.active_leaf(1) == 4
        assert [hit.message_id for hit in h.search("二 two")] == [3]
        # Regenerating the old answer now makes a sibling.
        new = h.begin_assistant_message(1, parent_id=1)
        assert h.siblings(new) == (3, new)


def test_branch_migration_adds_only_missing_columns(tmp_path: Path) -> None:
    """Another migration may have added the columns already: running it again changes nothing."""
    db = tmp_path / "old.sqlite3"
    _previous_version_db(db)
    conn = connect(db)
    before = conn.execute("SELECT id, parent_id FROM messages ORDER BY id").fetchall()
    conn.execute("UPDATE conversations SET active_leaf = 3 WHERE id = 1")  # a branch chosen by the user
    MIGRATIONS[3](conn)
    MIGRATIONS[3](conn)  # twice: still nothing to do
    assert conn.execute("SELECT id, parent_id FROM messages ORDER BY id").fetchall() == before
    assert conn.execute("SELECT active_leaf FROM conversations WHERE id = 1").fetchone()[0] == 3
    conn.close()


def test_failed_branch_migration_leaves_the_previous_version(tmp_path: Path, monkeypatch) -> None:
    db = tmp_path / "old.sqlite3"
    _previous_version_db(db)

    def broken(conn: sqlite3.Connection) -> None:
        conn.execute("ALTER TABLE messages ADD COLUMN parent_id INTEGER")
        raise sqlite3.OperationalError("disk full")

    monkeypatch.setattr(history_schema, "MIGRATIONS", [*MIGRATIONS[:3], broken])
    with pytest.raises(sqlite3.OperationalError):
        connect(db)
    conn = sqlite3.connect(db)
    assert schema_version(conn) == 3
    assert "parent_id" not in {row[1] for row in conn.execute("PRAGMA table_info(messages)")}
    conn.close()


def test_a_schema_2_database_migrates_through_tools_and_branches(tmp_path: Path) -> None:
    """The release before tool calls (schema 2) reaches the newest schema in one open."""
    db = tmp_path / "v2.sqlite3"
    conn = connect(db, target=2)
    conn.execute("INSERT INTO conversations (id, title, created, updated) VALUES (1, 'old', 1, 1)")
    for role, text in (("user", "一"), ("assistant", "二")):
        conn.execute(
            "INSERT INTO messages (conversation_id, role, text, created, updated) VALUES (1, ?, ?, 1, 1)",
            (role, text),
        )
    conn.close()
    with History(db) as h:
        assert schema_version(h.connection) == SCHEMA_VERSION
        assert [(m.id, m.parent_id, m.kind) for m in h.messages(1)] == [(1, None, "text"), (2, 1, "text")]
        call = h.add_tool_call(1, ToolCall("get_weather", {"city": "北京"}))
        assert h.get_message(call).parent_id == 2 and h.active_leaf(1) == call


def test_tool_messages_keep_their_branch_through_copy_and_export(history: History) -> None:
    cid = history.create_conversation()
    q = history.add_message(cid, "user", "Weather?")
    call = history.add_tool_call(cid, ToolCall("get_weather", {"city": "北京"}))
    obs = history.add_observation(cid, '{"temp": 22}', name="get_weather")
    history.add_message(cid, "assistant", "22 度。", finish_reason="stop")
    other = _answer(history, cid, "I cannot look that up.", parent_id=q)  # a version without the call
    doc = json.loads(history.export_json(cid))
    assert doc["version"] == 4
    assert [(m["parent"], m.get("kind", "text")) for m in doc["messages"]] == [
        (None, "text"), (0, "tool_call"), (1, "observation"), (2, "text"), (0, "text"),
    ]  # fmt: skip
    for copy in (history.import_json(json.dumps(doc)), history.duplicate_conversation(cid)):
        assert [m.text for m in history.messages(copy)] == ["Weather?", "I cannot look that up."]
        first = history.messages(copy)[0].id
        history.switch_branch(history.siblings(history.messages(copy)[1].id)[0])
        assert [(m.kind, m.tool_name) for m in history.messages(copy)] == [
            ("text", ""), ("tool_call", ""), ("observation", "get_weather"), ("text", ""),
        ]  # fmt: skip
        assert history.messages(copy)[1].tool_call.arguments == {"city": "北京"}
        assert history.messages(copy)[0].id == first
    assert history.siblings(other) == (call, other) and history.get_message(obs).parent_id == call


def test_a_version_2_export_with_tool_messages_is_read_as_one_branch(history: History) -> None:
    """Exports of the release with tool calls (JSON version 2) have no ``parent``."""
    call = {
        "name": "get_weather",
        "arguments": {"city": "北京"},
        "raw": "",
        "kind": "function",
        "call_id": "",
    }
    doc = {
        "format": "glmdesk-conversation",
        "version": 2,
        "conversation": {"title": "t", "created": 1, "updated": 1, "model": None},
        "messages": [
            {"role": "user", "text": "Weather?"},
            {"role": "assistant", "text": "", "kind": "tool_call", "tool_call": call},
            {"role": "observation", "text": "{}", "kind": "observation", "tool_name": "get_weather"},
            {"role": "assistant", "text": "Sunny."},
        ],
    }
    cid = history.import_json(json.dumps(doc))
    stored = history.messages(cid)
    assert [m.parent_id for m in stored] == [None, *(m.id for m in stored[:-1])]
    assert [m.kind for m in stored] == ["text", "tool_call", "observation", "text"]
    assert history.active_leaf(cid) == stored[-1].id


def test_rounds_take_a_parent(history: History) -> None:
    """An edited question (begin_round) and an answer stored whole later (save_round) become versions."""
    cid, first = begin_round(history, None, "Hi")
    history.finish_assistant_message(first, "Hello", "stop")
    q = history.messages(cid)[0].id
    _cid, edited = begin_round(history, cid, "Hi there", parent_id=None)  # the first message, edited
    history.finish_assistant_message(edited, "Hello again", "stop")
    q2 = history.get_message(edited).parent_id
    assert history.siblings(q2) == (q, q2)
    save_round(history, cid, None, "Hey", parent_id=q2)  # that answer, regenerated
    hey = history.active_leaf(cid)
    assert history.siblings(hey) == (edited, hey)
    assert [m.text for m in history.messages(cid)] == ["Hi there", "Hey"]
