"""A message's Markdown in segments: repaint cost flat in its length, no stall for megabytes.

Measured on this machine (issue 19): laying out one :class:`QTextDocument` block
costs about 5 µs per character (50 KB in one line: 0.2 s; Qt's wrapped layout of
one line grows worse than linearly), and re-rendering a whole streaming message
each repaint grew from 3 ms at 100 lines to 50 ms at 3,000. So a message is shown
as a column of :class:`MarkdownView` segments of at most :data:`MAX_SEGMENT_CHARS`:

- while an answer streams, every segment but the last is rendered once and kept
  ("frozen"); each repaint renders only the last one (render what is new);
- a segment ends at a blank line once it holds :data:`SEGMENT_CHARS`, else at a line
  end at :data:`MAX_SEGMENT_CHARS` (before a display formula's first line rather than
  inside the formula), and a longer line is cut there (display only);
  a cut inside a fenced code block opens the fence again in the next segment;
- a finished message longer than :data:`FOLD_CHARS` shows its beginning and a
  note; :meth:`SegmentedMarkdownView.reveal_all` lays out the rest a few segments
  per event-loop turn.

The Markdown source (what Copy, history and export use) is never changed: only
what is drawn is cut.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

from PySide6.QtCore import QTimer, Signal, Slot
from PySide6.QtWidgets import QSizePolicy, QVBoxLayout, QWidget

from glmdesk.ui.chat.markdown_view import MarkdownView

#: A segment may end at a blank line once it holds this many characters.
SEGMENT_CHARS = 500
#: A segment never holds more than this (plus a reopened fence line), in characters.
MAX_SEGMENT_CHARS = 1000
#: Finished messages longer than this are folded: the first FOLD_CHARS are shown.
FOLD_CHARS = 4000
#: Time one event-loop turn may spend revealing a folded message, in s.
REVEAL_BUDGET_S = 0.03

_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")


@dataclass(frozen=True)
class Segment:
    """One drawn piece of a message.

    Attributes:
        start: Offset of its first character in the source, in characters.
        end: Offset after its last character.
        prefix: Text drawn before it (a fence line reopened), not part of the source.
        fence_after: The fence line open at ``end`` (``None`` outside code).
    """

    start: int
    end: int
    prefix: str
    fence_after: str | None

    def display(self, text: str) -> str:
        """What this segment draws of ``text`` (Markdown)."""
        return self.prefix + text[self.start : self.end]


def _fence_step(line: str, fence: str | None) -> str | None:
    match = _FENCE.match(line)
    if not match:
        return fence
    if fence is None:
        return line.strip()
    return None if match.group(1)[0] == fence.lstrip()[0] else fence


def _toggles_display(line: str) -> bool:
    """True when ``line`` opens or closes a display formula (``$$`` or ``\\[`` ... ``\\]``)
    that spans lines: an odd number of ``$$``, or one bracket without its partner."""
    return line.count("$$") % 2 == 1 or line.count("\\[") != line.count("\\]")


def _cut(text: str, pos: int, look_back: int = 200) -> int:
    """A cut at or before ``pos`` between two non-space characters (Markdown drops a
    segment's leading and trailing spaces), or ``pos`` when there is none nearby."""
    for cut in range(pos, max(pos - look_back, 1), -1):
        if not text[cut - 1].isspace() and not text[cut].isspace():
            return cut
    return pos


def split_segments(text: str, start: int = 0, fence: str | None = None) -> list[Segment]:
    """Cut ``text[start:]`` into segments (see the module docstring); O(length).

    The last line counts as unfinished (more text may follow while streaming), so no
    blank-line boundary is taken at it.

    Args:
        text: The Markdown source.
        start: Where to begin, in characters (the end of the segments already frozen).
        fence: The fence line open at ``start``, or ``None``.

    Returns:
        Segments covering ``text[start:]`` in order; at least one (maybe empty).
    """
    segments: list[Segment] = []
    seg_start, prefix, pos = start, f"{fence}\n" if fence else "", start
    n = len(text)
    display = None  # where an unclosed $$ or \[ formula's first line starts
    while pos < n:
        newline = text.find("\n", pos)
        line_end = n if newline < 0 else newline + 1  # the line with its "\n"
        if line_end - seg_start > MAX_SEGMENT_CHARS:
            if display is not None and display > seg_start:  # end before the formula: it stays whole
                segments.append(Segment(seg_start, display, prefix, None))
                seg_start, prefix, pos, display = display, "", display, None
                continue
            if pos > seg_start:  # end before this line
                segments.append(Segment(seg_start, pos, prefix, fence))
            else:  # one line longer than a segment: cut it, inside a word if there is one
                pos = _cut(text, seg_start + MAX_SEGMENT_CHARS)
                segments.append(Segment(seg_start, pos, prefix, fence))
            seg_start, prefix = pos, f"{fence}\n" if fence else ""
            continue
        line = text[pos:line_end]
        fence = _fence_step(line, fence)
        if not line.strip():
            display = None  # a formula never spans a blank line
        elif fence is None and _toggles_display(line):
            display = pos if display is None else None
        pos = line_end
        if newline >= 0 and fence is None and not line.strip() and pos - seg_start >= SEGMENT_CHARS:
            segments.append(Segment(seg_start, pos, prefix, None))
            seg_start, prefix = pos, ""
    if seg_start < n or not segments:
        segments.append(Segment(seg_start, n, prefix, fence))
    return segments


class SegmentedMarkdownView(QWidget):
    """One message's Markdown drawn as a column of :class:`MarkdownView` segments.

    Signals:
        fold_changed(int, int): ``(characters shown, characters in the message)``
            whenever what is shown of a folded message changes.
    """

    fold_changed = Signal(int, int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Minimum)
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self._layout.setSpacing(0)
        self._frozen: list[MarkdownView] = []
        self._frozen_end = 0  # source characters drawn by frozen segments
        self._frozen_fence: str | None = None
        self._live = MarkdownView()
        self._layout.addWidget(self._live)
        self._text = ""  # the whole source
        self._shown = 0  # characters of it drawn
        self.render_count = 0  # live-segment renders (tests, benchmark)
        self._reveal = QTimer(self)
        self._reveal.setInterval(0)
        self._reveal.timeout.connect(self._reveal_step)

    # The source ----------------------------------------------------------------------
    def markdown(self) -> str:
        """The whole Markdown source (verbatim, folded or not)."""
        return self._text

    def shown_chars(self) -> int:
        """How many characters of the source are drawn (less than its length when folded)."""
        return self._shown

    def is_folded(self) -> bool:
        """True while part of the message is not drawn."""
        return self._shown < len(self._text)

    def is_revealing(self) -> bool:
        """True while :meth:`reveal_all` is drawing the rest."""
        return self._reveal.isActive()

    def segments(self) -> list[MarkdownView]:
        """The drawn segments, first to last."""
        return [*self._frozen, self._live]

    def toPlainText(self) -> str:  # noqa: N802 (QTextEdit's name, for callers of MarkdownView)
        """The drawn text as plain text (segments joined by newlines)."""
        return "\n".join(view.toPlainText() for view in self.segments() if view.toPlainText())

    # Drawing ---------------------------------------------------------------------------
    def set_markdown(self, text: str, limit: int | None = None) -> None:
        """Draw ``text``, or its first ``limit`` characters (folded).

        When the new text continues the drawn one (streaming, revealing), only the
        segments after the frozen ones are drawn: the cost is flat in the length.
        """
        self._reveal.stop()
        shown = len(text) if limit is None else min(limit, len(text))
        if not text.startswith(self._text[: self._frozen_end]) or shown < self._frozen_end:
            self._reset()
        self._text = text
        self._draw(shown)

    def fold(self, text: str, limit: int = FOLD_CHARS) -> None:
        """Draw ``text``, folded to its first ``limit`` characters when longer."""
        self.set_markdown(text, limit if len(text) > limit else None)

    @Slot()
    def reveal_all(self) -> None:
        """Draw the rest of a folded message, a few segments per event-loop turn."""
        if self.is_folded():
            self._reveal.start()

    @Slot()
    def _reveal_step(self) -> None:
        deadline = time.perf_counter() + REVEAL_BUDGET_S
        while self.is_folded() and time.perf_counter() < deadline:
            self._draw(min(len(self._text), self._shown + MAX_SEGMENT_CHARS))
        if not self.is_folded():
            self._reveal.stop()

    def _reset(self) -> None:
        for view in self._frozen:
            self._layout.removeWidget(view)
            view.deleteLater()
        self._frozen.clear()
        self._frozen_end, self._frozen_fence = 0, None

    def _draw(self, shown: int) -> None:
        visible = self._text[:shown]
        segments = split_segments(visible, self._frozen_end, self._frozen_fence)
        for segment in segments[:-1]:  # complete: drawn once, never again
            view = MarkdownView()
            view.set_markdown(segment.display(visible))
            self._layout.insertWidget(len(self._frozen), view)
            self._frozen.append(view)
            self._frozen_end, self._frozen_fence = segment.end, segment.fence_after
        self._live.set_markdown(segments[-1].display(visible))
        self.render_count += 1
        changed = shown != self._shown
        self._shown = shown
        if changed or shown < len(self._text):
            self.fold_changed.emit(shown, len(self._text))
