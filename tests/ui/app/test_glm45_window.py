"""GLM-4.5 in the window: its thinking shows greyed above the answer, its XML call becomes
a tool card with the parsed arguments and the Send result / Decline buttons; several
calls in one answer each get a card and are asked in the order written."""

from __future__ import annotations

import pytest

from glmdesk.core.settings import LoadSettings, SamplingParams
from glmdesk.engine.backends.transformers.loader import load_model
from tests.helpers import glm45_models
from tests.helpers import tool_models as tm

MS = 60_000
WEATHER = (
    '[{"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}]'
)
WRITTEN = (
    "\n<think>need the weather</think>\nLet me check.\n<tool_call>get_weather\n"
    "<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>"
)
TWO_CALLS = (
    "\n<think>two cities</think>\n<tool_call>get_weather\n<arg_key>city</arg_key>\n"
    "<arg_value>Paris</arg_value>\n</tool_call>\n<tool_call>get_weather\n"
    "<arg_key>city</arg_key>\n<arg_value>Rome</arg_value>\n</tool_call>"
)


@pytest.fixture(scope="module")
def glm45(tmp_path_factory):
    folder = glm45_models.write_glm45(tmp_path_factory.mktemp("glm45") / "GLM-4.5-Air")
    model = load_model(LoadSettings(model=str(folder), device="cpu"))
    yield model
    model.close()


def _script(model, *replies: str) -> None:
    tok = model.tokenizer
    stop = tok.convert_tokens_to_ids("<|observation|>")
    forcer = tm.ForceTokens([tok.encode(r, add_special_tokens=False) + [stop] for r in replies])
    model.logits_processors = lambda: (forcer,)


def test_reasoning_and_an_xml_call_show_as_reasoning_and_a_card(qtbot, make_window, glm45):
    _script(glm45, WRITTEN)
    window = make_window(glm45)
    window.sidebar.set_params(SamplingParams(temperature=0.0, top_p=1.0, max_new_tokens=80))
    window.sidebar.tools_panel.set_mode("functions", WEATHER)
    with qtbot.waitSignal(window.session.tools.gate.result_asked, timeout=MS):
        assert window.send_message("weather in Paris?")
    (card,) = window.chat_view.cards()
    assert not card.is_live() and "get_weather" in card.title.text()
    assert card.arguments.toPlainText() == '{\n  "city": "Paris"\n}'
    assert card.send_button.isVisible() and card.decline_button.isVisible()
    widget = window.chat_view.messages()[-1]
    assert widget.reasoning() == "need the weather"
    assert widget.text().strip() == "Let me check."


def test_two_calls_in_one_answer_are_two_cards_answered_in_order(qtbot, make_window, glm45, tmp_path):
    from tests.ui.conftest import history_window

    _script(glm45, TWO_CALLS, "Sunny and rain.")
    window, history, _panel, controller = history_window(make_window, tmp_path / "history.sqlite3", glm45)
    window.sidebar.set_params(SamplingParams(temperature=0.0, top_p=1.0, max_new_tokens=120))
    window.sidebar.tools_panel.set_mode("functions", WEATHER)
    with qtbot.waitSignal(window.session.tools.gate.result_asked, timeout=MS) as asked:
        assert window.send_message("weather in Paris and Rome?")
    assert asked.args[0].call.arguments == {"city": "Paris"}
    first, second = window.chat_view.cards()
    assert '"Paris"' in first.arguments.toPlainText() and first.send_button.isVisible()
    assert '"Rome"' in second.arguments.toPlainText() and not second.send_button.isVisible()
    assert second.state_label.text() == "asked after the call above"

    prompts = []
    encode = glm45.prompt_format.encode
    glm45.prompt_format.encode = lambda m: prompts.append(encode(m)) or prompts[-1]
    try:
        with qtbot.waitSignal(window.session.tools.gate.result_asked, timeout=MS) as asked:
            first.result_edit.setPlainText("sunny")
            first.send_button.click()
        assert asked.args[0].call.arguments == {"city": "Rome"} and not prompts  # no answer between the two
        assert second.send_button.isVisible()
        with qtbot.waitSignal(window.session.answer_finished, timeout=MS):
            second.result_edit.setPlainText("rain")
            second.send_button.click()
    finally:
        del glm45.prompt_format.encode
    assert window.chat_view.messages()[-1].text().strip() == "Sunny and rain."
    roles = [m.role for m in window.session.state.messages]
    assert roles == ["user", "assistant", "assistant", "observation", "observation", "assistant"]
    text = glm45.tokenizer.decode(prompts[-1])
    assert text.count("<|observation|>") == 1
    assert "<tool_response>\nsunny\n</tool_response>\n<tool_response>\nrain\n</tool_response>" in text
    assert "<think>two cities</think>" in text  # the calls' reasoning, after the last user turn
    try:  # the history keeps both calls and both results, and gives the same conversation back
        assert controller.flush(10)
        (conv,) = history.list_conversations()
        stored = history.chat_messages(conv.id)
    finally:
        controller.close()
        history.close()
    assert [m.role for m in stored] == roles
    assert [m.tool_call.arguments for m in stored if m.tool_call] == [{"city": "Paris"}, {"city": "Rome"}]
    assert stored[1].reasoning == "two cities" and [m.content for m in stored[3:5]] == ["sunny", "rain"]


def test_the_thinking_switch_sets_the_next_answers_prompt_and_is_kept(qtbot, make_window, glm45, tmp_path):
    from PySide6.QtCore import QSettings

    from glmdesk.ui.app.main_window import MainWindow
    from glmdesk.ui.common.settings_store import SettingsStore

    store = SettingsStore(QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat))
    window = MainWindow(model=glm45, store=store)
    qtbot.addWidget(window)
    window.show()
    switch = window.sidebar.thinking
    assert not switch.box.isEnabled() and not switch.box.isChecked()  # no model yet
    with qtbot.waitSignal(window.loader.model_ready, timeout=MS):
        window.start()
    assert switch.box.isEnabled() and switch.box.isChecked() and not switch.reason.isVisible()
    assert store.sampling() is None and window.params_box.get().temperature == 0.6  # GLM-4.5's defaults apply
    window.sidebar.set_params(SamplingParams(temperature=0.0, top_p=1.0, max_new_tokens=8))
    prompts = []
    encode = glm45.prompt_format.encode
    glm45.prompt_format.encode = lambda m: prompts.append(glm45.tokenizer.decode(encode(m))) or encode(m)
    try:
        for checked, question in ((False, "first"), (True, "second")):
            switch.box.setChecked(checked)
            assert window.params_box.get().enable_thinking is checked
            _script(glm45, "Hi.")
            with qtbot.waitSignal(window.session.answer_finished, timeout=MS):
                assert window.send_message(question)
            assert window.chat_view.messages()[-1].text().strip() == "Hi."
            assert prompts[-1].endswith(
                f"{question}/nothink<|assistant|>\n<think></think>"
                if not checked
                else f"{question}<|assistant|>"
            ), prompts[-1]
            assert glm45.prompt_format.thinking is True  # one answer's setting, not the model's
        switch.box.setChecked(False)
    finally:
        del glm45.prompt_format.encode
        window.close()
    assert store.sampling().enable_thinking is False  # kept in the settings, as the other controls


def test_the_thinking_switch_is_greyed_with_the_reason_for_a_model_without_one(window):
    switch = window.sidebar.thinking
    assert not switch.box.isEnabled() and window.params_box.get().enable_thinking is None
    assert not switch.box.isChecked()  # greyed and unticked: this model does not think
    assert "has no thinking switch" in switch.box.toolTip() and switch.reason.isVisible()
