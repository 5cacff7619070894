"""Read-only Markdown for untrusted model output: no resources, links only on click.

Rendering uses Qt's own Markdown importer (md4c, GitHub dialect) with raw HTML
turned off. :meth:`MarkdownView.loadResource` returns nothing, so images and
style sheets named by the text are never fetched from disk or network. A link
opens in the system browser only when clicked and only for ``http``/``https``.
The view has no scroll bars: it grows to its document's height inside the chat
view's scroll area.

TeX formulas (``$...$``, ``\\(...\\)``, ``$$...$$``, ``\\[...\\]``) are drawn as
images in the text colour and font size (``math_markdown``, ``math_render``); the
only resources the view ever hands its document are those images. Copy keeps their
TeX: :meth:`MarkdownView.toPlainText` and a copied selection give the source back.
"""

from __future__ import annotations

import re

from PySide6.QtCore import QEvent, QMimeData, QSize, Qt, QUrl, Signal, Slot
from PySide6.QtGui import (
    QColor,
    QDesktopServices,
    QFont,
    QFontInfo,
    QFontMetricsF,
    QGuiApplication,
    QPalette,
    QTextBlockFormat,
    QTextCharFormat,
    QTextCursor,
    QTextDocument,
    QTextFormat,
    QTextTable,
)
from PySide6.QtWidgets import QFrame, QSizePolicy, QTextBrowser

from glmdesk.ui.chat.code_highlighter import CodeHighlighter, is_code_block
from glmdesk.ui.chat.math_markdown import Formula, document_text, place_formulas, substitute
from glmdesk.ui.chat.math_render import formula_key, shared_renderer
from glmdesk.ui.chat.math_text import MathSpan
from glmdesk.ui.common.theme import theme_colours

#: The scheme of the links a code block's header offers ("Copy"): ``copy-code:N``, the
#: N-th code block of the view (0-based); never opened, only handled here.
COPY_CODE_SCHEME = "glmdesk-copy-code"
#: A code block's padding (text inset, space above and below on its background), in px.
CODE_PADDING_PX = 10

_FEATURES = QTextDocument.MarkdownFeature.MarkdownDialectGitHub | QTextDocument.MarkdownFeature.MarkdownNoHTML
SAFE_SCHEMES = ("http", "https")
_RESCALE = {QEvent.Type.FontChange, getattr(QEvent.Type, "DevicePixelRatioChange", QEvent.Type.FontChange)}


_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$")  # |---|:--:|
_BLOCK_START = re.compile(r"^\s{0,3}([-*+]\s|\d+[.)]\s|#{1,6}\s|>|\||$)")


def keep_line_breaks(text: str) -> str:
    """Make every single newline of a model's answer a visible line break.

    Markdown joins consecutive lines into one paragraph; chat models write poems,
    addresses and lists of lines with plain newlines, and users expect to see them
    (GitHub's "breaks" option does the same). A hard break (two trailing spaces) is
    added to lines followed by another paragraph line, never inside fenced code
    blocks or before lines that start a list, heading, quote or table. A table written
    right under a line of text (GitHub reads it so) gets a blank line before it.

    Args:
        text: Markdown as the model wrote it.

    Returns:
        The same Markdown with hard line breaks added.
    """
    lines = text.split("\n")
    out = []
    fence = None
    for i, line in enumerate(lines):
        match = _FENCE.match(line)
        if match:
            marker = match.group(1)[0]
            fence = None if fence == marker else (fence or marker)
            out.append(line)
            continue
        nxt = lines[i + 1] if i + 1 < len(lines) else None
        if (
            fence is None
            and line.strip()
            and nxt is not None
            and not _BLOCK_START.match(nxt)
            and not _FENCE.match(nxt)
            and not line.endswith("  ")
            and not line.lstrip().startswith("|")
        ):
            line += "  "
        out.append(line)
        after = lines[i + 2] if i + 2 < len(lines) else ""
        if (
            fence is None
            and line.strip()
            and not line.lstrip().startswith("|")
            and nxt is not None
            and nxt.lstrip().startswith("|")
            and _TABLE_RULE.match(after)
        ):
            out.append("")  # a table right under a line: Qt's Markdown reads it only as its own block
    return "\n".join(out)


def is_dark(palette: QPalette) -> bool:
    """True when the palette's window colour is dark (system dark mode)."""
    return palette.color(QPalette.ColorRole.Window).lightness() < 128


class MarkdownView(QTextBrowser):
    """Shows one message's Markdown; selectable, never loads anything.

    Signals:
        link_refused(QUrl): A clicked link was not http/https and was not opened.
        link_opened(QUrl): A clicked http/https link was handed to the system browser.
    """

    link_refused = Signal(QUrl)
    link_opened = Signal(QUrl)

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.blocked_resources: list[QUrl] = []
        self._markdown = ""
        self._code_texts: list[str] = []  # see code_blocks()
        self._formulas: dict[str, Formula] = {}
        self._generation = 0
        self._waiting = False  # some formulas are still being drawn
        self._rendering = False
        self._pending: list[tuple] = []  # keys of the formulas being drawn
        self.setOpenLinks(False)
        self.setOpenExternalLinks(False)
        self.setReadOnly(True)
        self.setUndoRedoEnabled(False)
        self.setTextInteractionFlags(
            Qt.TextInteractionFlag.TextSelectableByMouse
            | Qt.TextInteractionFlag.TextSelectableByKeyboard
            | Qt.TextInteractionFlag.LinksAccessibleByMouse
        )
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setFocusPolicy(Qt.FocusPolicy.ClickFocus)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.viewport().setAutoFillBackground(False)
        self.setStyleSheet("QTextBrowser { background: transparent; }")
        self.document().setDocumentMargin(2)
        self._highlighter = CodeHighlighter(self.document(), is_dark(QGuiApplication.palette()))
        self.anchorClicked.connect(self._on_anchor_clicked)
        self.document().documentLayout().documentSizeChanged.connect(self._fit_height)

    # Untrusted text: nothing is ever loaded (formula images are our own).
    def loadResource(self, kind: int, name: QUrl):  # noqa: N802 (Qt override)
        """Give the document its formula images; refuse every other resource (images,
        style sheets) the text names, recording the URL."""
        formula = self._formulas.get(name.toString())
        if formula is not None:
            return formula.image
        self.blocked_resources.append(QUrl(name))
        return None

    def formulas(self) -> list[Formula]:
        """The formulas drawn as images, in order."""
        return list(self._formulas.values())

    def is_drawing_formulas(self) -> bool:
        """True while some formulas of the text are shown as text until their image is ready."""
        return self._waiting

    def toPlainText(self) -> str:  # noqa: N802 (QTextEdit's name)
        """The drawn text, each formula as its TeX source (what "Copy as plain text" copies)."""
        return document_text(self.document(), self._formulas)

    def createMimeDataFromSelection(self) -> QMimeData:  # noqa: N802 (Qt override)
        """A copied selection: with formulas in it, plain text with their TeX source
        (Qt's HTML would name images no other program can open); else Qt's own."""
        cursor = self.textCursor()
        start, end = cursor.selectionStart(), cursor.selectionEnd()
        text = document_text(self.document(), self._formulas, start, end)
        if not any(formula.source in text for formula in self._formulas.values()):
            return super().createMimeDataFromSelection()
        data = QMimeData()
        data.setText(text)
        return data

    def markdown(self) -> str:
        """The Markdown source last shown."""
        return self._markdown

    def set_markdown(self, text: str) -> None:
        """Render ``text`` (Markdown) and resize to fit."""
        if text == self._markdown and text:
            return
        self._markdown = text
        self._render()

    def _render(self) -> None:
        self._generation += 1
        self._pending = []
        shown, self._formulas, self._waiting = substitute(
            self._markdown, self._resolve, self._formula_note, self._generation
        )
        if self._waiting:
            shared_renderer().redraw_later(self)
        self._rendering = True  # one height change per render, not one per step
        try:
            self.document().setMarkdown(keep_line_breaks(shown), _FEATURES)
            place_formulas(self.document(), self._formulas)
            self._fix_table_headers()
            self._decorate_code_blocks()
        finally:
            self._rendering = False
        self._fit_height()

    def _resolve(self, span: MathSpan):
        font = self.font()
        pixels, dpr = float(QFontInfo(font).pixelSize()), self.devicePixelRatioF()
        colour = QGuiApplication.palette().color(QPalette.ColorRole.Text)
        image = shared_renderer().image(
            span.tex, span.display, pixels, dpr, colour, QFontMetricsF(font).xHeight() / 2
        )
        if image is None:
            self._pending.append(formula_key(span.tex, span.display, pixels, dpr))
        return image

    def _formula_note(self, error: str) -> str:
        if error:
            return self.tr("(TeX shown: {command} cannot be drawn here)").format(command=error)
        return self.tr("(TeX shown: this formula cannot be drawn here)")

    def redraw_formulas(self) -> None:
        """Draw again when some of the formulas waited for have arrived (else wait on)."""
        renderer = shared_renderer()
        if not self._waiting:
            return
        if any(renderer.has(key) for key in self._pending):
            self._render()
        else:
            renderer.redraw_later(self)

    def _fix_table_headers(self) -> None:
        """Every header cell bold and on its first line: after a code block, Qt's Markdown
        importer starts a table's first header cell with an empty line and plain weight."""
        for frame in self.document().rootFrame().childFrames():
            if not isinstance(frame, QTextTable) or frame.rows() < 2:
                continue
            for column in range(frame.columns()):
                cell = frame.cellAt(0, column)
                cursor = cell.firstCursorPosition()
                if cursor.block().text() == "" and cursor.position() < cell.lastCursorPosition().position():
                    cursor.deleteChar()  # the empty first line
                cursor = cell.firstCursorPosition()
                cursor.setPosition(cell.lastCursorPosition().position(), QTextCursor.MoveMode.KeepAnchor)
                bold = QTextCharFormat()
                bold.setFontWeight(QFont.Weight.Bold)
                cursor.mergeCharFormat(bold)

    def code_blocks(self) -> list[str]:
        """The text of each code block shown, in order (what its Copy copies)."""
        return list(self._code_texts)

    def _decorate_code_blocks(self) -> None:
        """Code blocks on the theme's code background, padded, each under a header line
        with its language and a Copy link (``glmdesk-copy-code:N``)."""
        colours = theme_colours("dark" if is_dark(QGuiApplication.palette()) else "light")
        fmt = QTextBlockFormat()
        fmt.setBackground(QColor(colours.code_background))
        fmt.setTextIndent(CODE_PADDING_PX)  # code lines inset from the background's edge
        fmt.setRightMargin(0)
        groups: list[list] = []  # [first block, lines, language, last block]
        block, inside = self.document().begin(), False
        while block.isValid():
            if is_code_block(block):
                if not inside:
                    language = block.blockFormat().stringProperty(QTextFormat.Property.BlockCodeLanguage)
                    groups.append([block, [], language, block])
                groups[-1][1].append(block.text())
                groups[-1][3] = block
                QTextCursor(block).mergeBlockFormat(fmt)
            inside = is_code_block(block)
            block = block.next()
        self._code_texts = ["\n".join(lines) for _first, lines, _language, _last in groups]
        header = QTextBlockFormat(fmt)
        header.setTopMargin(0)
        spacer = QTextBlockFormat(fmt)  # padding above the header line, on the code background
        spacer.setTopMargin(4)
        end = QTextBlockFormat(fmt)  # padding under the last line, then air before the text
        end.setBottomMargin(6)
        tiny = QTextCharFormat()
        tiny.setFontPointSize(CODE_PADDING_PX / 2)
        quiet = QTextCharFormat()
        quiet.setForeground(QColor(colours.quiet))
        quiet.setFontPointSize(max(self.font().pointSizeF() - 1, 6))
        link = QTextCharFormat(quiet)
        link.setAnchor(True)
        link.setForeground(QColor(colours.link))
        for k in range(len(groups) - 1, -1, -1):  # from the end: earlier blocks do not move
            first, _lines, language, last = groups[k]
            cursor = QTextCursor(last)
            cursor.movePosition(QTextCursor.MoveOperation.EndOfBlock)
            cursor.insertBlock(end, tiny)
            cursor = QTextCursor(first)
            cursor.insertBlock(first.blockFormat(), first.charFormat())
            cursor.movePosition(QTextCursor.MoveOperation.PreviousBlock)
            cursor.setBlockFormat(header)
            cursor.insertText(language or self.tr("code"), quiet)
            cursor.insertText("  ", quiet)
            link.setAnchorHref(f"{COPY_CODE_SCHEME}:{k}")
            cursor.insertText(self.tr("Copy code"), link)
            cursor.movePosition(QTextCursor.MoveOperation.StartOfBlock)
            cursor.insertBlock(header, quiet)  # the empty block left above is the spacer
            cursor.movePosition(QTextCursor.MoveOperation.PreviousBlock)
            cursor.setBlockFormat(spacer)
            cursor.setBlockCharFormat(tiny)

    @Slot()
    def _fit_height(self) -> None:
        if self._rendering:
            return
        height = int(self.document().size().height() + 0.999) + 2 * self.frameWidth()
        if height != self.height():
            self.setFixedHeight(max(height, self.fontMetrics().height()))

    def sizeHint(self) -> QSize:  # noqa: N802 (Qt override)
        return QSize(200, self.height())

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt override)
        super().resizeEvent(event)
        if event.oldSize().width() != event.size().width():
            self._fit_height()

    def wheelEvent(self, event) -> None:  # noqa: N802 (Qt override)
        event.ignore()  # let the chat view's scroll area scroll

    def changeEvent(self, event) -> None:  # noqa: N802 (Qt override)
        super().changeEvent(event)
        if event.type() == event.Type.PaletteChange:
            self._highlighter.set_dark(is_dark(QGuiApplication.palette()))
            self._render()
        elif event.type() in _RESCALE and (self._formulas or self._waiting):
            self._render()  # formulas follow the font size and the screen's pixel ratio

    @Slot(QUrl)
    def _on_anchor_clicked(self, url: QUrl) -> None:
        if url.scheme() == COPY_CODE_SCHEME:
            index = int(url.path()) if url.path().isdigit() else -1
            if 0 <= index < len(self._code_texts):
                QGuiApplication.clipboard().setText(self._code_texts[index])
            return
        if url.scheme().lower() in SAFE_SCHEMES and url.isValid() and url.host():
            QDesktopServices.openUrl(url)
            self.link_opened.emit(url)
        else:
            self.link_refused.emit(url)
