"""Long messages in core (issue 19, item 4): the fast paths give exactly what the
plain definitions give, for any text, and hold the GIL only for C-speed checks."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from glmdesk.core.history_rows import TITLE_CHARS, TITLE_SCAN_CHARS, auto_title
from glmdesk.core.text import storable_text
from tests.core.test_history_writer import one_line_json


def reference_storable(text: str) -> str:
    return re.sub("[\x00\ud800-\udfff]", "\ufffd", text)


def reference_title(text: str) -> str:
    line = next((ln.strip() for ln in reference_storable(text).splitlines() if ln.strip()), "")
    return line if len(line) <= TITLE_CHARS else line[: TITLE_CHARS - 1].rstrip() + "…"


pieces = st.sampled_from(
    ["", " ", "\n", "\r\n", "\r", "\x00", "\ud800", "\u2028", "\x85", "a", "词", "😀", "\t"]
)
long_runs = st.builds(
    lambda c, n: c * n, st.sampled_from([" ", "\n", "x", "词", "\r\n"]), st.integers(0, 5000)
)
texts = st.lists(st.one_of(pieces, long_runs, st.text(max_size=80)), max_size=12).map("".join)


@settings(max_examples=120, deadline=None)
@given(texts)
def test_storable_text_and_titles_equal_their_definitions(text):
    assert storable_text(text) == reference_storable(text)
    assert auto_title(text) == reference_title(text)


def test_title_lines_across_the_scanned_head():
    for gap in (TITLE_SCAN_CHARS - 10, TITLE_SCAN_CHARS - 1, TITLE_SCAN_CHARS, TITLE_SCAN_CHARS + 5):
        for tail in ("short title\nrest", "x" * 200, "ab\r\ncd", "  \n  \nlate title"):
            text = " " * gap + "\n" * (gap % 3) + tail
            assert auto_title(text) == reference_title(text)


def test_two_megabytes_keep_their_text_and_title():
    big = one_line_json(2_000_000)
    assert storable_text(big) is big
    assert auto_title(big) == reference_title(big)
    assert storable_text(big + "\x00") == big + "\ufffd"
