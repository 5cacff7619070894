"""Continue an answer cut by the length limit, in the same bubble; the cut is said under it
with Continue at hand, and hovering never makes a card grow.

The Continue test uses the real embedded model (greedy), loaded once per session.
"""

from __future__ import annotations

from PySide6.QtCore import Qt

from glmdesk.core.settings import SamplingParams
from glmdesk.ui.chat.message_footer import MessageFooter
from glmdesk.ui.chat.message_widget import MessageWidget

ANSWER_MS = 120_000


def _continue_shown(window) -> list[bool]:
    """Whether each message's footer shows Continue once revealed."""
    shown = []
    for footer in window.branch_actions.footers():
        footer.set_revealed(True)
        button = footer.buttons.get("continue")
        shown.append(button is not None and button.isVisible())
        footer.set_revealed(False)
    return shown


def test_continue_appears_on_a_cut_answer_and_fills_the_same_bubble(qtbot, wired) -> None:
    window, history, _panel, controller = wired
    window.sidebar.set_system_prompt("You are a helpful assistant.")
    window.sidebar.set_params(SamplingParams(temperature=0.0, top_p=1.0, max_new_tokens=64))
    with qtbot.waitSignal(window.session.answer_finished, timeout=ANSWER_MS):
        assert window.send_message("What is the capital of France?")
    assert window.session.last_answer[1].finish_reason == "stop"
    assert _continue_shown(window) == [False, False]  # an answer that ended by itself

    window.sidebar.set_params(SamplingParams(temperature=0.0, top_p=1.0, max_new_tokens=8))
    with qtbot.waitSignal(window.session.answer_finished, timeout=ANSWER_MS):
        assert window.send_message("Write a short poem about the sea.")
    cut, record = window.session.last_answer
    assert record.finish_reason == "length"
    assert _continue_shown(window) == [False, False, False, True]  # only the cut answer
    bubble = window.chat_view.messages()[-1]
    footer = bubble.findChild(MessageFooter, "message_footer")
    assert footer.limit_label.isVisible() and footer.buttons["continue"].isVisible()  # no hover needed

    footer.set_revealed(True)
    with qtbot.waitSignal(window.session.answer_finished, timeout=ANSWER_MS):
        qtbot.mouseClick(footer.buttons["continue"], Qt.MouseButton.LeftButton)
    whole, record = window.session.last_answer
    assert len(window.chat_view.messages()) == 4 and window.chat_view.messages()[-1] is bubble
    assert whole.startswith(cut) and len(whole) > len(cut)
    assert bubble.text() == whole
    assert record.n_tokens == 16  # both parts counted
    assert [m.content for m in window.session.state.messages][-1] == whole

    assert controller.flush(10)  # history writes run on the writer thread
    stored = history.messages(controller.conversation_id)
    answers = [m for m in stored if m.role == "assistant"]
    assert len(answers) == 2  # the continued answer is the same message, not a new one
    assert answers[-1].text == whole and answers[-1].state == "complete"
    assert answers[-1].finish_reason == "length"
    assert [s for _m, s in controller.shown_messages()][-1] == (answers[-1].id,)  # no new version
    assert _continue_shown(window)[-1]  # cut again at the limit: Continue stays offered

    # Reopened from the history, the cut answer still offers Continue; a finished one does not.
    cid = controller.conversation_id
    window.new_chat()
    controller.open_conversation(cid)
    qtbot.waitUntil(lambda: _continue_shown(window) == [False, False, False, True], timeout=5000)

    # Chat -> Continue (Ctrl+Shift+Return) does what the footer's button does, here on the
    # reopened conversation; it is offered only while the last answer is cut.
    assert window.continue_action.isEnabled()
    with qtbot.waitSignal(window.session.answer_finished, timeout=ANSWER_MS):
        window.continue_action.trigger()
    longer, record = window.session.last_answer
    assert longer.startswith(whole) and len(longer) > len(whole)
    assert len(window.chat_view.messages()) == 4 and window.chat_view.messages()[-1].text() == longer
    assert window.continue_action.isEnabled() == (record.finish_reason == "length")
    window.new_chat()
    assert not window.continue_action.isEnabled()


def test_hovering_never_makes_a_card_grow_and_a_cut_answer_says_so(qtbot) -> None:
    bubble = MessageWidget("assistant", "A short answer.")
    qtbot.addWidget(bubble)
    footer = MessageFooter("assistant")
    footer.attach(bubble)
    footer.set_stats("12 tokens · 30.0 tokens/s")
    bubble.resize(500, bubble.sizeHint().height())
    bubble.show()
    qtbot.waitExposed(bubble)
    before = bubble.sizeHint().height()
    assert footer.stats_label.isVisible() and not footer.buttons["copy"].isVisible()
    assert not footer.limit_label.isVisible() and not footer.buttons["continue"].isVisible()

    footer.set_revealed(True)  # what hovering does: the actions show in space kept for them
    assert footer.buttons["copy"].isVisible() and footer.buttons["copy"].text() == "Copy answer"
    assert bubble.sizeHint().height() == before
    footer.set_revealed(False)
    assert bubble.sizeHint().height() == before

    footer.set_continuable(True)  # cut at the token limit: said and offered without hovering
    assert footer.limit_label.isVisible() and "token limit" in footer.limit_label.text()
    assert footer.buttons["continue"].isVisible() and not footer.buttons["regenerate"].isVisible()
