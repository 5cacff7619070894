"""The Tools section, the tool call card, and a tool call in the window (tiny GLM-4)."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from glmdesk.core.tools import INTERPRETER, ToolCall
from glmdesk.ui.tools.tool_call_card import ToolCallCard
from glmdesk.ui.tools.tools_panel import ToolsPanel
from tests.helpers import tool_models as tm

WEATHER = (
    '[{"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}]'
)


def test_tools_panel_validates_functions_with_a_sentence_each(qtbot):
    panel = ToolsPanel()
    qtbot.addWidget(panel)
    seen = []
    panel.tools_changed.connect(lambda tools, always: seen.append((tools, always)))
    panel.set_mode("functions", '[{"name": "bad name"}, {"name": "python"}]')
    assert len(panel.problems()) == 2 and not panel.toolset()
    assert panel.problems_label.text().count("\n") == 1
    panel.functions_edit.setPlainText(WEATHER)
    assert panel.problems() == [] and [f.name for f in panel.toolset().functions] == ["get_weather"]
    assert seen[-1][0] == panel.toolset()
    panel.set_mode("interpreter")
    assert panel.toolset().interpreter and not panel.always_run.isChecked()
    panel.always_run.setChecked(True)
    assert seen[-1][1].always_run is True
    panel.max_rounds.setValue(3)
    panel.timeout.setValue(10)
    assert (seen[-1][1].max_rounds, seen[-1][1].timeout_s) == (3, 10.0)
    panel.set_available(False, "This model has no tool-call format.")
    assert not panel.mode.isEnabled() and panel.reason_label.text() == "This model has no tool-call format."


def test_card_shows_the_call_and_the_users_choices(qtbot):
    card = ToolCallCard(ToolCall("get_weather", {"city": "北京"}))
    qtbot.addWidget(card)
    assert '"city": "北京"' in card.arguments.toPlainText() and "get_weather" in card.title.text()
    assert card.send_button.isHidden()  # until the answer asks for its result
    card.ask_result()
    card.result_edit.setPlainText('{"t": 22}')
    with qtbot.waitSignal(card.result_submitted, timeout=1000) as sent:
        qtbot.mouseClick(card.send_button, Qt.MouseButton.LeftButton)
    assert sent.args == ['{"t": 22}'] and card.send_button.isHidden()
    code = ToolCallCard(ToolCall(INTERPRETER, {"code": "print(1)"}, kind="interpreter"))
    qtbot.addWidget(code)
    code.show()
    assert code.arguments.toPlainText() == "print(1)" and code.kill_button.isHidden()
    code.set_running(True)
    assert code.kill_button.isVisible() and code.state_label.text() == "running..."
    with qtbot.waitSignal(code.kill_requested, timeout=1000):
        qtbot.mouseClick(code.kill_button, Qt.MouseButton.LeftButton)
    code.set_done()
    assert all(b.isHidden() for b in (code.send_button, code.kill_button, code.decline_button))


def test_tools_are_greyed_out_for_a_model_without_a_tool_format(window):
    panel = window.sidebar.tools_panel
    assert not panel.mode.isEnabled() and "tool-call format" in panel.reason_label.text()


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return tm.tiny_glm4(tm.write_glm4_tokenizer(tmp_path_factory.mktemp("glm4tok")))


def test_a_call_shows_a_card_and_the_typed_result_continues_the_answer(qtbot, make_window, tiny):
    ids = tiny.tokenizer.encode
    obs, end = tiny.tokenizer.special_ids["<|observation|>"], tiny.tokenizer.special_ids["<|user|>"]
    forcer = tm.ForceTokens(
        [ids('get_weather\n{"city": "北京"}') + [obs], ids("\n") + ids("It is 22.") + [end]]
    )
    tiny.logits_processors = lambda: (forcer,)
    window = make_window(tiny)
    panel = window.sidebar.tools_panel
    assert panel.mode.isEnabled()
    panel.set_mode("functions", WEATHER)
    with qtbot.waitSignal(window.session.tools.gate.result_asked, timeout=30_000):
        window.send_message("北京天气？")
    card = window.chat_view.cards()[-1]
    assert (
        card.send_button.isVisible() and window.input_box.send_button.text() == "Stop"
    )  # Stop still ends it
    assert '"city": "北京"' in card.arguments.toPlainText()
    assert all("get_weather\n" not in w.text() for w in window.chat_view.messages())  # no raw call text
    card.result_edit.setPlainText('{"temperature": 22}')
    with qtbot.waitSignal(window.session.answer_finished, timeout=30_000):
        qtbot.mouseClick(card.send_button, Qt.MouseButton.LeftButton)
    widgets = window.chat_view.messages()  # the call's message holds the card; the result is its own block
    assert [w.role for w in widgets] == ["user", "assistant", "observation", "assistant"]
    assert widgets[1].attachments == [card] and widgets[2].text() == '{"temperature": 22}'
    assert card.result_edit.isHidden() and widgets[-1].text() == "It is 22."


def test_a_runaway_run_is_killed_with_one_click_and_the_window_keeps_running(qtbot, make_window, tiny):
    from PySide6.QtCore import QTimer

    from glmdesk.core.settings import SamplingParams

    ids = tiny.tokenizer.encode
    obs, end = tiny.tokenizer.special_ids["<|observation|>"], tiny.tokenizer.special_ids["<|user|>"]
    loop = ids("python\n```python\nopen('go', 'w').close()\nwhile True: pass\n```") + [obs]
    forcer = tm.ForceTokens([loop, ids("\n") + ids("Done.") + [end]])
    tiny.logits_processors = lambda: (forcer,)
    window = make_window(tiny)
    window.sidebar.set_params(
        SamplingParams(temperature=0.0, top_p=1.0, max_new_tokens=80)
    )  # the code is long
    window.sidebar.tools_panel.set_mode("interpreter")
    with qtbot.waitSignal(window.session.tools.gate.card_shown, timeout=30_000) as shown:
        window.send_message("loop forever")
    card = window.chat_view.cards()[-1]
    approval = shown.args[0]
    assert approval in card.findChildren(type(approval))  # the approval waits inside the call's card
    with qtbot.waitSignal(window.session.tools.gate.call_started, timeout=5_000):
        qtbot.mouseClick(approval.allow_button, Qt.MouseButton.LeftButton)  # returns: the code runs elsewhere
    qtbot.waitUntil(lambda: (window.session.tools.interpreter.workdir / "go").exists(), timeout=30_000)
    ticks = []
    timer = QTimer(window)
    timer.timeout.connect(lambda: ticks.append(card.kill_button.isVisible()))
    timer.start(20)
    qtbot.waitUntil(lambda: len(ticks) >= 5, timeout=5_000)  # the event loop runs during the run
    timer.stop()
    assert all(ticks) and approval.state_label.text() == "Allowed"
    with qtbot.waitSignal(window.session.tool_answered, timeout=10_000) as finished:
        qtbot.mouseClick(card.kill_button, Qt.MouseButton.LeftButton)  # the one click
    assert "stopped by the user" in finished.args[1].content and card.kill_button.isHidden()
    qtbot.waitUntil(
        lambda: not window.session.is_streaming() and window.session.state.messages[-1].content == "Done.",
        timeout=30_000,
    )
    widgets = window.chat_view.messages()  # one widget per message, as when reopened
    assert [w.role for w in widgets] == ["user", "assistant", "observation", "assistant"]
    assert widgets[1].attachments == [card] and "stopped by the user" in widgets[2].text()
    assert widgets[-1].text() == "Done."


def test_the_arguments_box_is_as_tall_as_its_text_up_to_a_limit(qtbot):
    from glmdesk.ui.tools.tool_call_card import ARGUMENT_MAX_LINES

    one = ToolCallCard(ToolCall("get_weather", {"city": "北京"}))
    code = ToolCallCard(ToolCall(INTERPRETER, {"code": "x = 1\ny = 2\nprint(x + y)"}, kind="interpreter"))
    long = ToolCallCard(
        ToolCall(INTERPRETER, {"code": "\n".join(f"print({i})" for i in range(200))}, kind="interpreter")
    )
    for card in (one, code, long):
        qtbot.addWidget(card)
        card.resize(600, card.sizeHint().height())
        card.show()
    line = one.arguments.fontMetrics().lineSpacing()
    # {"city": "北京"} pretty-printed is 3 lines; the code 3 lines: shown whole, no
    # scrolling (a line with CJK is taller); the long code is capped and scrolls.
    for short in (one, code):
        assert short.arguments.height() < 7 * line and short.arguments.verticalScrollBar().maximum() == 0
    assert long.arguments.height() > (ARGUMENT_MAX_LINES - 1) * line
    assert long.arguments.height() < (ARGUMENT_MAX_LINES + 2) * line
    assert long.arguments.verticalScrollBar().maximum() > 0  # the rest scrolls inside the box

    live = ToolCallCard(pending="get_weather")
    qtbot.addWidget(live)
    live.show()
    short = live.arguments.height()
    live.set_live_text('{"city": "北京",\n "days": 3,\n "unit": "celsius"')
    qtbot.waitUntil(lambda: live.arguments.height() > short, timeout=2000)
    assert live.arguments.verticalScrollBar().maximum() == 0


def test_a_paste_over_the_functions_limit_is_refused_with_a_sentence(qtbot):
    """A 2 MB one-line paste into the custom functions would stall the window for seconds
    and could never fit a prompt: it is refused whole, the text kept, the reason shown."""
    import json

    from PySide6.QtGui import QGuiApplication

    from glmdesk.core.tools import MAX_FUNCTIONS_CHARS

    panel = ToolsPanel()
    qtbot.addWidget(panel)
    panel.show()
    kept = '[{"name": "get_weather", "parameters": {"type": "object"}}]'
    panel.set_mode("functions", kept)
    huge = json.dumps(
        [{"name": f"f{i}", "description": "天气" * 150} for i in range(6000)], ensure_ascii=False
    )
    assert len(huge.encode()) > 2_000_000
    QGuiApplication.clipboard().setText(huge)
    panel.functions_edit.selectAll()
    panel.functions_edit.paste()
    assert panel.functions_edit.toPlainText() == kept and [s.name for s in panel.toolset().functions] == [
        "get_weather"
    ]
    assert panel.problems_label.isVisible() and f"{MAX_FUNCTIONS_CHARS:,}" in panel.problems_label.text()

    fits = json.dumps([{"name": f"f{i}", "description": "天气"} for i in range(50)], ensure_ascii=False)
    QGuiApplication.clipboard().setText(fits)
    panel.functions_edit.selectAll()
    panel.functions_edit.paste()
    assert len(panel.toolset().functions) == 50 and not panel.problems_label.isVisible()
