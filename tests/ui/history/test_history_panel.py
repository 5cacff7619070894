"""pytest-qt tests of the history panel (offscreen; tests/conftest.py points GLMDESK_HOME at tmp_path)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from PySide6.QtCore import QCoreApplication, Qt, QTranslator
from PySide6.QtGui import QGuiApplication

from glmdesk.core.history import History
from glmdesk.ui.history.history_models import HTML_ROLE, ID_ROLE, PAGE
from glmdesk.ui.history.history_panel import HistoryPanel

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
TIMEOUT_MS = 5000


@pytest.fixture
def history():
    with History() as h:  # in GLMDESK_HOME, a fresh tmp_path per test
        yield h


@pytest.fixture
def panel(qtbot, history: History) -> HistoryPanel:
    widget = HistoryPanel(history)
    qtbot.addWidget(widget)
    widget.resize(360, 600)
    widget.show()
    return widget


def _titles(panel: HistoryPanel) -> list[str]:
    model = panel.model
    return [model.index(row).data() for row in range(model.rowCount())]


def _add(history: History, title: str, *texts: str) -> int:
    cid = history.create_conversation(title)
    for i, text in enumerate(texts):
        history.add_message(cid, ("user", "assistant")[i % 2], text)
    return cid


def test_lists_newest_first_and_loads_lazily(qtbot, history: History) -> None:
    with history.transaction():
        ids = [_add(history, f"chat {i}", f"message {i}") for i in range(PAGE * 2 + 5)]
    panel = HistoryPanel(history)
    qtbot.addWidget(panel)
    panel.show()
    assert panel.model.rowCount() == PAGE  # one page until the user scrolls
    assert _titles(panel)[:2] == [f"chat {PAGE * 2 + 4}", f"chat {PAGE * 2 + 3}"]
    with qtbot.waitSignal(panel.conversation_selected, timeout=TIMEOUT_MS) as blocker:
        assert panel.select_conversation(ids[0])  # the oldest: loads the remaining pages
    assert blocker.args == [ids[0]]
    assert panel.model.rowCount() == len(ids)


def test_user_click_selects(qtbot, panel: HistoryPanel, history: History) -> None:
    cid = _add(history, "hello", "hi")
    panel.refresh()
    index = panel.model.index(0)
    point = panel.list_view.visual_point(index)  # the row under its date header
    with qtbot.waitSignal(panel.conversation_selected, timeout=TIMEOUT_MS) as blocker:
        qtbot.mouseClick(panel.list_view.viewport(), Qt.MouseButton.LeftButton, pos=point)
    assert blocker.args == [cid]


def test_renames_inline_and_by_call(qtbot, panel: HistoryPanel, history: History) -> None:
    cid = _add(history, "old", "x")
    panel.refresh()
    with qtbot.waitSignal(panel.conversation_renamed, timeout=TIMEOUT_MS) as blocker:
        assert panel.model.setData(panel.model.index(0), "  new title ")  # what the inline editor does
    assert blocker.args == [cid, "new title"]
    assert history.get_conversation(cid).title == "new title"
    with qtbot.waitSignal(panel.conversation_renamed, timeout=TIMEOUT_MS):
        panel.rename_conversation(cid, "量子计算")
    assert _titles(panel) == ["量子计算"]
    assert not panel.model.setData(panel.model.index(0), "   ")  # blank titles are refused


def test_delete_with_undo_then_purge(qtbot, panel: HistoryPanel, history: History) -> None:
    keep = _add(history, "keep", "a")
    gone = _add(history, "gone", "b")
    panel.refresh()
    panel.select_conversation(gone)
    with qtbot.waitSignal(panel.conversation_deleted, timeout=TIMEOUT_MS) as blocker:
        panel.delete_conversation(gone)
    assert blocker.args == [gone]
    assert _titles(panel) == ["keep"] and panel.current_conversation_id() is None
    assert panel.undo_bar.isVisible()
    with qtbot.waitSignal(panel.conversation_restored, timeout=TIMEOUT_MS):
        qtbot.mouseClick(panel.undo_bar.button, Qt.MouseButton.LeftButton)
    assert _titles(panel) == ["gone", "keep"] and not panel.undo_bar.isVisible()

    panel.undo_bar.timer.setInterval(10)  # let the Undo offer expire quickly
    panel.delete_conversation(gone)
    qtbot.waitUntil(lambda: not panel.undo_bar.isVisible(), timeout=TIMEOUT_MS)
    with pytest.raises(KeyError):
        history.get_conversation(gone)  # purged for good
    assert [c.id for c in history.list_conversations()] == [keep]


def test_delete_key_triggers_delete(qtbot, panel: HistoryPanel, history: History) -> None:
    cid = _add(history, "one", "a")
    panel.refresh()
    panel.select_conversation(cid)
    panel.list_view.setFocus()
    with qtbot.waitSignal(panel.conversation_deleted, timeout=TIMEOUT_MS):
        qtbot.keyClick(panel.list_view, Qt.Key.Key_Delete)


def test_searches_with_highlights(qtbot, panel: HistoryPanel, history: History) -> None:
    zh = _add(history, "物理", "请解释量子计算", "量子计算使用量子比特")
    _add(history, "recipes", "How do I whisk eggs?", "Whisk them hard.")
    with qtbot.waitSignal(panel.search_finished, timeout=TIMEOUT_MS) as blocker:
        panel.search_box.setText("量子计算")  # as typed: the debounce timer runs the search
    assert blocker.args == [2]
    assert panel.stack.currentWidget() is panel.results_view
    html = panel.results.index(0).data(HTML_ROLE)
    assert "background-color" in html and "量子计算</span>" in html and "<b>物理</b>" in html
    panel.search_box.clear()
    with qtbot.waitSignal(panel.search_finished, timeout=TIMEOUT_MS) as blocker:
        qtbot.keyClicks(panel.search_box, "WHISK")  # keyClicks takes ASCII only
    assert blocker.args == [2]
    with qtbot.waitSignal(panel.search_finished, timeout=TIMEOUT_MS) as blocker:
        panel.search("量子")  # two characters: LIKE fallback
    assert blocker.args == [2] and panel.results.rowCount() == 2
    with qtbot.waitSignals([panel.search_result_selected, panel.conversation_selected], timeout=TIMEOUT_MS):
        panel.results_view.setCurrentIndex(panel.results.index(0))
    assert panel.results.index(0).data(ID_ROLE) == zh
    panel.results_view.grab()  # the highlight delegate paints
    with qtbot.waitSignal(panel.search_finished, timeout=TIMEOUT_MS) as blocker:
        panel.search("")
    assert blocker.args == [0] and panel.stack.currentWidget() is panel.list_view


def test_only_the_newest_search_is_shown(qtbot, panel: HistoryPanel, history: History) -> None:
    """Searches run off the window's thread; a slower, older one never replaces a newer one."""
    _add(history, "fruit", "apples and pears", "pears are sweet")
    _add(history, "tools", "a hammer", "and nails")
    finished: list[int] = []
    panel.search_finished.connect(finished.append)
    with qtbot.waitSignal(panel.search_finished, timeout=TIMEOUT_MS) as blocker:
        panel.search("pears")  # 2 hits, never shown
        panel.search("ha")  # typed on before the first finished
        panel.search("nails")
    assert blocker.args == [1]
    qtbot.waitUntil(lambda: not panel.searches.busy(), timeout=TIMEOUT_MS)
    QCoreApplication.processEvents()  # late results of the older searches arrive (and are dropped)
    assert finished == [1]  # the two older searches were not announced
    hits = [panel.results.index(row).data(HTML_ROLE) for row in range(panel.results.rowCount())]
    assert len(hits) == 1 and "nails" in hits[0]
    # Clearing the box while a search runs shows the list, not late results.
    panel.search("pears")
    with qtbot.waitSignal(panel.search_finished, timeout=TIMEOUT_MS) as blocker:
        panel.search("")
    assert blocker.args == [0]
    qtbot.waitUntil(lambda: not panel.searches.busy(), timeout=TIMEOUT_MS)
    QCoreApplication.processEvents()
    assert panel.stack.currentWidget() is panel.list_view


def test_duplicate_export_import_copy(qtbot, panel: HistoryPanel, history: History, tmp_path: Path) -> None:
    cid = _add(history, "original", "问题", "answer")
    panel.refresh()
    with qtbot.waitSignal(panel.conversation_duplicated, timeout=TIMEOUT_MS) as blocker:
        copy = panel.duplicate_conversation(cid)
    assert blocker.args == [cid, copy] and panel.current_conversation_id() == copy
    assert _titles(panel)[0] == "original (copy)"

    path = tmp_path / "out.json"
    with qtbot.waitSignal(panel.conversation_exported, timeout=TIMEOUT_MS):
        panel.export_conversation(cid, path, "json")
    assert json.loads(path.read_text(encoding="utf-8"))["messages"][0]["text"] == "问题"
    with qtbot.waitSignal(panel.conversation_imported, timeout=TIMEOUT_MS) as blocker:
        new = panel.import_conversation(path)
    assert blocker.args == [new] and history.export_json(new) == history.export_json(cid)
    md = tmp_path / "out.md"
    panel.export_conversation(cid, md, "markdown")
    assert md.read_text(encoding="utf-8").startswith("# original")
    with qtbot.waitSignal(panel.conversation_copied, timeout=TIMEOUT_MS):
        panel.copy_markdown(cid)
    assert "### User\n\n问题" in QGuiApplication.clipboard().text()
    bad = tmp_path / "bad.json"
    bad.write_text("{}", encoding="utf-8")
    with pytest.raises(ValueError):
        panel.import_conversation(bad)


def test_switching_conversation_mid_answer_saves_to_its_own(
    qtbot, panel: HistoryPanel, history: History
) -> None:
    a = _add(history, "a", "question a")
    b = _add(history, "b", "question b")
    panel.refresh()
    panel.select_conversation(a)
    mid = history.begin_assistant_message(a, model="smol")
    history.checkpoint_partial(mid, "half an ans")
    with qtbot.waitSignal(panel.conversation_selected, timeout=TIMEOUT_MS) as blocker:
        panel.select_conversation(b)  # the window stops the stream, then saves with mid
    assert blocker.args == [b]
    history.finish_assistant_message(mid, "half an answer", "cancelled")
    panel.refresh()
    assert panel.current_conversation_id() == b  # refresh keeps the user's place
    assert [m.text for m in history.messages(a)] == ["question a", "half an answer"]
    assert [m.text for m in history.messages(b)] == ["question b"]
    assert _titles(panel) == ["a", "b"]  # a was updated last


def test_deleting_mid_answer_keeps_the_answer_until_purge(
    qtbot, panel: HistoryPanel, history: History
) -> None:
    a = _add(history, "a", "question a")
    panel.refresh()
    mid = history.begin_assistant_message(a)
    with qtbot.waitSignal(panel.conversation_deleted, timeout=TIMEOUT_MS):
        panel.delete_conversation(a)
    history.finish_assistant_message(mid, "partial", "cancelled")  # the stopped stream saves
    panel.undo_delete()
    assert [m.text for m in history.messages(a)] == ["question a", "partial"]


class _Shouting(QTranslator):
    """Translates every string into upper case, as a stand-in for zh_CN."""

    def translate(self, context, source, disambiguation=None, n=-1):  # noqa: ANN001
        return (
            source.upper()
            if context in ("HistoryPanel", "ConversationListModel", "SearchResultModel")
            else ""
        )

    def isEmpty(self) -> bool:
        return False


def test_visible_strings_are_translatable(qtbot, history: History) -> None:
    translator = _Shouting()
    QCoreApplication.installTranslator(translator)
    try:
        _add(history, "", "")  # untitled
        panel = HistoryPanel(history)
        qtbot.addWidget(panel)
        assert panel.search_box.placeholderText() == "SEARCH ALL CONVERSATIONS"
        assert {a.text() for a in panel.list_view.actions()} == {
            "RENAME",
            "DUPLICATE",
            "COPY AS MARKDOWN",
            "EXPORT AS MARKDOWN…",
            "EXPORT AS JSON…",
            "DELETE",
        }
        assert panel.undo_bar.button.text() == "UNDO"
        assert _titles(panel) == ["UNTITLED"]
        assert panel.markdown_labels()["assistant"] == "ASSISTANT"
    finally:
        QCoreApplication.removeTranslator(translator)


def test_an_undo_that_runs_out_after_the_history_closed_purges_nothing(qtbot, tmp_path) -> None:
    """The window closed the history while a deleted conversation's Undo was still offered:
    its time running out later raised "Cannot operate on a closed database" in Qt's event
    loop. Now nothing runs; the row stays marked deleted."""
    path = tmp_path / "history.sqlite3"
    history = History(path)
    cid = _add(history, "gone", "hello")
    panel = HistoryPanel(history)
    qtbot.addWidget(panel)
    panel.delete_conversation(cid)
    assert not panel.undo_bar.isHidden()
    history.close()
    panel.undo_bar.expired.emit()  # the Undo bar's time runs out
    with History(path) as reopened:  # still there, marked deleted: the window's next start purges it
        rows = reopened.connection.execute("SELECT deleted FROM conversations").fetchall()
        assert len(rows) == 1 and rows[0][0] is not None
        assert reopened.list_conversations() == []
