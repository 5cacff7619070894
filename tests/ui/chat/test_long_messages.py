"""Size never freezes the window (issue 19, item 4): behaviour, never timings.

Streaming draws only what is new (finished segments are kept, not redrawn); long
finished messages are folded with a note and "Show all"; long pasted lines are cut
for display only; every stored, copied and sent text stays verbatim.
"""

from __future__ import annotations

import json

import pytest
from PySide6.QtCore import QMimeData

from glmdesk.core.parts import TextPart
from glmdesk.ui.chat import long_markdown
from glmdesk.ui.chat.input_box import DISPLAY_LINE_CHARS, SOFT_BREAK, InputBox
from glmdesk.ui.chat.long_markdown import MAX_SEGMENT_CHARS, SegmentedMarkdownView, split_segments
from glmdesk.ui.chat.message_widget import MessageWidget

WAIT_MS = 60_000


def one_line_json(size: int) -> str:
    return json.dumps({f"key{i}": f"value {i}" for i in range(size // 10)}, ensure_ascii=False)[:size]


def numbers(n: int) -> str:
    return "\n".join(str(i) for i in range(1, n + 1))


@pytest.mark.parametrize(
    "text",
    [
        numbers(3000),
        one_line_json(30_000),
        "intro\n\n```python\n" + "x = 1\n" * 900 + "```\n\nafter\n\n" + "para " * 2000,
        "短" * 9000,
        "",
    ],
    ids=["numbers", "one-line", "code-fence", "cjk", "empty"],
)
def test_segments_cover_the_text_exactly_and_stay_small(text):
    segments = split_segments(text)
    assert "".join(text[s.start : s.end] for s in segments) == text
    assert all(s.end - s.start <= MAX_SEGMENT_CHARS for s in segments)
    assert all(a.end == b.start for a, b in zip(segments, segments[1:], strict=False))


def test_a_code_block_cut_in_two_opens_its_fence_again():
    text = "```python\n" + "print(1)\n" * 600 + "```\n"
    segments = split_segments(text)
    assert len(segments) > 1
    assert all(s.display(text).startswith("```python\n") for s in segments)
    assert segments[0].prefix == "" and segments[1].prefix == "```python\n"


def test_streaming_draws_only_the_last_segment(qtbot):
    view = SegmentedMarkdownView()
    qtbot.addWidget(view)
    text = numbers(3000)
    kept: dict[int, str] = {}
    for end in range(0, len(text) + 1, 300):
        view.set_markdown(text[:end])
        frozen = view.segments()[:-1]
        for widget in frozen:  # a finished segment, once drawn, is never drawn again
            if id(widget) in kept:
                assert widget.markdown() == kept[id(widget)]
            kept[id(widget)] = widget.markdown()
        assert len(view.segments()[-1].markdown()) <= 2 * MAX_SEGMENT_CHARS  # flat work per repaint
    view.set_markdown(text)
    shown = view.toPlainText().split()
    assert shown == [str(i) for i in range(1, 3001)] and view.markdown() == text
    assert not view.is_folded() and len(view.segments()) > 5


def test_a_long_finished_message_is_folded_with_a_note_and_shows_all_on_request(qtbot):
    big = one_line_json(1_000_000)
    widget = MessageWidget("assistant", big)
    qtbot.addWidget(widget)
    widget.show()
    assert widget.text() == big and widget.is_folded()
    assert widget.view.shown_chars() == long_markdown.FOLD_CHARS
    assert widget.fold_label.isVisibleTo(widget) and widget.show_all_button.isVisibleTo(widget)
    assert "1,000,000" in widget.fold_label.text()
    big = one_line_json(20_000)  # revealing takes a while on a busy machine: a smaller one
    widget.show_parts((TextPart(big),))
    assert widget.is_folded() and "20,000" in widget.fold_label.text()
    widget.show_all_button.click()
    qtbot.waitUntil(lambda: not widget.is_folded(), timeout=WAIT_MS)
    assert not widget.fold_label.isVisibleTo(widget) and not widget.show_all_button.isVisibleTo(widget)
    assert "".join(widget.view.toPlainText().split("\n")) == big  # all of it, in order
    assert widget.text() == big


def test_short_messages_are_one_segment_as_before(qtbot):
    widget = MessageWidget("assistant", "**Hello**\n\n- one\n- two")
    qtbot.addWidget(widget)
    assert len(widget.view.segments()) == 1 and not widget.is_folded()
    assert not widget.fold_label.isVisibleTo(widget)


def test_pasting_500_kb_of_one_line_json_keeps_it_verbatim(qtbot):
    box = InputBox()
    qtbot.addWidget(box)
    big = one_line_json(500_000)
    data = QMimeData()
    data.setText("before " + big + "\nafter")
    box.editor.insertFromMimeData(data)
    assert box.text() == "before " + big + "\nafter"
    doc = box.editor.document()
    assert doc.blockCount() > len(big) // DISPLAY_LINE_CHARS  # drawn in short blocks
    assert doc.findBlockByNumber(1).userState() == SOFT_BREAK
    assert all(len(doc.findBlockByNumber(i).text()) <= DISPLAY_LINE_CHARS for i in range(doc.blockCount()))
    cursor = box.editor.textCursor()
    cursor.setPosition(0)
    cursor.setPosition(doc.characterCount() - 1, cursor.MoveMode.KeepAnchor)
    box.editor.setTextCursor(cursor)
    assert box.editor.createMimeDataFromSelection().text() == "before " + big + "\nafter"  # copy
    with qtbot.waitSignal(box.message_submitted) as sent:
        box.submit()
    assert sent.args == ["before " + big + "\nafter"]


def test_enter_inside_a_cut_line_is_a_real_line_break(qtbot):
    box = InputBox()
    qtbot.addWidget(box)
    box.set_text("x" * 2500)
    cursor = box.editor.textCursor()
    cursor.setPosition(1500)
    box.editor.setTextCursor(cursor)
    box.editor.insertPlainText("\n")
    assert box.text() == "x" * 1499 + "\n" + "x" * 1001
    box.set_text("short\ntext")
    assert box.text() == "short\ntext" and box.editor.document().blockCount() == 2


def test_chat_view_shows_a_huge_user_message_folded_and_keeps_it(qtbot, make_window):
    window = make_window()
    big = one_line_json(2_000_000)
    widget = window.chat_view.add_message("user", big)
    assert widget.is_folded() and widget.text() == big
