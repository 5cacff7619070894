"""Light and dark themes: system following, the View menu override, readable colours."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication, QPalette, QTextDocument
from PySide6.QtWidgets import QApplication, QMainWindow

from glmdesk.ui.chat.code_highlighter import CodeHighlighter, highlight_colours
from glmdesk.ui.chat.markdown_view import MarkdownView
from glmdesk.ui.common.settings_store import SettingsStore
from glmdesk.ui.common.theme import DARK, LIGHT, ThemeController, build_theme_menu, contrast_ratio


@pytest.fixture
def restore_look(qapp):
    """Themes change the whole application: put its style and palette back afterwards."""
    style, palette = qapp.style().name(), QPalette(qapp.palette())
    yield qapp
    qapp.setStyle(style)
    qapp.setPalette(palette)
    QGuiApplication.styleHints().setColorScheme(Qt.ColorScheme.Unknown)


def _window_is_dark() -> bool:
    return QGuiApplication.palette().color(QPalette.ColorRole.Window).lightness() < 128


@pytest.mark.parametrize("colours", [LIGHT, DARK], ids=["light", "dark"])
def test_text_is_readable_in_both_themes(colours) -> None:
    for background in (colours.base, colours.window, colours.user_bubble, colours.assistant_bubble):
        assert contrast_ratio(colours.text, background) >= 7.0, background
        assert contrast_ratio(colours.quiet, background) >= 4.5, background
    assert contrast_ratio(colours.link, colours.base) >= 4.5
    assert contrast_ratio(colours.highlighted_text, colours.highlight) >= 4.5


@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
def test_code_colours_are_readable_on_code_blocks(dark: bool) -> None:
    background = (DARK if dark else LIGHT).code_background
    for name, colour in highlight_colours(dark).items():
        assert contrast_ratio(colour, background) >= 4.5, name


def test_menu_override_switches_and_is_remembered(qtbot, restore_look) -> None:
    store = SettingsStore()
    window = QMainWindow()
    qtbot.addWidget(window)
    view = MarkdownView()
    qtbot.addWidget(view)
    view.set_markdown("```python\ndef f():\n    return 1\n```")
    controller = ThemeController(restore_look, "light", store)
    assert restore_look.style().name().lower() == "fusion"
    assert controller.scheme() == "light" and not _window_is_dark()
    menu = build_theme_menu(controller, window)
    actions = {a.data(): a for a in menu.actions()}
    assert actions["light"].isChecked()

    with qtbot.waitSignal(controller.scheme_changed, timeout=2000) as blocker:
        actions["dark"].trigger()
    assert blocker.args == ["dark"]
    assert _window_is_dark() and store.theme() == "dark"
    qtbot.waitUntil(lambda: view._highlighter.dark, timeout=2000)  # code colours follow the palette
    assert SettingsStore().theme() == "dark"  # saved in QSettings

    actions["light"].trigger()
    assert not _window_is_dark()
    qtbot.waitUntil(lambda: not view._highlighter.dark, timeout=2000)
    with pytest.raises(ValueError):
        controller.set_choice("sepia")


def test_following_the_system_scheme(qtbot, restore_look) -> None:
    controller = ThemeController(restore_look, "system")
    hints = QApplication.styleHints()
    with qtbot.waitSignal(controller.scheme_changed, timeout=2000):
        hints.colorSchemeChanged.emit(Qt.ColorScheme.Dark)  # what Qt sends when the system switches
    assert controller.scheme() == "dark" and _window_is_dark()
    controller.set_choice("light")  # the override wins over the system
    hints.colorSchemeChanged.emit(Qt.ColorScheme.Dark)
    assert controller.scheme() == "light"


def test_highlighter_colours_change_with_the_theme(qapp) -> None:
    document = QTextDocument()
    highlighter = CodeHighlighter(document, dark=False)
    light = highlighter._formats["kw"].foreground().color().name()
    highlighter.set_dark(True)
    assert highlighter._formats["kw"].foreground().color().name() != light


def test_chinese_interface_puts_an_installed_cjk_font_first(restore_look) -> None:
    from PySide6.QtGui import QFontDatabase

    from glmdesk.ui.common.theme import CJK_UI_FAMILIES, apply_interface_font

    font = restore_look.font()
    try:
        assert apply_interface_font(restore_look, "en") is None
        assert restore_look.font().families() == font.families()
        family = apply_interface_font(restore_look, "zh_CN")
        installed = [f for f in CJK_UI_FAMILIES if f in QFontDatabase.families()]
        assert family == (installed[0] if installed else None)
        if family is not None:
            assert restore_look.font().families()[0] == family
    finally:
        restore_look.setFont(font)
