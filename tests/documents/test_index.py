"""The SQLite FTS5 index: BM25 search, re-indexing on change, and bad input that loses nothing."""

from __future__ import annotations

import os
import sqlite3
import threading

from glmdesk.documents.indexing import IndexProgress, index_paths
from glmdesk.documents.store import DocumentIndex, match_query
from tests.helpers.documents import write_pdf


def _library(tmp_path, n=5):
    folder = tmp_path / "library"
    folder.mkdir()
    for i in range(n):
        (folder / f"note{i}.md").write_text(f"# Note {i}\n\nOrdinary words about topic {i}.\n")
    (folder / "photo.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(100))  # not a library suffix
    return folder


def test_search_ranks_the_passage_with_the_rare_words_first(tmp_path):
    index = DocumentIndex(tmp_path / "d.sqlite3")
    folder = _library(tmp_path)
    (folder / "fact.md").write_text(
        "# Zoo\n\nThe zebra count at the zoo is 42.\n\n# Other\n\nCount of words.\n"
    )
    report = index_paths(index, folders=[index.add_folder(folder)])
    assert len(report.indexed) == 6 and not report.problems
    hits = index.search(match_query("How many zebras? What is the zebra count"))
    assert hits[0].document.name == "fact.md"
    assert "zebra count at the zoo is 42" in hits[0].chunk.text
    assert hits[0].chunk.section == "Zoo"


def test_chinese_text_is_found_by_a_chinese_question(tmp_path):
    index = DocumentIndex(tmp_path / "d.sqlite3")
    path = tmp_path / "笔记.md"
    path.write_text("# 第一章\n\n今天天气很好。\n\n# 第二章\n\n量子计算机使用量子比特进行运算。\n")
    index_paths(index, files=[path])
    hits = index.search(match_query("什么是量子比特？"))
    assert hits and "量子比特" in hits[0].chunk.text


def test_a_changed_file_is_read_again_and_a_deleted_one_dropped(tmp_path):
    index = DocumentIndex(tmp_path / "d.sqlite3")
    folder = _library(tmp_path, 3)
    name = index.add_folder(folder)
    index_paths(index, folders=[name])
    (folder / "note1.md").write_text("# Note 1\n\nNow about walruses.\n")
    os.utime(folder / "note1.md", ns=(1, 2))  # a different time, whatever the clock's resolution
    (folder / "note2.md").unlink()
    report = index_paths(index, folders=[name])
    assert [r.name for r in report.indexed] == ["note1.md"]
    assert [r.name for r in report.unchanged] == ["note0.md"]
    assert report.forgotten == [str((folder / "note2.md").resolve())]
    assert index.search(match_query("walruses"))[0].document.name == "note1.md"
    assert not index.search(match_query("topic 2"), limit=50) or all(
        h.document.name != "note2.md" for h in index.search(match_query("topic 2"), limit=50)
    )


def test_progress_counts_files_and_pages_and_cancel_stops_between_pages(tmp_path):
    index = DocumentIndex(tmp_path / "d.sqlite3")
    pdf = write_pdf(tmp_path / "long.pdf", [[f"Page {n} text."] for n in range(1, 31)])
    cancel = threading.Event()
    seen: list[IndexProgress] = []

    def progress(p: IndexProgress) -> None:
        seen.append(p)
        if p.pages_done >= 10:
            cancel.set()

    report = index_paths(index, files=[pdf], cancel=cancel, progress=progress)
    assert report.cancelled and not report.indexed
    assert max(p.pages_done for p in seen) in (10, 11)
    assert seen[0].files_total == 1
    seen.clear()
    report = index_paths(index, files=[pdf], progress=seen.append)
    assert report.pages == 30 and seen[-1].files_done == 1 and seen[-1].pages_done == 30
    assert seen[-2].eta_s is None or seen[-2].eta_s >= 0


def test_a_broken_file_leaves_the_rest_and_keeps_its_earlier_chunks(tmp_path):
    index = DocumentIndex(tmp_path / "d.sqlite3")
    good, changing = tmp_path / "good.txt", tmp_path / "changing.txt"
    good.write_text("apples and pears")
    changing.write_text("the kept passage about comets")
    index_paths(index, files=[good, changing])
    changing.write_bytes(bytes(range(256)) * 10)  # now binary
    report = index_paths(index, files=[good, changing, tmp_path / "locked.pdf"])
    assert [p.kind for p in report.problems] == ["binary", "missing"]
    assert index.search(match_query("comets"))[0].document.problem.kind == "binary"
    assert {r.name for r in report.rows} == {"good.txt", "changing.txt"}


def test_a_file_that_vanishes_mid_run_is_named_and_the_run_goes_on(tmp_path):
    index = DocumentIndex(tmp_path / "d.sqlite3")
    folder = _library(tmp_path, 4)

    def progress(p: IndexProgress) -> None:
        if p.current.endswith("note0.md"):
            (folder / "note2.md").unlink(missing_ok=True)

    report = index_paths(index, folders=[index.add_folder(folder)], progress=progress)
    assert [(p.kind, p.name) for p in report.problems] == [("vanished", "note2.md")]
    assert "note2.md disappeared while it was being read" in report.problems[0].message
    assert len(report.indexed) == 3


def test_a_full_disk_stops_the_run_and_keeps_what_was_indexed(tmp_path):
    index = DocumentIndex(tmp_path / "d.sqlite3")
    small = tmp_path / "small.txt"
    small.write_text("a small kept note about otters")
    index_paths(index, files=[small])
    big = tmp_path / "big.txt"
    big.write_text("\n\n".join(f"paragraph {i} " + "filler " * 50 for i in range(2000)))
    pages = index.conn.execute("PRAGMA page_count").fetchone()[0]
    index.conn.execute(f"PRAGMA max_page_count = {pages + 20}")  # as a disk with 80 KB left
    report = index_paths(index, files=[big, small])
    assert [p.kind for p in report.problems] == ["disk_full"]
    assert "The disk is full: big.txt was not indexed" in report.problems[0].message
    assert index.search(match_query("otters"))[0].document.name == "small.txt"
    assert index.document(big) is None
    assert index.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_the_index_lives_beside_history(glmdesk_home):
    index = DocumentIndex()
    assert index.path.parent == glmdesk_home / "data"
    assert sqlite3.connect(index.path).execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_child_process_indexes_with_progress_and_every_row_comes_back(tmp_path):
    from glmdesk.documents.child import ROWS_PER_MESSAGE, index_in_child

    folder = _library(tmp_path, ROWS_PER_MESSAGE + 5)
    database = tmp_path / "d.sqlite3"
    name = DocumentIndex(database).add_folder(folder)
    seen: list[IndexProgress] = []
    report = index_in_child(database, folders=[name], progress=seen.append)
    assert len(report.indexed) == ROWS_PER_MESSAGE + 5 and not report.problems
    assert seen[-1].files_done == seen[-1].files_total == ROWS_PER_MESSAGE + 5
    assert DocumentIndex(database).search(match_query("topic 7"))[0].document.folder == name


def test_a_child_process_that_fails_is_a_sentence(tmp_path):
    import pytest

    from glmdesk.documents.child import index_in_child

    with pytest.raises(RuntimeError, match="OperationalError"):
        index_in_child(tmp_path / "no-such-folder" / "d.sqlite3", files=[])


def test_a_child_that_does_not_stop_after_cancel_is_ended(tmp_path, monkeypatch):
    import time

    import pytest

    from glmdesk.documents import child
    from tests.helpers.documents import stuck_child

    monkeypatch.setattr(child, "CANCEL_GRACE_S", 3.0)
    monkeypatch.setattr(child, "_child", stuck_child)
    cancel = threading.Event()
    cancel.set()
    started = time.monotonic()
    with pytest.raises(RuntimeError, match="did not stop within 3 s of Cancel"):
        child.index_in_child(tmp_path / "d.sqlite3", cancel=cancel)
    assert (tmp_path / "d.started").exists()  # it ran, and was ended
    assert time.monotonic() - started < 30


def _bad_files(folder):
    """One file of every bad kind a library folder can hold, made for real."""
    write_pdf(folder / "locked.pdf", [["secret plans"]], password="pw")
    (folder / "broken.pdf").write_bytes(b"%PDF-1.7\n1 0 obj <<>> garbage")
    (folder / "empty.txt").write_bytes(b"")
    (folder / "blob.txt").write_bytes(bytes(range(256)) * 40)
    with (folder / "huge.log").open("wb") as f:
        f.truncate(2 * 2**30)  # sparse: no disk used


def test_every_bad_file_in_a_folder_is_a_sentence_and_the_rest_is_indexed_and_kept(tmp_path):
    index = DocumentIndex(tmp_path / "d.sqlite3")
    folder = _library(tmp_path, 3)
    name = index.add_folder(folder)
    index_paths(index, folders=[name])
    _bad_files(folder)
    (folder / "new.md").write_text("The lighthouse keeper is called Ada.")
    report = index_paths(index, folders=[name])
    assert sorted((p.name, p.kind) for p in report.problems) == [
        ("blob.txt", "binary"),
        ("broken.pdf", "damaged"),
        ("empty.txt", "empty"),
        ("huge.log", "too_large"),
        ("locked.pdf", "password"),
    ]
    sentences = {p.name: p.message for p in report.problems}
    assert sentences["huge.log"] == "huge.log is 2.0 GB; glmdesk reads documents up to 256 MB."
    assert sentences["locked.pdf"].startswith("locked.pdf is protected by a password")
    assert [r.name for r in report.indexed] == ["new.md"]  # the rest goes on
    assert sorted(r.name for r in report.unchanged) == ["note0.md", "note1.md", "note2.md"]  # nothing lost
    assert index.search(match_query("lighthouse keeper"))[0].document.name == "new.md"
    assert index.search(match_query("topic 2"))[0].document.name == "note2.md"
    again = index_paths(
        index, folders=[name]
    )  # the bad ones are tried again (they may be fixed), still sentences
    assert len(again.problems) == 5 and len(again.unchanged) == 4


def test_a_file_of_the_same_time_but_another_size_is_read_again(tmp_path):
    index = DocumentIndex(tmp_path / "d.sqlite3")
    folder = _library(tmp_path, 2)
    name = index.add_folder(folder)
    index_paths(index, folders=[name])
    note = folder / "note0.md"
    stat = note.stat()
    note.write_text("# Note 0\n\nNow about narwhals, and longer.\n")
    os.utime(note, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # the same time: only the size tells
    report = index_paths(index, folders=[name])
    assert [r.name for r in report.indexed] == ["note0.md"] and [r.name for r in report.unchanged] == [
        "note1.md"
    ]
    assert index.search(match_query("narwhals"))[0].document.name == "note0.md"
    (folder / "sub").mkdir()
    (folder / "sub" / "late.md").write_text("A file added later, about puffins.")
    (folder / "note1.md").unlink()
    report = index_paths(index, folders=[name])
    assert [r.name for r in report.indexed] == ["late.md"]
    assert report.forgotten == [str((folder / "note1.md").resolve())]
    assert index.document(folder / "note1.md") is None
    assert all(h.document.name != "note1.md" for h in index.search(match_query("topic 1"), limit=50))
