"""History keeps which documents a question was given (names, never their text), and
export names them; a version 7 database gains the column and keeps its messages."""

from __future__ import annotations

import json
from pathlib import Path

from glmdesk.core.history import History
from glmdesk.core.history_documents import DocumentUse
from glmdesk.core.history_rounds import begin_round
from glmdesk.core.history_schema import SCHEMA_VERSION, connect, schema_version
from glmdesk.core.messages import ChatMessage

USED = (DocumentUse("/home/me/papers/report.pdf"), DocumentUse("/home/me/notes/plan.md"))


def test_a_question_keeps_its_documents_by_name(tmp_path: Path) -> None:
    with History(tmp_path / "h.sqlite3") as h:
        cid, _answer = begin_round(h, None, "What did the audit find?", attachments=USED)
        (question, _empty) = h.messages(cid)
        assert h.documents_used(question.id) == USED
        assert h.chat_messages(cid)[0] == ChatMessage("user", "What did the audit find?", documents=USED)
        stored = h.connection.execute(
            "SELECT text, documents FROM messages WHERE id = ?", (question.id,)
        ).fetchone()
        assert stored == ("What did the audit find?", json.dumps([d.path for d in USED]))


def test_export_names_the_documents_and_json_brings_them_back(tmp_path: Path) -> None:
    with History(tmp_path / "h.sqlite3") as h:
        cid = h.create_conversation()
        h.add_message(cid, "user", "Summarise them", attachments=USED)
        h.add_message(cid, "assistant", "They agree.", finish_reason="stop")
        md = h.export_markdown(cid, labels={"documents": "文档"})
        assert "_文档: report.pdf, plan.md_" in md
        exported = h.export_json(cid)
        assert json.loads(exported)["messages"][0]["documents"] == [d.path for d in USED]
        again = h.import_json(exported)
        assert h.chat_messages(again)[0].documents == USED


def test_a_version_7_database_migrates_and_keeps_its_messages(tmp_path: Path) -> None:
    old = tmp_path / "history.sqlite3"
    conn = connect(old, target=7)
    conn.execute("INSERT INTO conversations (title, created, updated) VALUES ('old chat', 1, 1)")
    conn.execute(
        "INSERT INTO messages (conversation_id, role, text, created, updated) VALUES (1, 'user', 'an old question', 1, 1)"
    )
    conn.execute("UPDATE conversations SET active_leaf = 1")
    conn.close()
    with History(old) as h:
        assert schema_version(h.connection) == SCHEMA_VERSION >= 8
        (message,) = h.chat_messages(1)
        assert message.content == "an old question" and message.documents == ()


def test_where_the_sources_were_is_kept_beside_the_names_and_old_readers_still_see_the_names(
    tmp_path: Path,
) -> None:
    from glmdesk.core.history_documents import SourceRef, documents_json, parse_documents, passage_digest

    report = DocumentUse(
        "/home/me/papers/report.pdf",
        (
            SourceRef(1, 3, 12, 40, "Audit", False, passage_digest("The audit found two gaps.")),
            SourceRef(3, 9, 1, 88, "", False, passage_digest("Gaps were closed.")),
        ),
    )
    plan = DocumentUse("/home/me/notes/plan.md", (SourceRef(2, None, 1, None, "", True, "0123456789abcdef"),))
    with History(tmp_path / "h.sqlite3") as h:
        cid, _answer = begin_round(h, None, "What did the audit find?", attachments=(report, plan))
        (question, _empty) = h.messages(cid)
        assert h.chat_messages(cid)[0].documents == (report, plan)
        (stored,) = h.connection.execute(
            "SELECT documents FROM messages WHERE id = ?", (question.id,)
        ).fetchone()
    value = json.loads(stored)
    assert value[:2] == [report.path, plan.path]  # a reader of paths only (schema 8 as first written)
    assert [p for p in value if isinstance(p, str)] == [report.path, plan.path]
    assert [s["n"] for s in value[2]["sources"]] == [1, 2, 3]  # prompt order
    assert "The audit found" not in stored  # where, not the text
    assert parse_documents(json.dumps([report.path])) == (DocumentUse(report.path),)  # the old shape
    damaged = value[:2] + [{"sources": [{"n": "x"}, {"n": 1, "path": plan.path, "sha1": "ab"}, 7]}]
    assert parse_documents(json.dumps(damaged)) == (
        DocumentUse(report.path),
        DocumentUse(plan.path, (SourceRef(1, None, 1, None, "", False, "ab"),)),
    )
    assert documents_json(parse_documents(stored)) == stored
