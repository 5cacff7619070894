"""Formulas in a :class:`~glmdesk.ui.chat.markdown_view.MarkdownView`: Markdown in, images placed.

Before Qt's Markdown importer runs, each formula found by
:func:`glmdesk.ui.chat.math_text.find_math` is replaced in the text that is drawn (never in
the source) by one of:

- an image reference ``![math](glmdesk-math:G-N)``, whose image the view hands to its
  document (:meth:`MarkdownView.loadResource` knows only these names);
- its TeX as literal text while the image is being drawn;
- its TeX as code with a note when mathtext cannot draw it (a ``latex`` code block for
  a display formula on lines of its own).

After the import, :func:`place_formulas` sets each image's size and baseline alignment
and gives display formulas a centred line of their own; :func:`document_text` turns the
document back into text with each image replaced by its TeX source (plain-text Copy and
copying a selection).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from PySide6.QtCore import Qt
from PySide6.QtGui import QImage, QTextBlockFormat, QTextCursor, QTextDocument, QTextImageFormat

from glmdesk.ui.chat.math_text import MathSpan, find_math

#: The URL scheme of formula images inside a view's document.
SCHEME = "glmdesk-math"
_PUNCTUATION = re.compile(r"([!\"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~])")
_TRAILING = frozenset(".,;:!?)")


@dataclass(frozen=True)
class Formula:
    """One formula drawn as an image in a view.

    Attributes:
        name: Its image's resource name (``glmdesk-math:...``).
        source: The formula as written, delimiters included (what Copy gives back).
        display: A display formula (centred on a line of its own).
        image: The image (device pixel ratio set).
    """

    name: str
    source: str
    display: bool
    image: QImage


def literal(text: str) -> str:
    """``text`` escaped so that Markdown shows it as written."""
    return _PUNCTUATION.sub(r"\\\1", text)


def _code_span(text: str) -> str:
    text = " ".join(text.split("\n"))
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    ticks = "`" * (longest + 1)
    return f"{ticks} {text} {ticks}"


def _standalone(text: str, span: MathSpan) -> str | None:
    """The indentation before ``span`` when it fills its lines (else ``None``)."""
    line_start = text.rfind("\n", 0, span.start) + 1
    indent = text[line_start : span.start]
    line_end = text.find("\n", span.end)
    rest = text[span.end : len(text) if line_end < 0 else line_end]
    if indent.strip() or rest.strip():
        return None
    return indent


def _unsupported(text: str, span: MathSpan, note: str) -> str:
    source = text[span.start : span.end]
    indent = _standalone(text, span) if span.display else None
    if indent is None:
        return f"{_code_span(source)} *{literal(note)}*"
    fence = "~~~" if "```" in source else "```"
    return f"{fence}latex\n{source}\n{indent}{fence}\n{indent}*{literal(note)}*"


def substitute(
    text: str,
    resolve: Callable[[MathSpan], QImage | str | None],
    note: Callable[[str], str],
    generation: int,
) -> tuple[str, dict[str, Formula], bool]:
    """The Markdown to draw for ``text``, with its formulas replaced (see the module docstring).

    Args:
        text: The Markdown source.
        resolve: A formula's image, its error (the unsupported command or ``""``), or
            ``None`` while it is being drawn.
        note: The note shown after a formula that cannot be drawn, given its error.
        generation: A number new for each call on one view (part of the image names,
            so no image of an earlier rendering is reused).

    Returns:
        ``(markdown, formulas by image name, True when some are still being drawn)``.
    """
    spans = find_math(text)
    if not spans:
        return text, {}, False
    out: list[str] = []
    formulas: dict[str, Formula] = {}
    waiting = False
    last = 0
    for index, span in enumerate(spans):
        out.append(text[last : span.start])
        source = text[span.start : span.end]
        result = resolve(span)
        if isinstance(result, QImage):
            name = f"{SCHEME}:{generation}-{index}"
            formulas[name] = Formula(name, source, span.display, result)
            out.append(f"![math]({name})")  # Qt inserts no image without alt text
        elif isinstance(result, str):
            out.append(_unsupported(text, span, note(result)))
        else:
            waiting = True
            out.append(literal(source))
        last = span.end
    out.append(text[last:])
    return "".join(out), formulas, waiting


def _images(document: QTextDocument, formulas: dict[str, Formula]) -> list[tuple[int, Formula]]:
    """``(position, formula)`` of every formula image in ``document``, in order."""
    found = []
    block = document.begin()
    while block.isValid():
        it = block.begin()
        while not it.atEnd():
            fragment = it.fragment()
            fmt = fragment.charFormat()
            if fragment.isValid() and fmt.isImageFormat():
                formula = formulas.get(fmt.toImageFormat().name())
                if formula is not None:
                    found += [(fragment.position() + k, formula) for k in range(fragment.length())]
            it += 1
        block = block.next()
    return found


def place_formulas(document: QTextDocument, formulas: dict[str, Formula]) -> None:
    """Size and align the formula images of ``document`` (after ``setMarkdown``).

    Inline formulas sit on the text's baseline (``AlignMiddle`` with the padding of
    :func:`glmdesk.ui.chat.math_render.colour_image`); a display formula gets a centred
    paragraph of its own, except inside lists, tables and headings.
    """
    if not formulas:
        return
    cursor = QTextCursor(document)
    cursor.beginEditBlock()
    for position, formula in reversed(_images(document, formulas)):
        fmt = QTextImageFormat()
        fmt.setName(formula.name)
        dpr = formula.image.devicePixelRatio() or 1.0
        fmt.setWidth(formula.image.width() / dpr)
        fmt.setHeight(formula.image.height() / dpr)
        fmt.setVerticalAlignment(QTextImageFormat.VerticalAlignment.AlignMiddle)
        fmt.setToolTip(formula.source)
        cursor.setPosition(position)
        cursor.setPosition(position + 1, QTextCursor.MoveMode.KeepAnchor)
        cursor.mergeCharFormat(fmt)
        if formula.display:
            _own_line(cursor, position)
    cursor.endEditBlock()


def _own_line(cursor: QTextCursor, position: int) -> None:
    """Give the display formula at ``position`` a centred block of its own."""
    block = cursor.document().findBlock(position)
    cursor.setPosition(position)
    if block.textList() is not None or cursor.currentTable() is not None:
        return
    if block.blockFormat().headingLevel() > 0:
        return
    text, start = block.text(), block.position()
    index = position - start
    after = index + 1
    while (
        after < len(text) and text[after] != "\u2028" and (text[after].isspace() or text[after] in _TRAILING)
    ):
        after += 1  # "$$x$$." keeps its full stop
    if after < len(text):
        cursor.setPosition(start + after)
        if text[after] == "\u2028":
            cursor.deleteChar()
        cursor.insertBlock()
    cursor.setPosition(position)
    if index > 0:
        if text[index - 1] == "\u2028":
            cursor.deletePreviousChar()
        cursor.insertBlock()
    fmt = QTextBlockFormat()
    fmt.setAlignment(Qt.AlignmentFlag.AlignHCenter)
    cursor.mergeBlockFormat(fmt)


def document_text(
    document: QTextDocument, formulas: dict[str, Formula], start: int = 0, end: int | None = None
) -> str:
    """The text of ``document[start:end]`` with each formula image as its TeX source.

    Paragraph and line separators become ``\\n`` and non-breaking spaces spaces, as in
    :meth:`QTextDocument.toPlainText`.
    """
    end = document.characterCount() - 1 if end is None else end
    out: list[str] = []
    block = document.findBlock(start)
    while block.isValid() and block.position() <= end:
        if block.position() > start:
            out.append("\n")
        it = block.begin()
        while not it.atEnd():
            fragment = it.fragment()
            lo, hi = max(fragment.position(), start), min(fragment.position() + fragment.length(), end)
            if fragment.isValid() and lo < hi:
                fmt = fragment.charFormat()
                formula = formulas.get(fmt.toImageFormat().name()) if fmt.isImageFormat() else None
                piece = fragment.text()[lo - fragment.position() : hi - fragment.position()]
                out.append(formula.source * len(piece) if formula is not None else piece)
            it += 1
        block = block.next()
    return "".join(out).replace("\u2028", "\n").replace("\u2029", "\n").replace("\u00a0", " ")
