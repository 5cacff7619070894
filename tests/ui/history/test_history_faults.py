"""History failures reach the window once, in its notice bar (issue 19, item 3).

The real window and the real embedded model; the full disk is SQLite's own
``SQLITE_FULL`` (``PRAGMA max_page_count``), the damage is zeroed pages of a real file.
pytest-qt fails a test when a slot raises, so each passing test also shows that no
traceback went to stderr. The window writes on the history writer's thread, with a
connection of its own: the disk is filled on that connection (``max_page_count`` is
per connection), and a test waits for the writes (``controller.flush()``) before it
reads the file.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from glmdesk.core import paths
from glmdesk.core.errors import ErrorInfo
from glmdesk.core.history import History
from glmdesk.core.history_rounds import save_round
from glmdesk.core.history_schema import DB_NAME
from glmdesk.ui.common.messages import error_sentence
from glmdesk.ui.history import history_access
from glmdesk.ui.history.history_access import HistoryAccess
from glmdesk.ui.history.history_controller import HistoryController
from glmdesk.ui.history.history_panel import HistoryPanel
from tests.core.test_history_faults import fill_disk, free_disk, make_real_history, zero_pages

ANSWER_MS = 120_000


@pytest.fixture
def wired(window, tmp_path, monkeypatch):
    monkeypatch.setattr(history_access, "RETRY_MS", 200)
    history = History(tmp_path / "history.sqlite3")
    access = HistoryAccess(history, window.notice, parent=window)
    panel = HistoryPanel(history, access=access)
    window.set_history_panel(panel)
    controller = HistoryController(window.session, access, panel, window)
    yield window, history, controller
    controller.close()
    history.close()


def fill(controller) -> None:
    controller.writer.call(fill_disk)


def space(controller) -> None:
    controller.writer.call(free_disk)


def send(qtbot, window, text):
    with qtbot.waitSignal(window.session.answer_finished, timeout=ANSWER_MS) as blocker:
        assert window.send_message(text)
    return blocker.args[1]


def count_notices(window) -> list[str]:
    shown: list[str] = []
    original = window.notice.show_error
    window.notice.show_error = lambda text: (shown.append(text), original(text))
    return shown


def test_disk_full_mid_chat_keeps_the_answer_and_saves_it_when_space_returns(qtbot, wired):
    window, history, controller = wired
    window.sidebar.set_params(replace(window.sidebar.params(), max_new_tokens=6))
    send(qtbot, window, "What is the capital of France?")
    controller.flush()
    cid = controller.conversation_id
    assert [m.role for m in history.messages(cid)] == ["user", "assistant"]
    shown = count_notices(window)
    fill(controller)
    question = "Say hello. " + "Please answer briefly. " * 250  # more than a page: the file must grow
    send(qtbot, window, question)
    full = error_sentence(ErrorInfo("history_disk_full", "", {"path": str(history.path), "detail": ""}))
    qtbot.waitUntil(lambda: window.notice.text() == full, timeout=5000)
    assert shown == [full]  # once, in the window
    assert [m.role for m in history.messages(cid)] == ["user", "assistant"]  # no half round
    answer = window.state.messages[-1]
    assert answer.role == "assistant" and answer.content  # still on screen
    qtbot.waitUntil(lambda: controller.writes.blocked(), timeout=5000)
    assert controller.pending_writes() == 1
    space(controller)
    qtbot.waitUntil(lambda: controller.pending_writes() == 0, timeout=5000)  # the retry timer
    stored = history.messages(cid)
    assert [(m.role, m.text) for m in stored[2:]] == [("user", question), ("assistant", answer.content)]
    assert stored[3].complete and shown == [full]
    qtbot.waitUntil(lambda: window.notice.kind == "info", timeout=5000)  # "saved again"
    send(qtbot, window, "And Germany?")  # later rounds follow in order
    controller.flush()
    assert [m.role for m in history.messages(cid)] == ["user", "assistant"] * 3


def test_a_new_conversation_started_while_full_is_stored_whole_later(qtbot, wired):
    window, history, controller = wired
    window.sidebar.set_params(replace(window.sidebar.params(), max_new_tokens=4))
    fill(controller)
    send(qtbot, window, "What is the capital of France? " + "Answer briefly. " * 300)  # over a page
    controller.flush()
    assert controller.conversation_id is None and history.count_conversations() == 0
    first_answer = window.state.messages[-1].content
    with qtbot.waitSignal(window.session.answer_finished, timeout=ANSWER_MS):
        window.regenerate()  # a new version of the unsaved answer, still unsaved
    space(controller)
    controller.retry_pending()
    assert controller.flush()
    cid = controller.conversation_id
    stored = history.messages(cid)
    assert [m.role for m in stored] == ["user", "assistant"]
    assert stored[1].text == window.state.messages[-1].content
    # The first answer is kept as the other version (its parent looked up when it was stored).
    versions = history.siblings(stored[1].id)
    assert len(versions) == 2 and versions[1] == stored[1].id
    assert history.get_message(versions[0]).text == first_answer


def test_damaged_history_at_start_is_set_aside_and_the_user_told(qtbot, make_window):
    from glmdesk.ui.app.app import window_with_history

    path = paths.data_dir() / DB_NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    make_real_history(path)
    zero_pages(path, [2, 3, 4])
    window = window_with_history()
    qtbot.addWidget(window)
    controller = window.history_controller
    assert controller is not None
    moved = controller.history.set_aside
    assert moved is not None and moved.exists() and path.exists()
    assert window.notice.kind == "error"
    assert str(moved) in window.notice.text() and str(path) in window.notice.text()
    assert controller.history.count_conversations() == 0
    controller.close()  # the writer first (it empties the bin at start), then the file
    controller.history.close()


@pytest.fixture
def panel_wired(qtbot, make_window, tmp_path):
    """A window without a model, its panel and controller on a real history file."""
    window = make_window()
    history = History(tmp_path / "history.sqlite3")
    for i in range(3):
        save_round(history, None, f"question {i} " + "词" * 300, f"answer {i} " + "x" * 2000)
    access = HistoryAccess(history, window.notice, parent=window)
    panel = HistoryPanel(history, access=access)
    window.set_history_panel(panel)
    controller = HistoryController(window.session, access, panel, window)
    yield window, history, panel, controller
    controller.close()
    history.close()


def test_panel_writes_on_a_full_disk_show_the_notice_and_change_nothing(qtbot, panel_wired, tmp_path):
    window, history, panel, controller = panel_wired
    cid = history.list_conversations()[0].id
    exported = tmp_path / "c.json"
    panel.export_conversation(cid, exported, "json")
    before = [(c.id, c.title) for c in history.list_conversations()]
    sentence = error_sentence(ErrorInfo("history_disk_full", "", {"path": str(history.path), "detail": ""}))
    fill(controller)
    big = "长" * 20_000  # more than a page: the file must grow
    attempts = [
        lambda: panel.rename_conversation(cid, big),
        lambda: panel.import_conversation(exported),
        lambda: panel.duplicate_conversation(cid),
    ]
    for attempt in attempts:
        window.notice.dismiss()
        attempt()
        qtbot.waitUntil(lambda: window.notice.text() == sentence, timeout=5000)  # each time: the user acted
        assert controller.pending_writes() == 0  # given up, not retried behind the user's back
    assert [(c.id, c.title) for c in history.list_conversations()] == before
    space(controller)
    with qtbot.waitSignal(panel.conversation_renamed, timeout=5000):
        panel.rename_conversation(cid, "renamed")
    assert history.get_conversation(cid).title == "renamed"


def test_panel_delete_on_a_damaged_file_shows_the_notice(qtbot, panel_wired):
    window, history, panel, controller = panel_wired
    cid = history.list_conversations()[-1].id
    history.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    zero_pages(history.path, list(range(2, 40)))
    deleted = []
    panel.conversation_deleted.connect(deleted.append)
    sentence = error_sentence(ErrorInfo("history_damaged", "", {"path": str(history.path), "detail": ""}))
    panel.delete_conversation(cid)
    qtbot.waitUntil(lambda: window.notice.text() == sentence, timeout=5000)
    assert deleted == [] and not panel.undo_bar.isVisible()
