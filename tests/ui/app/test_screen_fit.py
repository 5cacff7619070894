"""The window and every dialog fit the screen's available geometry: a window restored or
sized for a bigger screen is shrunk and moved inside, and Open model scrolls inside
with its Open and Cancel buttons on the screen (English and Chinese)."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QRect
from PySide6.QtWidgets import QDialogButtonBox

from glmdesk.core.settings import LoadSettings
from glmdesk.ui.common import screen_fit
from glmdesk.ui.models.open_model_dialog import OpenModelDialog

SMALL = QRect(0, 0, 1024, 700)


@pytest.fixture
def small_screen(monkeypatch):
    """Every widget is on a 1024x700 screen (the offscreen platform has one 800x800 screen)."""
    monkeypatch.setattr(screen_fit, "available_geometry", lambda widget: QRect(SMALL))
    return SMALL


def inside(widget, area: QRect) -> bool:
    top_left = widget.mapToGlobal(widget.rect().topLeft())
    return area.contains(QRect(top_left, widget.size()))


def test_the_window_opens_inside_a_1024x700_screen_with_input_and_send_usable(qtbot, small_screen) -> None:
    from glmdesk.ui.app.main_window import MainWindow

    window = MainWindow()
    qtbot.addWidget(window)
    assert window.width() <= 1024 - screen_fit.FRAME_MARGIN.width()
    assert window.height() <= 700 - screen_fit.FRAME_MARGIN.height()
    window.show()
    qtbot.waitExposed(window)
    assert inside(window, small_screen)
    # With the settings panel shown (the default), hidden, and shown again: all inside.
    for shown in (True, False, True):
        qtbot.waitUntil(lambda shown=shown: window.sidebar.isVisible() == shown, timeout=2000)
        parts = (window.input_box, window.input_box.send_button, window.chat_area)
        for part in parts + ((window.sidebar,) if shown else ()):
            assert part.isVisible() and part.width() > 0 and part.height() > 0
            assert inside(part, small_screen), part.objectName()
        assert window.input_box.width() >= 320  # room to type, not a sliver
        window.sidebar_action.trigger()
    window.close()


def test_a_restored_geometry_from_a_bigger_screen_is_clamped(qtbot, small_screen) -> None:
    from glmdesk.ui.app.main_window import MainWindow
    from glmdesk.ui.common.settings_store import SettingsStore

    store = SettingsStore()
    big = MainWindow(store=store)
    qtbot.addWidget(big)
    big.setGeometry(300, 200, 1900, 1150)
    store.save_bytes("geometry", big.saveGeometry())
    big.close()
    window = MainWindow(store=store)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    assert inside(window, small_screen)
    window.close()


@pytest.mark.parametrize("language", ["en", "zh_CN"])
def test_open_model_scrolls_inside_a_small_screen_with_its_buttons_shown(
    qtbot, monkeypatch, language
) -> None:
    from PySide6.QtWidgets import QApplication

    from glmdesk.ui.common.i18n import install_translators
    from glmdesk.ui.common.screen_fit import install_dialog_fit

    short = QRect(0, 0, 1024, 520)  # shorter than the dialog with llama.cpp's options
    monkeypatch.setattr(screen_fit, "available_geometry", lambda widget: QRect(short))
    app = QApplication.instance()
    install_translators(app, language)
    install_dialog_fit()
    try:
        dialog = OpenModelDialog(LoadSettings(), {"engine:llamacpp": None})
        qtbot.addWidget(dialog)
        assert dialog.sizeHint().height() > short.height()  # taller than the screen: it must scroll
        dialog.show()
        qtbot.waitExposed(dialog)
        assert dialog.height() <= short.height() - screen_fit.FRAME_MARGIN.height()
        assert inside(dialog, short)
        buttons = dialog.findChild(QDialogButtonBox)
        for button in buttons.buttons():
            assert inside(button, short) and button.isVisible()
    finally:
        install_translators(app, "en")


def test_a_dialog_fitted_and_freed_leaves_the_screen_to_the_next_window(qtbot) -> None:
    """Open model, fitted to its screen when shown and then freed with its window, once
    freed the application's screen with it: the next window crashed in its constructor."""
    import gc

    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication, QWidget

    from glmdesk.ui.app.main_window import MainWindow

    window = MainWindow()
    qtbot.addWidget(window)
    window.show()
    shown: list[str] = []

    def reject() -> None:
        dialog = QApplication.activeModalWidget()
        shown.append(type(dialog).__name__)
        if dialog is not None:
            dialog.reject()

    QTimer.singleShot(0, reject)
    window.model_chip.click()
    assert shown == ["OpenModelDialog"]
    window.close()
    assert not window.isVisible()
    del window
    gc.collect()
    screen = QApplication.primaryScreen()
    assert screen is not None and screen.availableGeometry().width() > 0
    later = QWidget()  # constructing a widget asks for its screen (where it crashed)
    qtbot.addWidget(later)
    later.show()
    qtbot.waitExposed(later)
