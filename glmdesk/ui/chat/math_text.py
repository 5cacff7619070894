"""Where a model's Markdown holds TeX formulas: ``$...$``, ``\\(...\\)``, ``$$...$$``, ``\\[...\\]``.

Plain text in, offsets out (no Qt): the view draws what is found, the source stays as
written (Copy, history and export keep the TeX). The rules, after pandoc's
``tex_math_dollars`` and ``tex_math_single_backslash`` extensions:

- ``$...$`` is inline math when the opening ``$`` has a non-space character right
  after it, the closing ``$`` has a non-space character right before it and no digit
  right after it, both are on one line and no ``$`` lies between them. So prices stay
  text: in "Apples cost $3 and pears $5" neither ``$`` can close a formula.
- ``$$...$$`` and ``\\[...\\]`` are display math, ``\\(...\\)`` inline; they may span
  lines of one paragraph (never a blank line).
- A delimiter escaped with a backslash (``\\$``) is text; an opening delimiter without
  its closing one stays text (while an answer streams, until the closing one arrives).
- Code is never math: fenced code blocks, indented code blocks (outside lists) and
  code spans of any number of backticks are skipped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_LIST_ITEM = re.compile(r"^ {0,3}([-*+]|\d{1,9}[.)])(\s|$)")
_SPECIAL = re.compile(r"[\\$`]")
_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


@dataclass(frozen=True)
class MathSpan:
    """One formula in a text.

    Attributes:
        start: Offset of the opening delimiter, in characters.
        end: Offset after the closing delimiter.
        tex: The TeX between the delimiters, stripped of surrounding white space.
        display: True for ``$$...$$`` and ``\\[...\\]`` (a formula on its own line).
    """

    start: int
    end: int
    tex: str
    display: bool


def find_math(text: str) -> list[MathSpan]:
    """Every complete formula of ``text`` (Markdown), in order; O(length).

    Args:
        text: Markdown as the model wrote it (maybe still streaming).

    Returns:
        The formulas found, never overlapping, never inside code.
    """
    spans: list[MathSpan] = []
    for start, end in _paragraphs(text):
        spans += _scan(text, start, end)
    return spans


def _paragraphs(text: str) -> list[tuple[int, int]]:
    """Ranges of consecutive non-blank lines outside code blocks (where math may be)."""
    ranges: list[tuple[int, int]] = []
    fence: str | None = None
    in_list = blank_before = False
    para_start = None
    pos = 0
    n = len(text)
    while pos < n:
        newline = text.find("\n", pos)
        line_end = n if newline < 0 else newline
        line = text[pos:line_end]
        blank = not line.strip()
        match = _FENCE.match(line)
        indented = not blank and (line.startswith("    ") or line.startswith("\t"))
        code = fence is not None or match is not None
        if fence is None and indented and not in_list and (blank_before or para_start is None):
            code = True  # an indented code block
        if match is not None:
            marker = match.group(1)
            if fence is None:
                fence = marker
            elif marker[0] == fence[0] and len(marker) >= len(fence) and not line[match.end() :].strip():
                fence = None
        if code or blank:
            if para_start is not None:
                ranges.append((para_start, pos))
                para_start = None
        else:
            if para_start is None:
                para_start = pos
            if not indented:
                in_list = bool(_LIST_ITEM.match(line)) or (in_list and not blank_before)
        blank_before = blank and not code
        pos = line_end + 1
    if para_start is not None:
        ranges.append((para_start, n))
    return ranges


def _scan(text: str, start: int, end: int) -> list[MathSpan]:
    """Formulas in one paragraph ``text[start:end]``: code spans bind first (a formula
    never reaches into one), then escapes and delimiters are read left to right."""
    spans: list[MathSpan] = []
    code = _code_spans(text, start, end)
    k = 0  # the next code span
    i = start
    while i < end:
        while k < len(code) and code[k][1] <= i:
            k += 1
        if k < len(code) and code[k][0] <= i:
            i = code[k][1]
            continue
        limit = code[k][0] if k < len(code) else end  # a formula closes before the next code span
        c = text[i]
        span = None
        if c == "\\":
            nxt = text[i + 1] if i + 1 < end else ""
            closer = {"(": "\\)", "[": "\\]"}.get(nxt)
            span = _closed(text, i, 2, closer, nxt == "[", limit) if closer else None
            step = 2 if nxt in _PUNCTUATION else 1
        elif c == "$" and text.startswith("$$", i):
            span, step = _closed(text, i, 2, "$$", True, limit), 2
        elif c == "$":
            span, step = _inline_dollar(text, i, limit), 1
        else:
            step = 1
        if span is not None:
            spans.append(span)
            i = span.end
        elif step == 1 and c not in "\\$":
            found = _SPECIAL.search(text, i + 1, end)  # skip plain text in one step
            i = found.start() if found else end
        else:
            i += step
    return spans


def _code_spans(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """``(start, end)`` of every code span in ``text[start:end]`` (escaped backticks skipped)."""
    spans = []
    i = text.find("`", start, end)
    while 0 <= i < end:
        if _escaped(text, i):
            i = text.find("`", i + 1, end)
            continue
        after = _skip_code_span(text, i, end)
        run = i
        while run < end and text[run] == "`":
            run += 1
        if after > run:  # closed
            spans.append((i, after))
        i = text.find("`", after, end)
    return spans


def _skip_code_span(text: str, i: int, end: int) -> int:
    """Past the code span opened by the backtick run at ``i``, or past the run if unclosed."""
    run = i
    while run < end and text[run] == "`":
        run += 1
    ticks = text[i:run]
    search = run
    while True:
        found = text.find(ticks, search, end)
        if found < 0:
            return run
        after = found + len(ticks)
        if after >= end or text[after] != "`":
            return after
        while after < end and text[after] == "`":  # a longer run: not the closer
            after += 1
        search = after


def _escaped(text: str, i: int) -> bool:
    """True when the character at ``i`` follows an odd number of backslashes."""
    count = 0
    while i - count - 1 >= 0 and text[i - count - 1] == "\\":
        count += 1
    return count % 2 == 1


def _closed(text: str, i: int, width: int, closer: str, display: bool, end: int) -> MathSpan | None:
    """The formula opened at ``i`` (a delimiter ``width`` long) up to ``closer``, if closed."""
    search = i + width
    while True:
        found = text.find(closer, search, end)
        if found < 0:
            return None
        # "\]" closes when its backslash is not itself escaped; "$$" when not escaped.
        if not _escaped(text, found):
            break
        search = found + 1
    tex = text[i + width : found].strip()
    if not tex:
        return None
    return MathSpan(i, found + len(closer), tex, display)


def _inline_dollar(text: str, i: int, end: int) -> MathSpan | None:
    """``$...$`` opened at ``i`` under pandoc's rules (see the module docstring)."""
    if _escaped(text, i) or i + 1 >= end or text[i + 1].isspace():
        return None
    line_end = text.find("\n", i, end)
    line_end = end if line_end < 0 else line_end
    search = i + 1
    while True:
        found = text.find("$", search, line_end)
        if found < 0:
            return None
        if not _escaped(text, found):
            break
        search = found + 1
    after = text[found + 1] if found + 1 < end else ""
    if text[found - 1].isspace() or after.isdigit() or after == "$":
        return None
    return MathSpan(i, found + 1, text[i + 1 : found], False)
