"""Tests of the SQLite chat history (no Qt)."""

from __future__ import annotations

import ast
import json
import os
import signal
import sqlite3
import stat
import subprocess
import sys
import textwrap
import threading
from dataclasses import asdict
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from glmdesk.core.history import History
from glmdesk.core.history_schema import SCHEMA_VERSION, connect, schema_version
from glmdesk.core.history_types import GenerationStats, SchemaTooNewError
from glmdesk.core.messages import ChatMessage
from glmdesk.core.settings import SamplingParams

REPO = Path(__file__).resolve().parents[2]
# Every text a user or a model could produce, and some no one should: NUL, control
# characters, a lone surrogate, a surrogate pair as two code points, CJK, emoji.
NASTY = "a\x00b\x01\x1b[31m\x7f \ud800 \udfff \ud83d\ude00 😀 量子计算 \r\n\t end"


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "history.sqlite3"


@pytest.fixture
def history(db: Path):
    with History(db) as h:
        yield h


def _child(code: str, *args: str, **kwargs) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code), *args], env=env, text=True, **kwargs
    )


def _fill(h: History) -> int:
    cid = h.create_conversation(model="smol")
    h.add_message(cid, "system", "You are helpful.")
    h.add_message(cid, "user", NASTY)
    mid = h.begin_assistant_message(cid, model="smol", settings=SamplingParams(temperature=0.2, seed=7))
    h.checkpoint_partial(mid, "量子")
    stats = GenerationStats(ttft_s=0.25, tokens_per_s=14.5, n_tokens=12, prompt_tokens=80, dropped_tokens=3)
    h.finish_assistant_message(mid, "量子计算 uses qubits. " + NASTY, "stop", stats=stats)
    h.add_message(cid, "user", "And in English?")
    mid = h.begin_assistant_message(cid, model="smol", settings={"temperature": 0.0})
    h.finish_assistant_message(
        mid, "Quantum computing", "cancelled", stats=GenerationStats(dropped_messages=(1,))
    )
    return cid


def test_file_is_owner_only_wal_and_current(db: Path, history: History) -> None:
    _fill(history)
    for name in (db.name, db.name + "-wal", db.name + "-shm"):
        assert stat.S_IMODE((db.parent / name).stat().st_mode) == 0o600, name
    conn = history.connection
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert schema_version(conn) == SCHEMA_VERSION


def test_default_path_is_in_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GLMDESK_HOME", str(tmp_path))
    with History() as h:
        assert h.path == tmp_path / "data" / "history.sqlite3"
    assert h.path.exists()


def test_round_trip_in_a_new_process(db: Path, history: History) -> None:
    cid = _fill(history)
    expected = [asdict(m) for m in history.messages(cid)]
    history.close()
    child = _child(
        """
        import sys
        from dataclasses import asdict
        from glmdesk.core.history import History
        h = History(sys.argv[1])
        cid = int(sys.argv[2])
        out = {"conv": asdict(h.get_conversation(cid)), "messages": [asdict(m) for m in h.messages(cid)]}
        print(ascii(out))  # exact, lone surrogates included
        """,
        str(db),
        str(cid),
        stdout=subprocess.PIPE,
    )
    out, _ = child.communicate(timeout=60)
    assert child.returncode == 0
    got = ast.literal_eval(out)
    assert got["messages"] == expected
    assert got["messages"][1]["text"] == NASTY
    assert got["messages"][2]["settings"]["seed"] == 7
    assert got["messages"][2]["stats"]["ttft_s"] == 0.25
    assert got["conv"]["title"].startswith("a\ufffdb")  # auto-title from the first user message


CRASH_CHILD = """
import sys
from glmdesk.core.history import History

def answer(n):
    return "".join(f"word{i} 词{i} " for i in range(n))

h = History(sys.argv[1])
cid = h.create_conversation(model="smol")
h.add_message(cid, "user", "first question")
mid = h.begin_assistant_message(cid, model="smol")
h.finish_assistant_message(mid, "first answer", "stop")
h.add_message(cid, "user", "second question 第二个问题")
mid = h.begin_assistant_message(cid, model="smol")
for n in range(1, 100000):
    h.checkpoint_partial(mid, answer(n))
    print(n, flush=True)            # after the commit: the parent knows n landed
"""


def test_sigkill_mid_answer_keeps_every_finished_message(db: Path) -> None:
    child = _child(CRASH_CHILD, str(db), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    last = 0
    try:
        while last < 5:  # bounded by the child's progress; each line is a committed checkpoint
            line = child.stdout.readline()
            assert line, f"child exited early: {child.stderr.read()}"
            last = int(line)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
        child.stdout.close()
        child.stderr.close()
    assert child.returncode == -signal.SIGKILL

    with History(db) as h:
        conn = h.connection
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        conn.execute("INSERT INTO messages_fts (messages_fts) VALUES ('integrity-check')")
        (conv,) = h.list_conversations()
        msgs = h.messages(conv.id)
        assert [(m.role, m.text, m.state) for m in msgs[:4]] == [
            ("user", "first question", "complete"),
            ("assistant", "first answer", "complete"),
            ("user", "second question 第二个问题", "complete"),
            ("assistant", msgs[3].text, "partial"),
        ]
        assert msgs[0].finish_reason is None and msgs[1].finish_reason == "stop"
        # The child checkpoints as fast as it can, so it may be further on than the last
        # line read: the text must be exactly one whole checkpoint at or after it.
        n = msgs[3].text.count("word")
        assert n >= last, f"partial answer lost checkpoints: {n} < {last}"
        assert msgs[3].text == "".join(f"word{i} 词{i} " for i in range(n)), "a torn checkpoint"
        assert h.partial_messages() == [msgs[3]]
        assert h.search("词1")[0].message_id == msgs[3].id
        h.finish_assistant_message(msgs[3].id, msgs[3].text, "error")  # recovered later
        assert h.get_message(msgs[3].id).complete


def test_search_chinese_and_english(history: History) -> None:
    a = history.create_conversation("physics")
    history.add_message(a, "user", "请解释量子计算的基本原理")
    b = history.create_conversation("cooking")
    mb = history.add_message(b, "assistant", "Whisk the EGGS, then fold in the flour. 鸡蛋")
    history.add_message(b, "user", "100% sure? use snake_case")

    def hits(q: str) -> list[int]:
        return [hit.conversation_id for hit in history.search(q)]

    assert hits("量子计算") == [a]  # trigram index
    assert hits("量子") == [a]  # 2 characters: LIKE fallback
    assert hits("子") == [a]
    assert hits("eggs") == [b]  # case-insensitive
    assert hits("whisk 鸡蛋") == [b]  # every term must match, mixed lengths
    assert hits("whisk 量子") == []
    assert hits('"fold in"') == [b]
    assert hits("100%") == [b] and hits("%") == [b] and hits("e_c") == [b]
    assert hits("xyz") == [] and hits("   ") == []
    for odd in ('"', "AND OR NOT", "NEAR(a b)", "*", "flo*", "a:b", "'); DROP TABLE messages; --"):
        history.search(odd)  # user text is never FTS syntax
    (hit,) = history.search("flour")
    assert hit.message_id == mb and hit.conversation_title == "cooking"
    assert [hit.snippet[s:e] for s, e in hit.spans] == ["flour"]
    (hit,) = history.search("eggs")
    assert [hit.snippet[s:e] for s, e in hit.spans] == ["EGGS"]
    assert history.search("量子", conversation_id=b) == []
    history.delete_conversation(a)
    assert hits("量子计算") == []
    history.restore_conversation(a)
    assert hits("量子计算") == [a]


def test_snippet_of_long_text_is_one_line_around_the_match(history: History) -> None:
    cid = history.create_conversation()
    history.add_message(cid, "user", "x " * 500 + "needle\nin a haystack " + "y " * 500)
    (hit,) = history.search("needle")
    assert hit.snippet.startswith("…") and hit.snippet.endswith("…") and "\n" not in hit.snippet
    assert [hit.snippet[s:e] for s, e in hit.spans] == ["needle"]


def test_export_import_is_lossless(history: History) -> None:
    cid = _fill(history)
    exported = history.export_json(cid)
    exported.encode("utf-8")  # valid UTF-8 even with lone surrogates
    doc = json.loads(exported)
    assert doc["messages"][2]["settings"]["temperature"] == 0.2
    assert doc["messages"][4]["stats"]["dropped_messages"] == [1]
    new = history.import_json(exported)
    assert new != cid
    assert history.export_json(new) == exported
    strip = [(m.role, m.text, m.state, m.finish_reason, m.settings, m.stats) for m in history.messages(new)]
    assert strip == [
        (m.role, m.text, m.state, m.finish_reason, m.settings, m.stats) for m in history.messages(cid)
    ]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(st.characters(exclude_categories=())), min_size=1, max_size=4))
def test_any_text_round_trips_through_database_and_json(texts: list[str]) -> None:
    with History(":memory:") as h:
        cid = h.create_conversation()
        for i, text in enumerate(texts):
            h.add_message(cid, ("user", "assistant")[i % 2], text)
        assert [m.text for m in h.messages(cid)] == texts
        copy = h.import_json(h.export_json(cid))
        assert [m.text for m in h.messages(copy)] == texts


def test_markdown_export(history: History) -> None:
    cid = _fill(history)
    md = history.export_markdown(cid, labels={"user": "用户"})
    md.encode("utf-8")
    assert md.startswith("# a\ufffdb")
    assert "### 用户" in md and "### Assistant (stopped)" in md and "Quantum computing" in md


def test_import_refuses_other_files(history: History) -> None:
    for bad in ("not json", "[]", '{"format": "x"}', '{"format": "glmdesk-conversation", "version": 9}'):
        with pytest.raises(ValueError):
            history.import_json(bad)
    doc = json.loads(history.export_json(_fill(history)))
    doc["messages"][0]["role"] = "robot"
    with pytest.raises(ValueError, match="role"):
        history.import_json(json.dumps(doc))
    assert history.count_conversations() == 1  # nothing half-imported


def test_migrates_from_version_0_and_from_version_1(tmp_path: Path) -> None:
    empty = tmp_path / "empty.sqlite3"
    sqlite3.connect(empty).close()
    conn = connect(empty)
    assert schema_version(conn) == SCHEMA_VERSION
    conn.close()

    old = tmp_path / "v1.sqlite3"
    conn = connect(old, target=1)  # before search existed
    assert schema_version(conn) == 1
    conn.execute("INSERT INTO conversations (title, created, updated) VALUES ('old', 1, 1)")
    conn.execute(
        "INSERT INTO messages (conversation_id, role, text, created, updated) VALUES (1, 'user', '旧的消息 old', 1, 1)"
    )
    conn.close()
    with History(old) as h:
        assert schema_version(h.connection) == SCHEMA_VERSION
        assert [hit.message_id for hit in h.search("旧的消息")] == [1]

    conn = sqlite3.connect(old)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(SchemaTooNewError):
        History(old)


def test_conversation_operations(history: History) -> None:
    a = history.create_conversation("a")
    b = history.create_conversation("b")
    history.add_message(a, "user", "hello")  # a is now the most recent
    assert [c.id for c in history.list_conversations()] == [a, b]
    history.rename_conversation(b, "renamed")
    assert history.get_conversation(b).title == "renamed"
    assert history.get_conversation(a).title == "a"  # an explicit title is kept
    dup = history.duplicate_conversation(a, "a (copy)")
    assert [m.text for m in history.messages(dup)] == ["hello"]
    assert history.list_conversations(limit=1)[0].id == dup
    page1 = history.list_conversations(limit=2)
    page2 = history.list_conversations(limit=2, after=(page1[-1].updated, page1[-1].id))
    assert [c.id for c in page1 + page2] == [dup, a, b]
    history.delete_conversation(a)
    assert [c.id for c in history.list_conversations()] == [dup, b] and history.count_conversations() == 2
    history.restore_conversation(a)
    history.delete_conversation(a)
    assert history.purge_deleted(older_than_s=3600) == 0
    assert history.purge_deleted() == 1
    with pytest.raises(KeyError):
        history.messages(a)
    assert history.connection.execute("SELECT count(*) FROM messages").fetchone()[0] == 1
    for call in (lambda: history.rename_conversation(a, "x"), lambda: history.add_message(a, "user", "x")):
        with pytest.raises(KeyError):
            call()


def test_message_rules(history: History) -> None:
    cid = history.create_conversation()
    with pytest.raises(ValueError):
        history.add_message(cid, "robot", "x")
    mid = history.begin_assistant_message(cid)
    assert history.chat_messages(cid) == []  # an empty answer is not sent back to the model
    with pytest.raises(ValueError):
        history.finish_assistant_message(mid, "x", "bored")
    history.finish_assistant_message(mid, "done", "length")
    with pytest.raises(KeyError):
        history.checkpoint_partial(mid, "late")  # finished once, never overwritten
    with pytest.raises(KeyError):
        history.finish_assistant_message(mid, "twice", "stop")
    with pytest.raises(ValueError):
        GenerationStats(tokens_per_s=float("nan"))
    history.add_message(cid, "user", "next")
    assert history.chat_messages(cid) == [ChatMessage("assistant", "done"), ChatMessage("user", "next")]


def test_other_threads_cannot_use_the_connection(history: History) -> None:
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            history.list_conversations()
        except BaseException as exc:  # noqa: BLE001 - collected for the assert
            errors.append(exc)

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join(timeout=10)
    assert len(errors) == 1 and isinstance(errors[0], sqlite3.ProgrammingError)


def test_history_modules_import_without_qt() -> None:
    child = _child(
        """
        import sys
        sys.modules["PySide6"] = None  # any Qt import now fails
        import glmdesk.core.history, glmdesk.core.history_io, glmdesk.core.history_search
        """,
        stderr=subprocess.PIPE,
    )
    _, err = child.communicate(timeout=60)
    assert child.returncode == 0, err
