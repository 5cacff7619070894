"""The window's layout as a user meets it: the settings panel hides and shows (button,
menu, Ctrl+Shift+S) and stays as left, the model chip opens Open model, the chat column
keeps a readable width on a wide window, the user's turns sit in bubbles on the right."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QApplication

from glmdesk.core.messages import ChatMessage
from glmdesk.ui.app.main_window import MainWindow
from glmdesk.ui.app.shortcuts_dialog import ShortcutsDialog
from glmdesk.ui.app.window_layout import WindowWidgets
from glmdesk.ui.chat.centred_column import COLUMN_WIDTH
from glmdesk.ui.common.settings_store import SettingsStore
from glmdesk.ui.models.open_model_dialog import OpenModelDialog

WAIT_MS = 5000


@pytest.fixture
def open_window(qtbot):
    """Factory: a shown window without a model (closed at the end: its threads end)."""
    windows: list[MainWindow] = []

    def make(store: SettingsStore | None = None) -> MainWindow:
        window = MainWindow(store=store)
        windows.append(window)
        qtbot.addWidget(window)
        window.show()
        qtbot.waitExposed(window)
        return window

    yield make
    for window in windows:
        window.close()


def test_the_widgets_are_one_typed_object_the_window_keeps(qtbot, open_window) -> None:
    window = open_window()
    assert isinstance(window.widgets, WindowWidgets)
    assert window.widgets.chat_view is window.chat_view and window.widgets.sidebar is window.sidebar
    assert window.splitter.widget(2) is window.settings_panel


def test_the_settings_toggle_hides_and_shows_the_panel_and_is_remembered(qtbot, open_window) -> None:
    store = SettingsStore()
    window = open_window(store)
    assert window.sidebar.isVisible() and window.gauge.isVisible()  # shown at first
    assert window.settings_button.defaultAction() is window.sidebar_action
    qtbot.mouseClick(window.settings_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not window.sidebar.isVisible(), timeout=WAIT_MS)
    assert not window.gauge.isVisible() and not window.sidebar_action.isChecked()
    window.close()

    again = open_window(store)  # the next start keeps it hidden
    assert not again.sidebar.isVisible() and not again.sidebar_action.isChecked()
    again.sidebar_action.trigger()  # View > Show settings
    qtbot.waitUntil(again.sidebar.isVisible, timeout=WAIT_MS)
    assert again.settings_button.isChecked()
    again.close()
    assert open_window(store).sidebar.isVisible()


def test_ctrl_shift_s_toggles_the_settings_and_the_shortcuts_dialog_lists_it(qtbot, open_window) -> None:
    window = open_window()
    window.activateWindow()  # a window's shortcut acts once the window has the focus
    qtbot.waitUntil(lambda: QGuiApplication.focusWindow() is window.windowHandle(), timeout=WAIT_MS)
    keys = Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier
    qtbot.keyClick(window, Qt.Key.Key_S, keys)
    qtbot.waitUntil(lambda: not window.sidebar.isVisible(), timeout=WAIT_MS)
    qtbot.keyClick(window, Qt.Key.Key_S, keys)
    qtbot.waitUntil(window.sidebar.isVisible, timeout=WAIT_MS)
    rows = ShortcutsDialog(window.actions(), window).rows()
    assert ("Show settings", "Ctrl+Shift+S") in rows


def test_the_model_chip_names_the_model_and_opens_open_model(qtbot, window) -> None:
    chip = window.model_chip
    name = window.model_info.name
    assert name.replace("-", "\u2011") in chip.text() and "MiB" in chip.text()
    opened: list[object] = []

    def close_dialog() -> None:
        dialog = QApplication.activeModalWidget()
        opened.append(type(dialog))
        if dialog is not None:
            dialog.reject()

    QTimer.singleShot(0, close_dialog)
    qtbot.mouseClick(chip, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: opened != [], timeout=WAIT_MS)
    assert opened == [OpenModelDialog]


def test_the_chat_column_keeps_a_readable_width_on_a_wide_window(qtbot, open_window) -> None:
    window = open_window()
    window.set_settings_shown(False)
    window.resize(1900, 800)
    window.session.show_conversation(
        [ChatMessage("user", "Hi"), ChatMessage("assistant", "A long answer. " * 200)]
    )
    qtbot.waitUntil(lambda: len(window.chat_view.messages()) == 2, timeout=WAIT_MS)
    viewport = window.chat_view.viewport()
    qtbot.waitUntil(lambda: viewport.width() > COLUMN_WIDTH + 300, timeout=WAIT_MS)
    user, answer = window.chat_view.messages()

    def sides() -> tuple[int, int]:
        left = answer.mapTo(viewport, answer.rect().topLeft()).x()
        return left, viewport.width() - (left + answer.width())

    qtbot.waitUntil(lambda: answer.width() == COLUMN_WIDTH and min(sides()) > 300, timeout=WAIT_MS)
    left, right = sides()
    assert abs(left - right) <= 2  # centred
    # The user's short turn: a bubble on the right, as wide as its text.
    bubble = user.bubble_rect()
    assert bubble.right() >= user.width() - 2 and bubble.width() < user.width() / 2
    input_left = window.input_box.mapTo(window, window.input_box.rect().topLeft()).x()
    answer_left = answer.mapTo(window, answer.rect().topLeft()).x()
    # The input lines up with the messages (within the chat's scroll bar, which the input has not).
    scroll_bar = window.chat_view.verticalScrollBar().width()
    assert (
        abs(input_left - answer_left) <= scroll_bar
        and abs(window.input_box.width() - answer.width()) <= scroll_bar
    )


def test_attach_and_send_are_icons_and_send_turns_into_stop(qtbot, open_window) -> None:
    box = open_window().input_box
    for button in (box.send_button, box.attach_button):
        assert not button.icon().isNull()
        assert button.toolButtonStyle() == Qt.ToolButtonStyle.ToolButtonIconOnly
        assert box.composer.isAncestorOf(button)  # inside the rounded field
    send_icon = box.send_button.icon().cacheKey()
    assert box.send_button.text() == "Send" and "Enter" in box.send_button.toolTip()
    box.set_streaming(True)
    assert box.send_button.text() == "Stop" and box.send_button.icon().cacheKey() != send_icon
    box.set_streaming(False)
    assert box.send_button.icon().cacheKey() == send_icon
