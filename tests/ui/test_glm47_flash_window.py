"""GLM-4.7-Flash in the window, from its folder (transformers) and from its GGUF (llama.cpp):
its prompt opens ``<think>``, so what it writes first shows as thinking above the answer,
and its XML call becomes a tool card with the parsed arguments."""

from __future__ import annotations

from glmdesk.core.settings import LoadSettings, SamplingParams
from glmdesk.engine.backends.transformers.loader import load_model
from tests.helpers import tool_models as tm
from tests.helpers.gguf_models import write_gguf
from tests.helpers.glm47_flash_models import write_glm47_flash

MS = 60_000
WEATHER = (
    '[{"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}]'
)
WRITTEN = (
    "need the weather</think>\nLet me check.\n<tool_call>get_weather\n"
    "<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>"
)


def _assert_thinking_then_a_card(qtbot, window) -> None:
    window.sidebar.set_params(SamplingParams(temperature=0.0, top_p=1.0, max_new_tokens=80))
    window.sidebar.tools_panel.set_mode("functions", WEATHER)
    with qtbot.waitSignal(window.session.tools.gate.result_asked, timeout=MS):
        assert window.send_message("weather in Paris?")
    (card,) = window.chat_view.cards()
    assert "get_weather" in card.title.text()
    assert card.arguments.toPlainText() == '{\n  "city": "Paris"\n}'
    widget = window.chat_view.messages()[-1]
    assert widget.reasoning() == "need the weather"
    assert widget.text().strip() == "Let me check."


def test_the_folder_thinks_and_calls_in_the_window(qtbot, make_window, tmp_path):
    model = load_model(LoadSettings(model=str(write_glm47_flash(tmp_path / "GLM-4.7-Flash")), device="cpu"))
    tok = model.tokenizer
    script = tok.encode(WRITTEN, add_special_tokens=False) + [tok.convert_tokens_to_ids("<|observation|>")]
    forcer = tm.ForceTokens([script])
    model.logits_processors = lambda: (forcer,)
    try:
        window = make_window(model)
        assert window.model_info.family == "glm4-moe-lite"
        _assert_thinking_then_a_card(qtbot, window)
    finally:
        model.close()


def test_the_gguf_thinks_and_calls_in_the_window(qtbot, make_window, tmp_path, monkeypatch):
    path = write_gguf(write_glm47_flash(tmp_path / "GLM-4.7-Flash"), tmp_path / "GLM-4.7-Flash-F32.gguf")
    window = make_window(start=False)
    with qtbot.waitSignal(window.loader.model_ready, timeout=MS) as ready:
        window.load_model(LoadSettings(model=str(path), engine="llamacpp"))
    assert (ready.args[0].engine, ready.args[0].family) == ("llamacpp", "glm4-moe-lite")
    model = window.session.loader.backend.model
    vocab = model.vocab
    forcer = tm.ForceTokens([vocab.encode(WRITTEN, special=True) + [vocab.special_id("<|observation|>")]])
    monkeypatch.setattr(model, "logits_processors", lambda: (forcer,))
    _assert_thinking_then_a_card(qtbot, window)
