"""Formulas render in answers (issue 28, item 2): what a reader sees and what Copy keeps.

The delimiter rules are checked on text (fast); the view tests wait for the drawing
thread (mathtext is imported on first use, seconds on a busy machine).
"""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFont, QFontInfo, QGuiApplication, QImage, QPalette, QTextCursor

from glmdesk.ui.chat.chat_view import ChatView
from glmdesk.ui.chat.long_markdown import split_segments
from glmdesk.ui.chat.markdown_view import MarkdownView
from glmdesk.ui.chat.math_render import MathRenderer, shared_renderer
from glmdesk.ui.chat.math_text import find_math
from glmdesk.ui.chat.message_widget import MessageWidget
from glmdesk.ui.common.theme import make_palette, theme_colours

WAIT_MS = 120_000


def found(text: str) -> list[tuple[str, bool]]:
    return [(span.tex, span.display) for span in find_math(text)]


@pytest.mark.parametrize(
    ("text", "formulas"),
    [
        ("Euler: $e^{i\\pi} + 1 = 0$.", [("e^{i\\pi} + 1 = 0", False)]),
        ("inline \\(a^2 + b^2\\) too", [("a^2 + b^2", False)]),
        ("$$\n\\int_0^1 x\\,dx\n$$", [("\\int_0^1 x\\,dx", True)]),
        ("display \\[ \\sum_k k \\] here", [("\\sum_k k", True)]),
        ("$x$ and $$y$$ and \\(z\\)", [("x", False), ("y", True), ("z", False)]),
    ],
    ids=["dollar", "paren", "double-dollar", "bracket", "mixed"],
)
def test_every_delimiter_is_found(text, formulas):
    assert found(text) == formulas


@pytest.mark.parametrize(
    "text",
    [
        "Apples cost $3 and pears $5",
        "It went from $5-$10 a kilo.",
        "Bring $3, $4 or $ 5.",
        "Escaped \\$x\\$ is text.",
        "Half open $x + y",
        "Half open \\(x + y",
        "$$\\int_0^1",
        "code `$x$` here",
        "code ``a ` $y$`` here",
        "```python\nprice = '$x$'\n```",
        "text\n\n    $x$ in an indented code block",
    ],
    ids=[
        "prices",
        "range",
        "list",
        "escaped",
        "unclosed",
        "unclosed-paren",
        "unclosed-display",
        "code-span",
        "double-backtick",
        "fence",
        "indented",
    ],
)
def test_prices_code_and_unclosed_delimiters_are_not_math(text):
    assert found(text) == []


def test_math_in_a_list_item_is_found_and_code_next_to_it_is_not():
    text = "- item with `$a$`\n\n    $b$ continues the item\n\n```\n$c$\n```\n$d$"
    assert found(text) == [("b", False), ("d", False)]


def _drawn(qtbot, view) -> None:
    qtbot.waitUntil(lambda: not view.is_drawing_formulas(), timeout=WAIT_MS)


@pytest.fixture
def view(qtbot):
    view = MarkdownView()
    qtbot.addWidget(view)
    view.resize(600, 300)
    view.show()
    return view


def _image_blocks(view: MarkdownView) -> list:
    """Blocks of the view's document that hold a formula image."""
    names = {formula.name for formula in view.formulas()}
    blocks, block = [], view.document().begin()
    while block.isValid():
        it = block.begin()
        while not it.atEnd():
            fmt = it.fragment().charFormat()
            if fmt.isImageFormat() and fmt.toImageFormat().name() in names:
                blocks.append(block)
            it += 1
        block = block.next()
    return blocks


def test_formulas_are_drawn_as_images_and_copy_keeps_their_tex(qtbot, view):
    text = "Euler wrote $e^{i\\pi}+1=0$ and \\(a \\le b\\).\n\n$$\\int_0^\\infty e^{-x^2}\\,dx = \\frac{\\sqrt{\\pi}}{2}$$\n\nDone."
    view.set_markdown(text)
    _drawn(qtbot, view)
    assert [f.source for f in view.formulas()] == [
        "$e^{i\\pi}+1=0$",
        "\\(a \\le b\\)",
        "$$\\int_0^\\infty e^{-x^2}\\,dx = \\frac{\\sqrt{\\pi}}{2}$$",
    ]
    assert "\\int" not in view.document().toPlainText()  # drawn, not written
    assert view.markdown() == text  # the source is untouched
    plain = view.toPlainText()
    assert "Euler wrote $e^{i\\pi}+1=0$ and \\(a \\le b\\)." in plain
    assert "$$\\int_0^\\infty e^{-x^2}\\,dx = \\frac{\\sqrt{\\pi}}{2}$$" in plain
    view.selectAll()
    assert view.createMimeDataFromSelection().text() == plain
    display = _image_blocks(view)[-1]
    assert display.text() == "\ufffc"  # a line of its own ...
    assert display.blockFormat().alignment() & Qt.AlignmentFlag.AlignHCenter  # ... centred
    assert view.blocked_resources == []


def test_prices_and_code_stay_text_beside_formulas(qtbot, view):
    view.set_markdown("Apples cost $3 and pears $5; `$x$` is code; $y^2$ is math.")
    _drawn(qtbot, view)
    assert [f.source for f in view.formulas()] == ["$y^2$"]
    assert view.document().toPlainText().startswith("Apples cost $3 and pears $5; $x$ is code; ")


def test_a_formula_mathtext_cannot_draw_shows_its_source_with_a_note(qtbot, view):
    source = "$$\\begin{aligned} a &= b \\\\ c &= d \\end{aligned}$$"
    view.set_markdown(f"The system:\n\n{source}\n\nand $\\boxed{{x}}$.")
    _drawn(qtbot, view)
    assert view.formulas() == []
    text = view.document().toPlainText()
    assert source in text and "\\begin cannot be drawn here" in text
    assert "$\\boxed{x}$" in text and "\\boxed cannot be drawn here" in text


def test_an_unclosed_formula_stays_text_while_streaming_until_closed(qtbot):
    chat = ChatView()
    qtbot.addWidget(chat)
    chat.resize(700, 500)
    chat.show()
    message = chat.begin_stream()
    chat.append_text("The area is $\\pi r")
    qtbot.waitUntil(lambda: chat.render_count >= 1, timeout=WAIT_MS)
    segment = message.view.segments()[-1]
    assert "$\\pi r" in segment.document().toPlainText() and segment.formulas() == []
    chat.append_text("^2$ for a circle.")
    chat.finish_stream()
    _drawn(qtbot, segment)
    assert [f.source for f in segment.formulas()] == ["$\\pi r^2$"]
    assert message.text() == "The area is $\\pi r^2$ for a circle."


def _ink(view: MarkdownView) -> QColor:
    """The colour of the most opaque pixel of the view's first formula."""
    image = view.formulas()[0].image
    best = max(
        (image.pixelColor(x, y) for x in range(image.width()) for y in range(image.height())),
        key=QColor.alpha,
    )
    return QColor(best.red(), best.green(), best.blue())


def test_formulas_follow_the_theme_and_the_font_size(qtbot, qapp, view):
    old = qapp.palette()
    try:
        for scheme in ("light", "dark"):
            qapp.setPalette(make_palette(theme_colours(scheme)))
            view.set_markdown(f"In {scheme}: $x^2 + y^2 = z^2$")
            _drawn(qtbot, view)
            text = QGuiApplication.palette().color(QPalette.ColorRole.Text)
            ink = _ink(view)
            assert abs(ink.lightness() - text.lightness()) < 40, scheme
        dark_width = view.formulas()[0].image.width()
        font = QFont(view.font())
        font.setPixelSize(QFontInfo(view.font()).pixelSize() * 2)
        view.setFont(font)
        _drawn(qtbot, view)
        assert view.formulas()[0].image.width() > 1.6 * dark_width
    finally:
        qapp.setPalette(old)


def test_images_are_drawn_at_the_device_pixel_ratio(qtbot, qapp):
    renderer = MathRenderer()
    colour = QColor("#1d1f23")
    images = {}
    for dpr in (1.0, 2.0):
        qtbot.waitUntil(
            lambda dpr=dpr: renderer.image("a^2", False, 14.0, dpr, colour, 3.5) is not None, timeout=WAIT_MS
        )
        images[dpr] = renderer.image("a^2", False, 14.0, dpr, colour, 3.5)
    assert images[2.0].devicePixelRatio() == 2.0
    assert abs(images[2.0].width() - 2 * images[1.0].width()) <= 2  # twice the pixels, same size
    renderer.stop()


def test_copy_and_plain_text_copy_of_a_message_keep_the_tex(qtbot):
    message = MessageWidget("assistant", "So $a^2+b^2=c^2$ holds.")
    qtbot.addWidget(message)
    message.show()
    segment = message.view.segments()[-1]
    _drawn(qtbot, segment)
    assert len(segment.formulas()) == 1
    message.copy_to_clipboard()
    assert QGuiApplication.clipboard().text() == "So $a^2+b^2=c^2$ holds."
    assert message.view.toPlainText() == "So $a^2+b^2=c^2$ holds."  # "Copy as plain text"
    cursor = segment.textCursor()
    cursor.movePosition(QTextCursor.MoveOperation.Start)
    cursor.movePosition(QTextCursor.MoveOperation.Right, QTextCursor.MoveMode.KeepAnchor, 4)
    segment.setTextCursor(cursor)
    assert segment.createMimeDataFromSelection().text() == "So $a^2+b^2=c^2$"
    assert shared_renderer().pending() == 0


def test_a_long_paragraph_is_never_cut_inside_a_display_formula():
    formula = "$$\n" + "".join(f"a_{{{i}}} + " for i in range(30)) + "\n= b\n$$\n"
    text = "words " * 150 + "\n" + formula + "more " * 300
    start = text.index("$$")
    segments = split_segments(text)
    assert len(segments) > 1
    assert any(s.start <= start and text.index("$$", start + 2) + 2 <= s.end for s in segments)
    assert "".join(text[s.start : s.end] for s in segments) == text


def test_formulas_are_drawn_in_a_child_process_and_in_the_window_s_if_it_dies(qtbot, qapp):
    import os

    renderer = MathRenderer()
    colour = QColor("#1d1f23")
    try:
        qtbot.waitUntil(
            lambda: renderer.image("a^2", False, 14.0, 1.0, colour, 3.5) is not None, timeout=WAIT_MS
        )
        child = renderer._child
        assert child is not None and child.poll() is None and child.pid != os.getpid()
        child.kill()  # the drawing process gone: the next formulas are drawn here, none is lost
        child.wait()
        for tex in ("b^2", "\\frac{1}{c}"):
            qtbot.waitUntil(
                lambda tex=tex: isinstance(renderer.image(tex, False, 14.0, 1.0, colour, 3.5), QImage),
                timeout=WAIT_MS,
            )
        assert renderer._child is None
    finally:
        renderer.stop()
    assert child.poll() is not None


def test_the_child_process_ends_when_the_renderer_stops(qtbot, qapp):
    renderer = MathRenderer()
    qtbot.waitUntil(
        lambda: renderer.image("x_1", False, 14.0, 1.0, QColor("#000000"), 3.5) is not None, timeout=WAIT_MS
    )
    child = renderer._child
    assert child is not None
    renderer.stop()
    assert child.poll() == 0  # ended by its request, not killed
