"""A small syntax highlighter for fenced code blocks in rendered Markdown.

Colours keywords, strings, comments and numbers of the common languages with
one rule set; only blocks that Qt's Markdown importer marked as code
(``QTextFormat.BlockCodeFence`` or an all-monospace block) are touched.
"""

from __future__ import annotations

import re

from PySide6.QtGui import QColor, QFont, QSyntaxHighlighter, QTextCharFormat, QTextDocument, QTextFormat

_KEYWORDS = (
    "and as assert async await break case catch class const continue def default del do elif else "
    "enum except export extends false False finally fn for from func function go if impl import in "
    "interface is lambda let loop match mod mut new nil None not null or package pass pub raise "
    "return self static struct super switch this throw true True try type typeof use var void "
    "while with yield int float double char bool str string long unsigned"
).split()
_KEYWORD_RE = re.compile(r"\b(?:" + "|".join(map(re.escape, _KEYWORDS)) + r")\b")
_NUMBER_RE = re.compile(r"\b(?:0x[0-9a-fA-F]+|\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)\b")
_STRING_RE = re.compile(r"\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'|`[^`]*`")
_HASH_COMMENT = {
    "python",
    "py",
    "bash",
    "sh",
    "shell",
    "zsh",
    "ruby",
    "rb",
    "yaml",
    "yml",
    "toml",
    "r",
    "perl",
}
_HASH_RE = re.compile(r"#.*$")
_SLASH_RE = re.compile(r"//.*$|/\*.*?\*/")


def is_code_block(block) -> bool:
    """True when Qt's Markdown importer made ``block`` part of a code block."""
    fmt = block.blockFormat()
    if fmt.hasProperty(QTextFormat.Property.BlockCodeFence):
        return True
    if not block.text().strip():
        return False
    it = block.begin()
    seen = False
    while not it.atEnd():
        frag = it.fragment()
        if frag.isValid():
            families = frag.charFormat().fontFamilies() or []
            if "monospace" not in families and not frag.charFormat().fontFixedPitch():
                return False
            seen = True
        it += 1
    return seen and block.textList() is None


def highlight_colours(dark: bool) -> dict[str, str]:
    """Keyword, string, number and comment colours (``#rrggbb``) for a light or dark code block.

    Each reaches WCAG's 4.5:1 contrast against the theme's code background
    (``glmdesk.ui.common.theme.LIGHT/DARK.code_background``), so comments stay readable too.
    """
    if dark:
        return {"kw": "#d19cf0", "str": "#9fd47f", "num": "#e5a872", "com": "#9da3ad"}
    return {"kw": "#8e1f8c", "str": "#2c6e2f", "num": "#8a5300", "com": "#5f6670"}


class CodeHighlighter(QSyntaxHighlighter):
    """Highlights code blocks of a Markdown document.

    Args:
        document: The document to highlight.
        dark: Use colours for a dark background.
    """

    def __init__(self, document: QTextDocument, dark: bool = False) -> None:
        super().__init__(document)
        self.set_dark(dark)

    def set_dark(self, dark: bool) -> None:
        """Switch colours for a dark or light background (call rehighlight after)."""
        self.dark = dark
        self._formats = {}
        for name, colour in highlight_colours(dark).items():
            fmt = QTextCharFormat()
            fmt.setForeground(QColor(colour))
            if name == "kw":
                fmt.setFontWeight(QFont.Weight.Bold)
            if name == "com":
                fmt.setFontItalic(True)
            self._formats[name] = fmt

    def highlightBlock(self, text: str) -> None:  # noqa: N802 (Qt override)
        block = self.currentBlock()
        if not text or not is_code_block(block):
            return
        language = block.blockFormat().stringProperty(QTextFormat.Property.BlockCodeLanguage).lower()
        for rx, name in ((_NUMBER_RE, "num"), (_KEYWORD_RE, "kw")):
            for m in rx.finditer(text):
                self.setFormat(m.start(), m.end() - m.start(), self._formats[name])
        for m in _STRING_RE.finditer(text):
            self.setFormat(m.start(), m.end() - m.start(), self._formats["str"])
        comment = _HASH_RE if language in _HASH_COMMENT else _SLASH_RE
        for m in comment.finditer(text):
            self.setFormat(m.start(), m.end() - m.start(), self._formats["com"])
