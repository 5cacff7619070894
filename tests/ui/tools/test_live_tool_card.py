"""A tool call shows as a card while the model writes it.

The window's own behaviour (a live card grows with the call's text, repaints are
throttled, it becomes the finished card or goes when the call ends as text) is tested
with a scripted backend stepped chunk by chunk; Stop while a call is written runs on
the real decode loop of a tiny GLM-4 model with the history wired as in the app.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import pytest
import torch

from glmdesk.core.errors import ErrorInfo
from glmdesk.core.parts import TextPart, ToolCallPart
from glmdesk.core.settings import SamplingParams
from glmdesk.core.tools import INTERPRETER, ToolCall
from glmdesk.engine.chunk import GenerationChunk
from glmdesk.ui.app.main_window import MainWindow
from glmdesk.ui.tools.tool_call_card import ToolCallCard, live_arguments
from tests.helpers import tool_models as tm
from tests.helpers.fake_backend import WEATHER, CallingBackend
from tests.ui.conftest import history_window

MS = 10_000


def pending(texts: Sequence[str], name: str = "get_weather") -> list[GenerationChunk]:
    return [GenerationChunk(n_generated=i + 1, parts=(ToolCallPart(name, t),)) for i, t in enumerate(texts)]


def said(text: str, **fields) -> GenerationChunk:
    """A chunk of answer text, as the engine gives it (its text part too)."""
    return GenerationChunk(parts=(TextPart(text),), **fields)


@pytest.fixture
def open_window(qtbot):
    windows = []

    def make(backend) -> MainWindow:
        window = MainWindow(backend=backend)
        windows.append(window)
        qtbot.addWidget(window)
        window.resize(1100, 760)
        window.show()
        with qtbot.waitSignal(window.loader.model_ready, timeout=MS):
            window.start()
        window.sidebar.tools_panel.set_mode("functions", WEATHER)
        return window

    yield make
    for window in windows:
        window.close()


def test_a_live_card_grows_while_the_call_is_written_then_becomes_the_finished_card(qtbot, open_window):
    call = ToolCall("get_weather", {"city": "北京"}, '{"city": "北京"}')
    texts = ['{"ci', '{"city": "北', '{"city": "北京"}']
    chunks = [said("Let me check.", n_generated=1)] + pending(texts)
    chunks.append(GenerationChunk(finish_reason="tool_calls", tool_call=call, n_generated=5))
    steps = threading.Semaphore(0)
    window = open_window(CallingBackend(chunks, steps))
    window.send_message("北京天气？")
    steps.release(2)  # the text, then the call starts
    qtbot.waitUntil(lambda: len(window.chat_view.cards()) == 1, timeout=MS)
    card = window.chat_view.cards()[0]
    assert card.is_live() and "get_weather" in card.title.text() and card.state_label.text()
    assert all(b.isHidden() for b in (card.send_button, card.kill_button, card.decline_button))
    assert card in window.chat_view.streaming_message().attachments
    qtbot.waitUntil(lambda: card.arguments.toPlainText() == '{"ci', timeout=MS)
    for text in texts[1:]:
        steps.release()
        qtbot.waitUntil(lambda t=text: card.arguments.toPlainText() == t, timeout=MS)
    with qtbot.waitSignal(window.session.answer_finished, timeout=MS):
        steps.release()
    assert window.chat_view.cards() == [card] and not card.is_live()  # the same card, finished
    assert card.arguments.toPlainText() == '{\n  "city": "北京"\n}' and not card.state_label.text()
    message = window.chat_view.messages()[-1]
    assert message.text() == "Let me check." and message.view.isVisible()


def test_a_call_that_ends_as_text_leaves_no_card_behind(qtbot, open_window):
    raw = 'get_weather\n{"city": 北京}'
    notice = ErrorInfo("tool_call_invalid", "not JSON", {"reason": "the arguments are not valid JSON"})
    chunks = pending(['{"city":', '{"city": 北京}'])
    chunks.append(said(raw, finish_reason="stop", notice=notice, n_generated=3))
    steps = threading.Semaphore(0)
    window = open_window(CallingBackend(chunks, steps))
    window.send_message("北京天气？")
    steps.release()
    qtbot.waitUntil(lambda: len(window.chat_view.cards()) == 1, timeout=MS)
    with qtbot.waitSignal(window.session.answer_finished, timeout=MS):
        steps.release(2)
    assert window.chat_view.cards() == []
    message = window.chat_view.messages()[-1]
    assert message.attachments == [] and message.text() == raw and message.view.isVisible()
    assert window.notice.isVisible() and not window.session.is_streaming()


def test_a_2000_token_call_repaints_its_card_a_few_times_a_second_not_per_token(qtbot, open_window):
    """2,000 chunks in 10 bursts of 200 (faster than the repaint interval): the card is
    repainted once or twice a burst, appending only the new end, not once per chunk."""
    lines = [f"print({i})\n" for i in range(2000)]
    texts = ["```python\n" + "".join(lines[: i + 1]) for i in range(2000)]
    chunks = pending(texts, INTERPRETER) + [GenerationChunk(finish_reason="length", n_generated=2000)]
    steps = threading.Semaphore(0)
    window = open_window(CallingBackend(chunks, steps))
    window.send_message("count")
    steps.release()
    qtbot.waitUntil(lambda: len(window.chat_view.cards()) == 1, timeout=MS)
    card = window.chat_view.cards()[0]
    for burst in range(10):
        steps.release(200 if burst else 199)
        shown = "".join(lines[: 200 * (burst + 1)])
        qtbot.waitUntil(lambda s=shown: card.arguments.toPlainText() == s, timeout=MS)
    assert "Code interpreter" in card.title.text()
    assert 10 <= card.render_count <= 40  # at most ~15 a second, whatever the token rate
    with qtbot.waitSignal(window.session.answer_finished, timeout=MS):
        steps.release()
    assert window.chat_view.cards() == []  # cut by the length limit: no call


@pytest.mark.parametrize(
    ("written", "shown"),
    [
        ('{"city": "北', '{"city": "北'),
        ("```python\nprint(1)\n``", "print(1)"),
        ("```python\nprint(1)\n```", "print(1)"),
        ("```pyth", ""),
        ("```python\ntool_call(city='x')", "tool_call(city='x')"),
    ],
)
def test_live_arguments(written, shown):
    assert live_arguments(written) == shown


def test_a_live_card_for_code(qtbot):
    card = ToolCallCard(pending=INTERPRETER)
    qtbot.addWidget(card)
    card.set_live_text("```python\nx = 1\n`")
    qtbot.waitUntil(lambda: card.arguments.toPlainText() == "x = 1", timeout=MS)
    card.set_call(ToolCall(INTERPRETER, {"code": "x = 1"}, kind="interpreter"))
    card.show()
    assert card.title.text() == "<b>Code interpreter</b>" and card.result_edit.isHidden()
    assert card.arguments.toPlainText() == "x = 1" and not card.state_label.text()


class PauseAt:
    """Test-only logits processor around :class:`tm.ForceTokens`: before the answer's
    ``at``-th token it signals ``reached`` and waits for ``go`` (the decode thread)."""

    def __init__(self, forcer, at: int) -> None:
        self.forcer, self.at, self.n = forcer, at, 0
        self.reached, self.go = threading.Event(), threading.Event()

    def __call__(self, ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        self.n += 1
        if self.n == self.at:
            self.reached.set()
            self.go.wait(MS / 1000)
        return self.forcer(ids, scores)


def test_stop_while_a_call_is_written_stores_its_text_not_a_call(qtbot, make_window, tmp_path):
    tiny = tm.tiny_glm4(tm.write_glm4_tokenizer(tmp_path))
    obs = tiny.tokenizer.special_ids["<|observation|>"]
    script = tiny.tokenizer.encode('get_weather\n{"city": "北京", "unit": "celsius"}') + [obs]
    pause = PauseAt(tm.ForceTokens([script]), at=8)
    tiny.logits_processors = lambda: (pause,)
    window, history, _panel, controller = history_window(make_window, tmp_path / "h.sqlite3", tiny)
    window.sidebar.set_params(SamplingParams(temperature=0.0, top_p=1.0, max_new_tokens=60))
    window.sidebar.tools_panel.set_mode("functions", WEATHER)
    try:
        window.send_message("北京天气？")
        qtbot.waitUntil(lambda: len(window.chat_view.cards()) == 1, timeout=MS)
        assert pause.reached.wait(MS / 1000)
        card = window.chat_view.cards()[0]
        qtbot.waitUntil(lambda: card.arguments.toPlainText().startswith('{"'), timeout=MS)
        with qtbot.waitSignal(window.session.answer_finished, timeout=MS) as finished:
            window.stop_answer()
            pause.go.set()
        assert finished.args[1].finish_reason == "cancelled" and not window.session.is_streaming()
        assert window.chat_view.cards() == []
        text = window.chat_view.messages()[-1].text()
        assert text.startswith('get_weather\n{"') and len(text) < len(
            'get_weather\n{"city": "北京", "unit": "celsius"}'
        )
        controller.flush()
        stored = history.messages(controller.conversation_id)[-1]
        assert (stored.role, stored.kind, stored.text, stored.state) == (
            "assistant",
            "text",
            text,
            "complete",
        )
        assert stored.tool_call is None and stored.finish_reason == "cancelled"
    finally:
        controller.close()
        history.close()
