"""Regressions found by trying the app as a user."""

from __future__ import annotations

import sys

from PySide6.QtCore import QPointF
from PySide6.QtGui import QColor, QImage, QPainter, QPainterPath

from glmdesk.ui.chat.markdown_view import MarkdownView, keep_line_breaks


def test_model_line_breaks_stay_visible(qtbot):
    poem = "Roses are red\nViolets are blue\n\n```python\nx = 1\ny = 2\n```\n- one\n- two"
    view = MarkdownView()
    qtbot.addWidget(view)
    view.set_markdown(poem)
    text = view.document().toPlainText()
    assert "Roses are red\u2028Violets are blue" in text or "Roses are red\nViolets are blue" in text
    assert "x = 1\ny = 2" in text  # code blocks untouched
    assert keep_line_breaks("a\nb") == "a  \nb"
    assert keep_line_breaks("```\na\nb\n```") == "```\na\nb\n```"


def test_a_table_right_under_a_line_is_a_table_with_a_bold_header(qtbot):
    view = MarkdownView()
    qtbot.addWidget(view)
    view.set_markdown("Here is a table:\n| Name | Age |\n|---|---|\n| Ann | 3 |")
    cells = {}
    block = view.document().begin()
    while block.isValid():
        if block.text():
            cells[block.text()] = block.begin().fragment().charFormat().fontWeight()
        block = block.next()
    assert list(cells) == ["Here is a table:", "Name", "Age", "Ann", "3"]  # not one glued line
    assert cells["Name"] == cells["Age"] == 700 and cells["Ann"] == 400
    assert keep_line_breaks("a | b\nnot a table\n|x|") == "a | b  \nnot a table\n|x|"  # no rule: no table


def test_a_table_after_a_code_block_keeps_its_first_header_cell_bold_and_level(qtbot):
    from PySide6.QtGui import QTextTable

    view = MarkdownView()
    qtbot.addWidget(view)
    view.set_markdown("Here:\n\n```python\nx = 1\n```\n\n| Name | Age |\n|---|---|\n| Ann | 3 |\n")
    (table,) = [f for f in view.document().rootFrame().childFrames() if isinstance(f, QTextTable)]
    first, second = table.cellAt(0, 0), table.cellAt(0, 1)
    assert first.firstCursorPosition().block().text() == "Name"  # no empty line above it
    for cell in (first, second):
        assert cell.firstCursorPosition().block().begin().fragment().charFormat().fontWeight() == 700
    assert (
        table.cellAt(1, 0).firstCursorPosition().block().begin().fragment().charFormat().fontWeight() == 400
    )


def test_painting_paths_does_not_leak_references_to_none(qapp):
    """PySide6 6.12.0 dropped a reference to None per QPainterPath.lineTo / fillPath call;
    Python 3.11 then aborts ("none_dealloc") while the memory gauge repaints."""
    image = QImage(64, 64, QImage.Format.Format_ARGB32)
    painter = QPainter(image)
    before = sys.getrefcount(None)
    for i in range(2000):
        path = QPainterPath(QPointF(0, 0))
        path.lineTo(i % 64, 10)
        path.closeSubpath()
        painter.fillPath(path, QColor(10, 20, 30))
    painter.end()
    assert before - sys.getrefcount(None) < 500
