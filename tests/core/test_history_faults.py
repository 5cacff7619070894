"""Storage failures of the history file (issue 19, item 3): a full disk, damaged pages.

Real SQLite files only: a full disk is ``PRAGMA max_page_count`` at the current page
count (SQLite then answers ``SQLITE_FULL`` exactly as on a full disk); damage is
pages of a real history file overwritten with zeros.
"""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

from glmdesk.core.errors import ERROR_KINDS
from glmdesk.core.history import History
from glmdesk.core.history_errors import HistoryError, set_aside_name
from glmdesk.core.history_rounds import begin_round, save_round
from glmdesk.core.history_schema import SCHEMA_VERSION
from glmdesk.core.history_types import GenerationStats, SchemaTooNewError


def fill_disk(history: History) -> None:
    """Let the file grow no more: the next page SQLite needs is refused (SQLITE_FULL)."""
    conn = history.connection
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    assert conn.execute(f"PRAGMA max_page_count = {pages}").fetchone()[0] == pages


def free_disk(history: History) -> None:
    history.connection.execute("PRAGMA max_page_count = 1073741823")


def roles(history: History, cid: int) -> list[str]:
    return [m.role for m in history.messages(cid)]


def make_real_history(path: Path, conversations: int = 40) -> None:
    with History(path) as h:
        for i in range(conversations):
            save_round(h, None, f"question {i} " + "词" * 300, f"answer {i} " + "x" * 2000)
        h.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def zero_pages(path: Path, pages: list[int]) -> None:
    """Overwrite pages (1-based, as SQLite counts them) with zeros."""
    data = bytearray(path.read_bytes())
    page_size = int.from_bytes(data[16:18], "big")
    for page in pages:
        data[(page - 1) * page_size : page * page_size] = bytes(page_size)
    path.write_bytes(bytes(data))


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_error_kinds_are_declared() -> None:
    assert {"history_disk_full", "history_damaged", "history_unavailable"} <= set(ERROR_KINDS)


def test_disk_full_mid_round_stores_nothing_then_the_whole_round(tmp_path: Path) -> None:
    with History(tmp_path / "h.sqlite3") as h:
        cid = h.create_conversation()
        save_round(h, cid, "first question", "first answer")
        fill_disk(h)
        question, answer = "a question sent while the disk is full " * 400, "its answer " * 800
        with pytest.raises(HistoryError) as raised:
            begin_round(h, cid, question)
        assert raised.value.kind == "history_disk_full"
        assert raised.value.params["path"] == str(h.path)
        assert roles(h, cid) == ["user", "assistant"]  # no question without its answer
        with pytest.raises(HistoryError) as raised:
            save_round(h, cid, question, answer, stats=GenerationStats(n_tokens=5))
        assert raised.value.kind == "history_disk_full" and not h.connection.in_transaction
        assert roles(h, cid) == ["user", "assistant"]  # nor an answer without its question
        free_disk(h)
        save_round(h, cid, question, answer, stats=GenerationStats(n_tokens=5))
        stored = h.messages(cid)
        assert [m.text for m in stored[2:]] == [question, answer] and stored[3].stats.n_tokens == 5


def test_disk_full_in_every_write_leaves_the_file_as_it_was(tmp_path: Path) -> None:
    with History(tmp_path / "h.sqlite3") as h:
        cid = h.create_conversation("kept")
        save_round(h, cid, "q" * 30_000, "a" * 30_000)
        mid = h.begin_assistant_message(cid)
        before = h.export_json(cid)
        fill_disk(h)
        big = "长" * 20_000
        writes = [
            lambda: h.create_conversation(big),
            lambda: h.add_message(cid, "user", big),
            lambda: h.checkpoint_partial(mid, big),
            lambda: h.finish_assistant_message(mid, big, "stop"),
            lambda: h.rename_conversation(cid, big),
            lambda: h.duplicate_conversation(cid),
            lambda: h.import_json(before.replace('"kept"', '"' + big + '"')),
        ]
        for write in writes:
            with pytest.raises(HistoryError) as raised:
                write()
            assert raised.value.kind == "history_disk_full"
            assert not h.connection.in_transaction
        assert h.export_json(cid) == before and h.count_conversations() == 1
        free_disk(h)
        h.finish_assistant_message(mid, big, "stop")  # the same write succeeds with space
        assert h.messages(cid)[-1].text == big


def test_begin_round_is_one_transaction(tmp_path: Path) -> None:
    with History(tmp_path / "h.sqlite3") as h:
        cid, mid = begin_round(h, None, "你好", model="smol", settings={"temperature": 0.0})
        stored = h.messages(cid)
        assert [(m.role, m.complete) for m in stored] == [("user", True), ("assistant", False)]
        assert stored[1].id == mid and h.get_conversation(cid).title == "你好"
        with pytest.raises(KeyError):
            begin_round(h, cid + 100, "to nowhere")
        assert h.connection.execute("SELECT count(*) FROM messages").fetchone()[0] == 2


@pytest.mark.parametrize("pages", [[2, 3], [5], [1]], ids=["pages-2-3", "page-5", "header-page"])
def test_damaged_file_is_set_aside_and_a_new_history_starts(tmp_path: Path, pages: list[int]) -> None:
    path = tmp_path / "history.sqlite3"
    make_real_history(path)
    zero_pages(path, pages)
    damaged = digest(path)
    with History(path) as h:
        assert h.set_aside is not None and h.set_aside.parent == tmp_path
        assert h.set_aside.name.startswith("history.damaged-") and h.set_aside.suffix == ".sqlite3"
        assert digest(h.set_aside) == damaged  # moved, not rewritten
        assert h.count_conversations() == 0
        cid = h.create_conversation()
        save_round(h, cid, "after", "works")
        assert roles(h, cid) == ["user", "assistant"]
    with History(path) as again:  # the new file is healthy: nothing more is set aside
        assert again.set_aside is None and again.count_conversations() == 1
    assert len(list(tmp_path.glob("history.damaged-*.sqlite3"))) == 1


def test_healthy_and_newer_files_are_never_set_aside(tmp_path: Path) -> None:
    path = tmp_path / "history.sqlite3"
    make_real_history(path, conversations=3)
    with History(path) as h:
        assert h.set_aside is None and h.count_conversations() == 3
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(SchemaTooNewError):
        History(path)
    assert [p.name for p in tmp_path.iterdir() if "damaged" in p.name] == []


def test_set_aside_names_never_collide(tmp_path: Path) -> None:
    path = tmp_path / "history.sqlite3"
    first = set_aside_name(path, now=0.0)
    first.write_bytes(b"x")
    second = set_aside_name(path, now=0.0)
    assert second != first and second.name.endswith("-1.sqlite3")


def test_damage_found_while_open_is_a_typed_error(tmp_path: Path) -> None:
    path = tmp_path / "history.sqlite3"
    make_real_history(path)
    with History(path) as h:
        cid = h.list_conversations()[-1].id
        h.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        zero_pages(path, list(range(2, 12)))
        with pytest.raises(HistoryError) as raised:
            for _ in range(3):
                save_round(h, cid, "more", "text " * 2000)
                h.messages(cid)
        assert raised.value.kind == "history_damaged"


def test_other_failures_are_history_unavailable(tmp_path: Path) -> None:
    with History(tmp_path / "h.sqlite3") as h:
        h.connection.execute("PRAGMA query_only = ON")
        with pytest.raises(HistoryError) as raised:
            h.create_conversation("x")
        assert raised.value.kind == "history_unavailable" and "readonly" in raised.value.params["detail"]
