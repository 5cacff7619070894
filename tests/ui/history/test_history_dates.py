"""The history list under date headers (Today, Yesterday, Previous 7 days, Older), its
rows' "more" button (rename, delete) and its empty state."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtWidgets import QAbstractItemView, QApplication

from glmdesk.core.history import History
from glmdesk.ui.history.history_list_view import date_group
from glmdesk.ui.history.history_panel import HistoryPanel

TIMEOUT_MS = 5000
NOW = datetime(2026, 3, 12, 15, 30)  # a Thursday afternoon, local time


@pytest.fixture
def history():
    with History() as h:  # in GLMDESK_HOME, a fresh tmp_path per test
        yield h


def _add(history: History, title: str, updated: datetime) -> int:
    cid = history.create_conversation(title)
    history.add_message(cid, "user", f"about {title}")
    history.connection.execute(
        "UPDATE conversations SET updated = ? WHERE id = ?", (updated.timestamp(), cid)
    )
    history.connection.commit()
    return cid


def _panel(qtbot, history: History) -> HistoryPanel:
    panel = HistoryPanel(history, clock=lambda: NOW)
    qtbot.addWidget(panel)
    panel.resize(260, 500)
    panel.show()
    qtbot.waitExposed(panel)
    return panel


def test_date_groups_follow_calendar_days() -> None:
    at = datetime(2026, 3, 12, 0, 5)
    assert date_group(at.timestamp(), NOW) == "today"
    assert date_group((at - timedelta(minutes=10)).timestamp(), NOW) == "yesterday"  # 23:55 the day before
    assert date_group(datetime(2026, 3, 5, 9).timestamp(), NOW) == "week"  # 7 days before
    assert date_group(datetime(2026, 3, 4, 23).timestamp(), NOW) == "older"


def test_conversations_are_grouped_by_date_under_headers(qtbot, history: History) -> None:
    _add(history, "last year", datetime(2025, 6, 1, 10))
    _add(history, "monday", NOW - timedelta(days=3))
    _add(history, "yesterday night", NOW - timedelta(hours=20))
    _add(history, "this morning", NOW - timedelta(hours=6))
    _add(history, "just now", NOW - timedelta(minutes=2))
    panel = _panel(qtbot, history)
    view = panel.list_view
    rows = [
        (panel.model.index(r).data(), view.header_of(panel.model.index(r)))
        for r in range(panel.model.rowCount())
    ]
    assert rows == [
        ("just now", "Today"),
        ("this morning", ""),
        ("yesterday night", "Yesterday"),
        ("monday", "Previous 7 days"),
        ("last year", "Older"),
    ]
    # A header makes its row taller; a row inside a group is not.
    heights = [view.visualRect(panel.model.index(r)).height() for r in range(5)]
    assert heights[0] > heights[1] and heights[2] == heights[3] == heights[4] == heights[0]
    assert not view.is_empty_state_shown()


def test_a_click_on_a_header_opens_nothing_and_on_the_row_opens_it(qtbot, history: History) -> None:
    cid = _add(history, "only", NOW - timedelta(hours=1))
    panel = _panel(qtbot, history)
    view = panel.list_view
    index = panel.model.index(0)
    rect = view.visualRect(index)
    header_point = QPoint(rect.center().x(), rect.top() + 3)  # on "Today"
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=header_point)
    assert panel.current_conversation_id() is None
    with qtbot.waitSignal(panel.conversation_selected, timeout=TIMEOUT_MS) as blocker:
        qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=view.visual_point(index))
    assert blocker.args == [cid]


def _open_row_menu(qtbot, panel: HistoryPanel, row: int):
    view = panel.list_view
    rect = view.more_button_rect(panel.model.index(row))
    qtbot.mouseMove(view.viewport(), rect.center())
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    qtbot.waitUntil(lambda: panel.row_menu is not None and panel.row_menu.isVisible(), timeout=TIMEOUT_MS)
    return {action.text(): action for action in panel.row_menu.actions()}


def test_the_row_button_renames_a_conversation(qtbot, history: History) -> None:
    _add(history, "older one", NOW - timedelta(days=2))
    cid = _add(history, "draft title", NOW - timedelta(minutes=5))
    panel = _panel(qtbot, history)
    actions = _open_row_menu(qtbot, panel, 0)
    assert {"Rename", "Delete", "Duplicate"} <= set(actions)
    assert panel.current_conversation_id() == cid  # the button's row
    actions["Rename"].trigger()
    panel.row_menu.close()
    qtbot.waitUntil(
        lambda: panel.list_view.state() == QAbstractItemView.State.EditingState, timeout=TIMEOUT_MS
    )
    editor = QApplication.focusWidget()
    editor.selectAll()
    qtbot.keyClicks(editor, "Trip plan")
    with qtbot.waitSignal(panel.conversation_renamed, timeout=TIMEOUT_MS) as blocker:
        qtbot.keyClick(editor, Qt.Key.Key_Return)
    assert blocker.args == [cid, "Trip plan"]
    assert panel.model.index(0).data() == "Trip plan"


def test_the_row_button_deletes_a_conversation_with_undo(qtbot, history: History) -> None:
    keep = _add(history, "keep", NOW - timedelta(days=1))
    gone = _add(history, "remove me", NOW - timedelta(minutes=5))
    panel = _panel(qtbot, history)
    actions = _open_row_menu(qtbot, panel, 0)
    with qtbot.waitSignal(panel.conversation_deleted, timeout=TIMEOUT_MS) as blocker:
        actions["Delete"].trigger()
    assert blocker.args == [gone]
    assert [panel.model.index(r).data() for r in range(panel.model.rowCount())] == ["keep"]
    assert panel.undo_bar.isVisible()
    assert panel.list_view.header_of(panel.model.index(0)) == "Yesterday"
    assert keep in [c.id for c in history.list_conversations(10)]


def test_an_empty_history_says_what_will_appear(qtbot, history: History) -> None:
    panel = _panel(qtbot, history)
    view = panel.list_view
    assert view.is_empty_state_shown() and view.empty_label.isVisible()
    assert "conversations will appear here" in view.empty_label.text()
    _add(history, "first", NOW)
    panel.refresh()
    assert not view.is_empty_state_shown() and not view.empty_label.isVisible()
