"""The window's write queue (issue 19, items 3 and 4): in order on the writer thread,
a failed write waits at the head and is retried, droppable ones are given up, reads
wait for the writes before them. A real history file; the full disk is SQLite's own
``SQLITE_FULL`` on the writer's connection."""

from __future__ import annotations

import pytest

from glmdesk.core.history import History
from glmdesk.core.history_rounds import save_round
from glmdesk.core.history_writer import HistoryWriter
from glmdesk.ui.history.history_writes import WriteQueue
from tests.core.test_history_faults import fill_disk, free_disk

MS = 10_000


@pytest.fixture
def queue(qtbot, tmp_path):
    history = History(tmp_path / "h.sqlite3")
    writes = WriteQueue(HistoryWriter(history), retry_ms=100)
    yield history, writes
    writes.close()
    history.close()


def test_writes_are_stored_in_order_and_reads_wait_for_them(qtbot, queue):
    history, writes = queue
    results, reads = [], []
    for i in range(10):
        writes.submit(lambda h, i=i: save_round(h, None, f"q{i}", f"a{i}"), then=results.append)
    writes.after_writes(lambda: reads.append(history.count_conversations()))
    assert reads == [] and writes.busy()  # queued: the GUI thread did not wait
    with qtbot.waitSignal(writes.drained, timeout=MS):
        pass
    assert results == sorted(results) and len(results) == 10
    assert reads == [10]  # the read ran after every write before it
    writes.after_writes(lambda: reads.append("now"))
    assert reads[-1] == "now"  # nothing queued: at once


def test_a_failed_write_waits_at_the_head_and_later_ones_never_overtake_it(qtbot, queue):
    history, writes = queue
    writes.writer.call(fill_disk)
    failures, order = [], []
    writes.write_failed.connect(lambda error, again: failures.append(error.kind))
    writes.submit(lambda h: order.append(save_round(h, None, "big " * 20_000, "answer")))
    writes.submit(lambda h: order.append(save_round(h, None, "small", "x")))
    qtbot.waitUntil(writes.blocked, timeout=MS)
    assert failures[0] == "history_disk_full" and writes.pending() == 2 and order == []
    with qtbot.waitSignal(writes.write_recovered, timeout=MS):
        writes.writer.call(free_disk)  # the retry timer tries again
    writes.flush()
    assert len(order) == 2 and order[0] < order[1]  # the big round first, as submitted
    assert history.get_conversation(order[0]).title.startswith("big big")
    assert writes.pending() == 0 and not writes.blocked()


def test_droppable_writes_are_given_up_and_erased_conversations_end_a_write_silently(qtbot, queue):
    history, writes = queue
    cid = save_round(history, None, "q", "a")
    writes.writer.call(fill_disk)
    failures, then = [], []
    writes.write_failed.connect(lambda error, again: failures.append((error.kind, again)))
    writes.submit(
        lambda h: h.rename_conversation(cid, "长" * 20_000), then=then.append, droppable=True, again=True
    )
    writes.writer.call(free_disk)
    writes.submit(lambda h: h.rename_conversation(cid + 99, "nobody"), then=then.append)  # KeyError
    writes.submit(lambda h: h.rename_conversation(cid, "kept"), then=then.append)
    assert writes.flush()
    assert failures == [("history_disk_full", True)] and then == [None]
    assert history.get_conversation(cid).title == "kept"


def test_quiet_writes_alone_do_not_announce_themselves(qtbot, queue):
    history, writes = queue
    cid = save_round(history, None, "q", "a")
    drained = []
    writes.drained.connect(lambda: drained.append(True))
    writes.submit(lambda h: h.rename_conversation(cid, "checkpoint-like"), quiet=True)
    writes.flush()
    assert drained == []
    writes.submit(lambda h: h.rename_conversation(cid, "shown"))
    writes.submit(lambda h: h.rename_conversation(cid, "quiet after"), quiet=True)
    writes.flush()
    assert drained == [True]
