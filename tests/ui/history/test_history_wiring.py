"""The window saves as it chats and opens saved conversations (issues 6 and 7 cases 10, 14).

Writes run on the history writer's thread; a test waits for them (``controller.flush()``)
before it reads the file, as the window's own reads wait for the writes before them.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from glmdesk.core.history import History
from glmdesk.ui.history import history_recorder
from glmdesk.ui.history.history_access import HistoryAccess
from glmdesk.ui.history.history_controller import HistoryController
from glmdesk.ui.history.history_panel import HistoryPanel

ANSWER_MS = 120_000


@pytest.fixture
def wired(window, tmp_path):
    history = History(tmp_path / "history.sqlite3")
    access = HistoryAccess(history, window.notice, parent=window)
    panel = HistoryPanel(history, access=access)
    window.set_history_panel(panel)
    controller = HistoryController(window.session, access, panel, window)
    yield window, history, panel, controller
    controller.close()
    history.close()


def send(qtbot, window, text):
    with qtbot.waitSignal(window.session.answer_finished, timeout=ANSWER_MS) as blocker:
        assert window.send_message(text)
    return blocker.args[1]


def test_user_message_is_committed_before_the_answer_starts(qtbot, wired):
    window, history, _, controller = wired
    seen = []

    def at_start(_request_id):
        controller.flush()  # the writes queued before the answer starts
        seen.append([m.role for m in history.messages(controller.conversation_id)])

    window.session.answer_started.connect(at_start)
    final = send(qtbot, window, "What is the capital of France?")
    assert seen[0][0] == "user"
    controller.flush()
    stored = history.messages(controller.conversation_id)
    assert [m.role for m in stored] == ["user", "assistant"]
    assert stored[1].complete and stored[1].finish_reason == final.finish_reason
    assert stored[1].text == window.state.messages[-1].content
    assert stored[1].stats.tokens_per_s and stored[1].settings["temperature"] == 0.0


def test_partial_answer_is_checkpointed_and_stop_saves_once(qtbot, wired, monkeypatch):
    window, history, _, controller = wired
    monkeypatch.setattr(history_recorder, "CHECKPOINT_S", 0.0)  # every chunk
    window.sidebar.set_params(replace(window.sidebar.params(), max_new_tokens=200))
    checkpoints = []
    writers = controller.writer.call(lambda h: h)  # the writer thread's history
    original = writers.checkpoint_partial
    monkeypatch.setattr(
        writers,
        "checkpoint_partial",
        lambda mid, text, *more: (checkpoints.append(text), original(mid, text, *more)),
    )
    with qtbot.waitSignal(window.session.answer_finished, timeout=ANSWER_MS) as finished:
        window.send_message("Write a long story about a lighthouse keeper.")
        qtbot.waitUntil(lambda: len(checkpoints) >= 3, timeout=ANSWER_MS)
        controller.flush()
        stored = history.messages(controller.conversation_id)
        assert not stored[-1].complete and stored[-1].text == checkpoints[-1]
        window.stop_answer()
    assert finished.args[1].finish_reason == "cancelled"
    controller.flush()
    stored = history.messages(controller.conversation_id)
    assert [m.role for m in stored] == ["user", "assistant"]  # saved once
    assert stored[-1].complete and stored[-1].finish_reason == "cancelled"
    assert stored[-1].text == window.state.messages[-1].content
    # The next message works and continues the same conversation.
    send(qtbot, window, "What is the capital of France?")
    controller.flush()
    assert len(history.messages(controller.conversation_id)) == 4


def test_stop_right_after_send_leaves_no_empty_answer(qtbot, wired):
    window, history, _, controller = wired
    with qtbot.waitSignal(window.session.answer_finished, timeout=ANSWER_MS):
        window.send_message("Hello")
        window.stop_answer()
    controller.flush()
    roles = [m.role for m in history.messages(controller.conversation_id)]
    assert roles in (["user"], ["user", "assistant"])
    assert all(m.complete for m in history.messages(controller.conversation_id))


def test_regenerate_replaces_the_saved_answer(qtbot, wired):
    window, history, _, controller = wired
    send(qtbot, window, "What is the capital of France?")
    with qtbot.waitSignal(window.session.answer_finished, timeout=ANSWER_MS):
        window.regenerate()
    controller.flush()
    stored = history.messages(controller.conversation_id)
    assert [m.role for m in stored] == ["user", "assistant"]


def test_switching_conversation_mid_answer_saves_to_its_own(qtbot, wired):
    window, history, panel, controller = wired
    other = history.create_conversation("Older chat")
    history.add_message(other, "user", "Old question")
    history.add_message(other, "assistant", "Old answer")
    window.sidebar.set_params(replace(window.sidebar.params(), max_new_tokens=200))
    chunks = []
    window.session.step_shown.connect(lambda *a: chunks.append(a))
    with qtbot.waitSignal(window.session.answer_finished, timeout=ANSWER_MS):
        window.send_message("Write a long story about a lighthouse keeper.")
        qtbot.waitUntil(lambda: len(chunks) >= 2, timeout=ANSWER_MS)
        controller.flush()
        first = controller.conversation_id
        panel.conversation_selected.emit(other)  # as a click in the panel does
        controller.flush()
    stored = history.messages(first)
    assert [m.role for m in stored] == ["user", "assistant"]
    assert stored[-1].finish_reason == "cancelled" and stored[-1].text
    assert controller.conversation_id == other
    assert [m.content for m in window.state.messages] == ["Old question", "Old answer"]
    send(qtbot, window, "What is the capital of France?")
    controller.flush()
    assert len(history.messages(other)) == 4 and len(history.messages(first)) == 2


def test_deleting_the_open_conversation_mid_answer(qtbot, wired):
    window, history, panel, controller = wired
    window.sidebar.set_params(replace(window.sidebar.params(), max_new_tokens=200))
    chunks = []
    window.session.step_shown.connect(lambda *a: chunks.append(a))
    with qtbot.waitSignal(window.session.answer_finished, timeout=ANSWER_MS):
        window.send_message("Write a long story about a lighthouse keeper.")
        qtbot.waitUntil(lambda: len(chunks) >= 2, timeout=ANSWER_MS)
        controller.flush()
        cid = controller.conversation_id
        history.delete_conversation(cid)
        panel.conversation_deleted.emit(cid)
    assert controller.conversation_id is None and len(window.state.messages) == 0
    controller.flush()
    history.restore_conversation(cid)  # undo brings back what was saved
    stored = history.messages(cid)
    assert [m.role for m in stored] == ["user", "assistant"] and stored[-1].complete


def test_closing_mid_answer_saves_the_partial_answer(qtbot, make_window, shared_model, tmp_path):
    window = make_window(shared_model)
    history = History(tmp_path / "h.sqlite3")
    controller = HistoryController(
        window.session, HistoryAccess(history, window.notice, parent=window), None, window
    )
    window.sidebar.set_params(replace(window.sidebar.params(), max_new_tokens=200))
    chunks = []
    window.session.step_shown.connect(lambda *a: chunks.append(a))
    window.send_message("Write a long story about a lighthouse keeper.")
    qtbot.waitUntil(lambda: len(chunks) >= 2, timeout=ANSWER_MS)
    controller.flush()
    cid = controller.conversation_id
    window.close()
    controller.close()  # as the app does at quit: every write is stored first
    stored = history.messages(cid)
    assert [m.role for m in stored] == ["user", "assistant"]
    assert stored[-1].complete and stored[-1].finish_reason == "cancelled" and stored[-1].text
    history.close()


def test_status_bar_says_when_the_window_cache_evicts(qtbot, window):
    from glmdesk.core.settings import CacheSettings

    window.sidebar.set_cache_settings(CacheSettings("sliding_window", window=32, sinks=4))
    window.sidebar.set_params(replace(window.sidebar.params(), max_new_tokens=40))
    cache = send(qtbot, window, "Write a long story about a lighthouse keeper.").figures.cache
    assert cache.strategy == "sliding_window" and cache.evicted > 0
    assert cache.tokens_held == 36
    assert "evicted" in window.status.cache_label.text()


def test_the_bin_is_emptied_on_the_writer_thread_when_the_window_opens_its_history(
    qtbot, make_window, shared_model, tmp_path
):
    """A conversation deleted and not undone before the last exit is gone for good once
    the window's history is attached (the purge runs on the writer thread, not while the
    window is being built)."""
    from tests.ui.conftest import history_window

    path = tmp_path / "history.sqlite3"
    last_session = History(path)
    keep, gone = last_session.create_conversation("keep"), last_session.create_conversation("gone")
    last_session.delete_conversation(gone)
    last_session.close()

    window, history, panel, controller = history_window(make_window, path, shared_model)
    try:
        assert controller.flush(10)
        with pytest.raises(KeyError):
            history.get_conversation(gone)
        assert history.get_conversation(keep).title == "keep"
        assert [c.id for c in history.list_conversations()] == [keep]
    finally:
        controller.close()
        history.close()
