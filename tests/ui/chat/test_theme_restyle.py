"""View -> Theme restyles the conversation already shown: bubbles, their author names,
badges and code blocks follow the new theme (they kept the old one and "You" went white
on pale)."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication, QPalette

from glmdesk.core.messages import ChatMessage
from glmdesk.ui.common.theme import DARK, LIGHT, ThemeController, contrast_ratio

CONVERSATION = [
    ChatMessage("user", "Show me code."),
    ChatMessage("assistant", "Here:\n\n```python\nprint(1)\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |"),
]


@pytest.fixture
def restore_look(qapp):
    style, palette = qapp.style().name(), QPalette(qapp.palette())
    yield qapp
    qapp.setStyle(style)
    qapp.setPalette(palette)
    QGuiApplication.styleHints().setColorScheme(Qt.ColorScheme.Unknown)


def shown_colours(window):
    """(bubble background, author text colour) of each message on screen."""
    out = []
    for widget in window.chat_view.messages():
        background = widget.palette().color(QPalette.ColorRole.Window).name()
        author = widget.author_label.palette().color(widget.author_label.foregroundRole()).name()
        out.append((background, author))
    return out


def test_a_theme_switch_restyles_messages_already_shown(qtbot, make_window, restore_look) -> None:
    controller = ThemeController(restore_look, "light")
    window = make_window()
    window.session.show_conversation(CONVERSATION)
    qtbot.waitUntil(lambda: len(window.chat_view.messages()) == 2, timeout=5000)
    assert shown_colours(window) == [(LIGHT.user_bubble, LIGHT.text), (LIGHT.assistant_bubble, LIGHT.text)]
    for scheme, colours in (("dark", DARK), ("light", LIGHT)):
        with qtbot.waitSignal(controller.scheme_changed, timeout=2000):
            controller.set_choice(scheme)
        expected = [(colours.user_bubble, colours.text), (colours.assistant_bubble, colours.text)]
        try:
            qtbot.waitUntil(lambda expected=expected: shown_colours(window) == expected, timeout=5000)
        finally:
            assert shown_colours(window) == expected, scheme
        for background, author in shown_colours(window):
            assert contrast_ratio(author, background) >= 7.0


def code_background(view) -> str:
    block = view.document().begin()
    while block.isValid():
        if block.text() == "print(1)":
            return block.blockFormat().background().color().name()
        block = block.next()
    raise AssertionError("no code line")


def test_code_blocks_have_a_header_a_copy_link_and_the_themes_background(qtbot, restore_look) -> None:
    from PySide6.QtCore import QUrl

    from glmdesk.ui.chat.markdown_view import COPY_CODE_SCHEME, MarkdownView

    controller = ThemeController(restore_look, "light")
    view = MarkdownView()
    qtbot.addWidget(view)
    view.set_markdown(CONVERSATION[1].content)
    assert view.code_blocks() == ["print(1)"]
    assert "python  Copy code\nprint(1)" in view.toPlainText()  # the language over the code
    assert code_background(view) == LIGHT.code_background
    view.anchorClicked.emit(QUrl(f"{COPY_CODE_SCHEME}:0"))
    assert QGuiApplication.clipboard().text() == "print(1)"
    with qtbot.waitSignal(controller.scheme_changed, timeout=2000):
        controller.set_choice("dark")
    qtbot.waitUntil(lambda: code_background(view) == DARK.code_background, timeout=5000)
    assert contrast_ratio(DARK.code_background, DARK.assistant_bubble) > 1.1  # told apart from the bubble
