"""Chunks of a document's pages that respect paragraphs and headings.

A chunk never crosses a page (so its page number is exact) and starts at a heading when one
comes; paragraphs (blocks between blank lines) are packed whole up to
:data:`TARGET_CHARS`; a longer paragraph is split at sentence or line ends. Each chunk
keeps its page, its first line on that page (1-based) and the headings above it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from glmdesk.documents.extract import Page

#: Characters a chunk aims at (about 300 tokens of English; fewer characters of Chinese
#: make as many tokens, so chunks of Chinese text are given fewer characters, see
#: :func:`target_chars`).
TARGET_CHARS = 1200

#: Suffixes whose ``#`` lines are headings (Markdown; DOCX and HTML are given as Markdown).
HEADING_KINDS = ("markdown", "docx", "html")

_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_SENTENCE_END = re.compile(r"(?<=[.!?。！？;；])\s+|(?<=[。！？；])")


@dataclass(frozen=True)
class Chunk:
    """One passage of a document.

    Attributes:
        ordinal: Its place in the document, from 0.
        page: The page it is on (``None`` for documents without pages).
        line: Its first line on that page (or in the file), 1-based.
        section: The headings above it, outermost first, joined by `` › `` (may be empty).
        text: The passage.
    """

    ordinal: int
    page: int | None
    line: int
    section: str
    text: str


def target_chars(text: str) -> int:
    """Characters per chunk for ``text``: :data:`TARGET_CHARS`, a third of it when most
    of the text is CJK (one character is about one token there)."""
    sample = text[:2000]
    cjk = sum(1 for c in sample if "\u3000" <= c <= "\u9fff" or "\uac00" <= c <= "\ud7af")
    return TARGET_CHARS // 3 if sample and cjk > len(sample) / 3 else TARGET_CHARS


def _blocks(text: str) -> Iterator[tuple[int, str]]:
    """``(first line, block)`` for each run of non-blank lines, lines 1-based."""
    start, lines = 0, []
    for number, line in enumerate(text.split("\n"), 1):
        if line.strip():
            if not lines:
                start = number
            lines.append(line.rstrip())
        elif lines:
            yield start, "\n".join(lines)
            lines = []
    if lines:
        yield start, "\n".join(lines)


def _pieces(block: str, limit: int) -> Iterator[tuple[int, str]]:
    """``block`` cut into pieces of at most about ``limit`` characters, at sentence or line
    ends where there are any, else hard: ``(line, piece)``, the line (0-based, within the
    block) the piece starts on, so a source cites the line that holds it."""
    if len(block) <= limit:
        yield 0, block
        return
    units = [(i, u) for i, line in enumerate(block.split("\n")) for u in _SENTENCE_END.split(line) if u]
    piece, at = "", 0
    for i, unit in units:
        while len(unit) > limit:
            if piece:
                yield at, piece
                piece = ""
            yield i, unit[:limit]
            unit = unit[limit:]
        if piece and len(piece) + 1 + len(unit) > limit:
            yield at, piece
            piece = ""
        if not piece:
            at = i
        piece = f"{piece} {unit}" if piece else unit
    if piece:
        yield at, piece


def chunk_pages(pages: Iterable[Page], headings: bool = True) -> list[Chunk]:
    """Cut pages into chunks.

    Args:
        pages: The document's pages in order.
        headings: Whether ``#`` lines are headings (Markdown, DOCX, HTML); not for code,
            where ``#`` starts a comment.
    """
    chunks: list[Chunk] = []
    trail: list[tuple[int, str]] = []  # (level, heading) above the text so far
    for page in pages:
        if page.text.strip():
            _chunk_page(page, headings, trail, chunks)
    return chunks


def _chunk_page(page: Page, headings: bool, trail: list[tuple[int, str]], chunks: list[Chunk]) -> None:
    """Append ``page``'s chunks to ``chunks``; ``trail`` (the headings above) goes on to the next page."""
    limit = target_chars(page.text)
    buffer: list[str] = []
    first_line = 1
    fenced = False

    def flush() -> None:
        if buffer:
            section = " › ".join(h for _, h in trail)
            chunks.append(Chunk(len(chunks), page.number, first_line, section, "\n\n".join(buffer)))
            buffer.clear()

    for line, block in _blocks(page.text):
        match = _HEADING.match(block.split("\n", 1)[0]) if headings and not fenced else None
        if block.count("```") % 2:
            fenced = not fenced
        if match:
            flush()
            level = len(match.group(1))
            trail[:] = [(lv, h) for lv, h in trail if lv < level] + [(level, match.group(2))]
        for offset, piece in _pieces(block, limit):
            if buffer and sum(len(b) + 2 for b in buffer) + len(piece) > limit:
                flush()
            if not buffer:
                first_line = line + offset
            buffer.append(piece)
    flush()
