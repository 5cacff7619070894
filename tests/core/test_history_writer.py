"""History writes on a thread of their own (issue 19, item 4): in order, errors typed,
nothing lost at close, a 2 MB message stored verbatim and seen by the reading connection."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from glmdesk.core.history import History
from glmdesk.core.history_errors import HistoryError
from glmdesk.core.history_rounds import save_round
from glmdesk.core.history_writer import HistoryWriter
from tests.core.test_history_faults import fill_disk, free_disk


def one_line_json(size: int) -> str:
    """``size`` characters of one-line JSON, like a pasted API response."""
    return json.dumps({f"key{i}": f"value {i}" for i in range(size // 10 + 1)})[:size]


def test_writes_run_in_order_on_one_other_thread_with_their_own_connection(tmp_path: Path) -> None:
    with History(tmp_path / "h.sqlite3") as history:
        writer = HistoryWriter(history)
        threads: set[int] = set()

        def write(i: int):
            def run(h: History) -> int:
                threads.add(threading.get_ident())
                assert h is not history
                return save_round(h, None, f"question {i}", f"answer {i}")

            return run

        futures = [writer.submit(write(i)) for i in range(20)]
        ids = [f.result() for f in futures]
        assert ids == sorted(ids) and len(set(ids)) == 20  # one conversation each, in order
        assert threads and threading.get_ident() not in threads and len(threads) == 1
        # The reading connection sees every committed write.
        titles = [c.title for c in history.list_conversations()]
        assert titles == [f"question {i}" for i in reversed(range(20))]
        writer.close()


def test_two_megabytes_are_stored_verbatim_and_found(tmp_path: Path) -> None:
    text = one_line_json(2_000_000)
    big = text + "\x00 lone \ud800 surrogate"  # exact text round-trips
    with History(tmp_path / "h.sqlite3") as history:
        writer = HistoryWriter(history)
        cid = writer.call(lambda h: save_round(h, None, big, "ok " + big[:1000]))
        assert history.messages(cid)[0].text == big
        assert json.loads(history.export_json(cid))["messages"][0]["text"] == big
        assert text in history.export_markdown(cid)  # Markdown is clean UTF-8
        hits = history.search('"value 70001"')  # near the end of the question only
        assert [h.conversation_id for h in hits] == [cid] and len(hits[0].snippet) < 200
        writer.close()


def test_a_full_disk_fails_the_write_typed_and_stores_nothing(tmp_path: Path) -> None:
    with History(tmp_path / "h.sqlite3") as history:
        writer = HistoryWriter(history)
        cid = writer.call(lambda h: save_round(h, None, "first", "answer"))
        writer.call(fill_disk)  # the writer's own connection can no longer grow the file
        failed = writer.submit(lambda h: save_round(h, cid, "q" * 40_000, "a" * 40_000))
        with pytest.raises(HistoryError) as raised:
            failed.result()
        assert raised.value.kind == "history_disk_full"
        assert [m.text for m in history.messages(cid)] == ["first", "answer"]
        writer.call(free_disk)
        writer.call(lambda h: save_round(h, cid, "q" * 40_000, "a" * 40_000))
        assert len(history.messages(cid)) == 4
        writer.close()


def test_close_waits_for_every_queued_write(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite3"
    big = one_line_json(500_000)
    with History(path) as history:
        writer = HistoryWriter(history)
        for i in range(5):
            writer.submit(lambda h, i=i: save_round(h, None, f"{i} {big}", "answer"))
        writer.close()  # as the app's quit does
        writer.close()  # idempotent
        with pytest.raises(RuntimeError):
            writer.submit(lambda h: None)
    with History(path) as again:
        assert again.count_conversations() == 5
        assert {again.messages(c.id)[0].text for c in again.list_conversations()} == {
            f"{i} {big}" for i in range(5)
        }


def test_an_in_memory_history_is_written_in_place(tmp_path: Path) -> None:
    with History(":memory:") as history:
        writer = HistoryWriter(history)
        assert not writer.threaded
        seen = []
        cid = writer.call(
            lambda h: (seen.append((h, threading.get_ident())), save_round(h, None, "q", "a"))[1]
        )
        assert seen == [(history, threading.get_ident())]
        assert len(history.messages(cid)) == 2
        writer.close()
