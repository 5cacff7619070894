"""The message widget binds to typed parts: a live answer's parts so far and a reopened
message's parts show the same widgets (thinking block, Markdown body, tool-call card),
in that order, and a part that changes kind mid-stream updates the same message."""

from __future__ import annotations

import threading

import pytest

from glmdesk.core.history import History
from glmdesk.core.parts import ReasoningPart, TextPart, ToolCallPart
from glmdesk.core.tools import ToolCall
from glmdesk.engine.chunk import GenerationChunk
from glmdesk.ui.app.main_window import MainWindow
from glmdesk.ui.chat.chat_view import ChatView
from tests.helpers.fake_backend import WEATHER, CallingBackend

MS = 10_000
CALL = ToolCall("get_weather", {"city": "北京"}, '{"city": "北京"}')


def chunks() -> list[GenerationChunk]:
    """Reasoning, then text, then a call being written and parsed, as the engine gives them."""
    parts = [
        (ReasoningPart("The user wants "),),
        (ReasoningPart("the weather."),),
        (TextPart("Let me "),),
        (TextPart("check."),),
        (ToolCallPart("get_weather", '{"ci'),),
        (ToolCallPart("get_weather", '{"city": "北京"}'),),
    ]
    out = []
    for i, step in enumerate(parts):
        out.append(
            GenerationChunk(
                parts=step,
                n_generated=i + 1,
                ttft_s=0.1,
                answer_ttft_s=0.3 if i >= 2 else 0.0,
                reasoning_tokens=2 if i >= 2 else 0,
            )
        )
    done = ToolCallPart("get_weather", CALL.arguments_json(), done=True)
    out.append(GenerationChunk(finish_reason="tool_calls", tool_call=CALL, tool_calls=(CALL,), parts=(done,)))
    return out


def seen(widget) -> list[str]:
    """The message's visible parts, top to bottom: what the user sees, in order."""
    layout = widget.layout()
    shown = []
    for i in range(layout.count()):
        child = layout.itemAt(i).widget()
        if child is None or not child.isVisible():
            continue
        if child is widget.reasoning_block:
            shown.append(f"thinking: {widget.reasoning()}")
        elif child is widget.view and widget.text():  # an empty body shows nothing
            shown.append(f"text: {widget.text()}")
        elif child.objectName() == "tool_call_card":
            shown.append(f"card: {child.title.text()} {child.arguments.toPlainText()}")
    return shown


@pytest.fixture
def history_window(qtbot, tmp_path):
    made = []

    def make(backend):
        history = History(tmp_path / "history.sqlite3")
        window = MainWindow(backend=backend, history=history)
        made.append((window, history))
        qtbot.addWidget(window)
        window.resize(1100, 760)
        window.show()
        with qtbot.waitSignal(window.loader.model_ready, timeout=MS):
            window.start()
        window.sidebar.tools_panel.set_mode("functions", WEATHER)
        return window, history

    yield make
    for window, history in made:
        window.history_controller.close()
        window.close()
        history.close()


def test_reasoning_text_and_a_call_stream_into_block_body_and_card_and_reopen_the_same(qtbot, history_window):
    steps = threading.Semaphore(0)
    window, _history = history_window(CallingBackend(chunks(), steps))
    window.send_message("北京天气？")
    steps.release(2)
    message = window.chat_view.streaming_message()
    qtbot.waitUntil(lambda: message.reasoning() == "The user wants the weather.", timeout=MS)
    assert seen(message) == ["thinking: The user wants the weather."]
    assert message.reasoning_block.header_text() == "Thinking…"
    steps.release(3)  # the answer's text, then the call begins
    qtbot.waitUntil(lambda: len(window.chat_view.cards()) == 1, timeout=MS)
    card = window.chat_view.cards()[0]
    assert card.is_live() and message.call_cards == [card]
    qtbot.waitUntil(lambda: card.arguments.toPlainText() == '{"ci', timeout=MS)
    assert window.chat_view.streaming_message() is message  # the same message all along
    assert seen(message)[:2] == ["thinking: The user wants the weather.", "text: Let me check."]
    assert not message.reasoning_block.is_expanded()  # the answer began: collapsed
    with qtbot.waitSignal(window.session.tools.gate.result_asked, timeout=MS):
        steps.release(2)
    live = seen(message)
    assert live == [
        "thinking: The user wants the weather.",
        "text: Let me check.",
        'card: <b>Tool call: get_weather</b> {\n  "city": "北京"\n}',
    ]
    assert window.chat_view.cards() == [card] and not card.is_live()

    window.history_controller.flush()
    cid = window.history_controller.conversation_id
    window.new_chat()
    assert window.chat_view.messages() == []
    window.history_controller.panel.conversation_selected.emit(cid)  # as a click in the panel does
    qtbot.waitUntil(lambda: len(window.chat_view.messages()) == 2, timeout=MS)
    reopened = window.chat_view.messages()[-1]
    assert reopened is not message
    qtbot.waitUntil(lambda: seen(reopened) == live, timeout=MS)  # shown at the next event loop turn
    (stored_card,) = reopened.call_cards
    assert window.chat_view.cards() == [stored_card] and stored_card.send_button.isHidden()


def test_a_message_whose_parts_change_kind_mid_stream_updates_in_place(qtbot):
    view = ChatView()
    qtbot.addWidget(view)
    view.resize(600, 400)
    view.show()
    message = view.begin_stream()
    view.append_parts((ReasoningPart("Let me think"),))
    qtbot.waitUntil(lambda: message.reasoning() == "Let me think", timeout=MS)
    assert seen(message) == ["thinking: Let me think"] and message.text() == ""
    view.append_parts((ReasoningPart(" hard."), TextPart("The answer")))
    view.append_parts((TextPart(" is 4."),))
    qtbot.waitUntil(lambda: message.text() == "The answer is 4.", timeout=MS)
    assert view.messages() == [message] and view.streaming_message() is message
    assert seen(message) == ["thinking: Let me think hard.", "text: The answer is 4."]
    assert view.stream_parts() == (ReasoningPart("Let me think hard."), TextPart("The answer is 4."))
    renders = view.render_count
    view.append_parts((TextPart(""),))  # nothing new: nothing drawn again
    assert view.finish_stream() is message and view.render_count == renders
    assert seen(message) == ["thinking: Let me think hard.", "text: The answer is 4."]


class _Replies(CallingBackend):
    """Plays one scripted reply per answer."""

    def __init__(self, *replies) -> None:
        super().__init__([])
        self.replies = list(replies)

    def stream(self, messages, params, cache=None, stop=None, conversation=None):
        self.chunks = self.replies.pop(0)
        yield from super().stream(messages, params, cache, stop, conversation)


def test_a_call_that_could_not_be_read_is_told_to_the_model_and_shown(qtbot, history_window):
    from glmdesk.core.parts import TextPart
    from glmdesk.engine.chunk import GenerationChunk
    from glmdesk.engine.decode.generate import tool_notice
    from glmdesk.engine.formats.xml_call_filter import UnreadableCallText

    written = "<tool_call>get_weather<arg_key>city"
    bad = UnreadableCallText("get_weather", written, "the value of 'city' is not closed")
    notice = tool_notice("the value of 'city' is not closed", (bad,))
    first = [GenerationChunk(parts=(TextPart(written),), n_generated=1, finish_reason="stop", notice=notice)]
    second = [GenerationChunk(parts=(TextPart("Sunny."),), n_generated=1, finish_reason="stop")]
    backend = _Replies(first, second)
    window, _history = history_window(backend)
    window.send_message("北京天气？")
    qtbot.waitUntil(lambda: len(window.session.state.messages) == 4, timeout=MS)
    user, shown, told, answer = window.session.state.messages
    assert (shown.role, shown.content) == ("assistant", written)  # the user sees it as written
    assert (told.role, told.name) == ("observation", "get_weather")
    assert told.content.startswith("The call of get_weather was not run: it could not be read")
    assert backend.requests[1][-2:] == (shown, told)  # the model read why
    assert answer.content == "Sunny." and not window.session.is_streaming()
