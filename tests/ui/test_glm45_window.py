"""GLM-4.5 in the window: its thinking shows greyed above the answer, its XML call becomes
a tool card with the parsed arguments and the Send result / Decline buttons."""

from __future__ import annotations

from glmdesk.core.settings import LoadSettings, SamplingParams
from glmdesk.engine.loader import load_model
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


def test_reasoning_and_an_xml_call_show_as_reasoning_and_a_card(qtbot, make_window, tmp_path):
    model = load_model(
        LoadSettings(model=str(glm45_models.write_glm45(tmp_path / "GLM-4.5-Air")), device="cpu")
    )
    tok = model.tokenizer
    script = tok.encode(WRITTEN, add_special_tokens=False) + [tok.convert_tokens_to_ids("<|observation|>")]
    forcer = tm.ForceTokens([script])
    model.logits_processors = lambda: (forcer,)
    try:
        window = make_window(model)
        window.sidebar.set_params(SamplingParams(temperature=0.0, top_p=1.0, max_new_tokens=80))
        window.sidebar.tools_panel.set_mode("functions", WEATHER)
        with qtbot.waitSignal(window.session.tool_call_requested, timeout=MS):
            assert window.send_message("weather in Paris?")
        (card,) = window.chat_view.cards()
        assert not card.is_live() and "get_weather" in card.title.text()
        assert card.arguments.toPlainText() == '{\n  "city": "Paris"\n}'
        assert card.send_button.isVisible() and card.decline_button.isVisible()
        widget = window.chat_view.messages()[-1]
        assert widget.reasoning() == "need the weather"
        assert widget.text().strip() == "Let me check."
    finally:
        model.close()
