"""A code block sits on its background with room around its text: padding above its
header line, below its last line and before each line's start."""

from __future__ import annotations

from PySide6.QtGui import QColor

from glmdesk.ui.chat.markdown_view import CODE_PADDING_PX, MarkdownView

ANSWER = "Here:\n\n```python\nimport os\nprint(os.getcwd())\n```\n\nAfter it."


def _blocks(view: MarkdownView) -> list:
    doc, out = view.document(), []
    block = doc.begin()
    while block.isValid():
        out.append(block)
        block = block.next()
    return out


def test_a_code_block_is_padded_on_its_background(qtbot) -> None:
    view = MarkdownView()
    qtbot.addWidget(view)
    view.resize(500, 200)
    view.set_markdown(ANSWER)
    view.show()
    layout = view.document().documentLayout()
    blocks = _blocks(view)
    texts = [b.text() for b in blocks]
    first = texts.index("import os")
    last = texts.index("print(os.getcwd())")
    header, spacer = blocks[first - 1], blocks[first - 2]
    assert header.text().startswith("python") and spacer.text() == ""
    background = blocks[first].blockFormat().background().color()
    assert background != QColor(0, 0, 0) and background.alpha() > 0
    for block in (spacer, header, blocks[first], blocks[last]):  # all on the code background
        assert block.blockFormat().background().color() == background
    below = blocks[last + 1]
    assert below.text() == "" and below.blockFormat().background().color() == background
    assert layout.blockBoundingRect(spacer).height() >= 4  # room above the header
    assert layout.blockBoundingRect(below).height() >= 4  # and below the last line
    # Each line starts inside its background, not at its edge.
    for block in (header, blocks[first], blocks[last]):
        assert block.layout().lineAt(0).x() >= CODE_PADDING_PX
    assert view.code_blocks() == ["import os\nprint(os.getcwd())"]  # Copy gives the code only
