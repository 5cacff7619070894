"""The window at 1024x700 with the history list: it fits the screen, the sidebar's sections fit."""

from __future__ import annotations

from glmdesk.core.history import History
from glmdesk.ui.history.history_panel import HistoryPanel


def test_window_fits_1024x700_with_the_history_list(qtbot, make_window, tmp_path) -> None:
    window = make_window()
    history = History(tmp_path / "history.sqlite3")
    window.set_history_panel(HistoryPanel(history))
    window.resize(1024, 700)
    qtbot.waitUntil(lambda: window.width() == 1024, timeout=5000)
    assert window.minimumSizeHint().width() <= 1024
    # The KV cache names do not widen the sidebar; its list still shows them whole.
    combo = window.sidebar.cache_combo
    assert combo.minimumSizeHint().width() < combo.fontMetrics().horizontalAdvance(combo.itemText(0))
    assert combo.view().minimumWidth() >= combo.view().sizeHintForColumn(0)
    history.close()
