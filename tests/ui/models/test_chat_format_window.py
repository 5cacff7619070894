"""The window with a dense GLM-4-0414 checkpoint carrying GLM-4.7's published template:
Open model says which format Automatic reads from its template and why and lets the user
choose another format or a template file; the notice says the checkpoint is prompted in
its template's format; its reasoning shows as thinking and its XML call as a tool card."""

from __future__ import annotations

import pytest

from glmdesk.core.settings import LoadSettings, SamplingParams
from glmdesk.ui.models.open_model_dialog import OpenModelDialog
from tests.helpers import tool_models as tm
from tests.helpers.published_templates import GLM47_TEMPLATE, write_dense_glm

MS = 60_000
WEATHER = (
    '[{"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}]'
)
WRITTEN = "need the weather</think>Let me check.<tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value></tool_call>"


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return write_dense_glm(tmp_path_factory.mktemp("dense47") / "GLM-4-9B-0414-tune", GLM47_TEMPLATE)


def test_open_model_says_the_format_read_from_the_template_and_offers_others(qtbot, folder, tmp_path):
    dialog = OpenModelDialog(LoadSettings(model=str(folder)))
    qtbot.addWidget(dialog)
    box = dialog.chat_format_box
    assert box.detected.text() == (
        "Automatic reads the chat template as GLM-4.5/4.6/4.7: reasoning, XML tool calls: "
        "it writes tool calls with <arg_key> and <arg_value>."
    )
    assert dialog.load_settings().chat_format == "auto" and dialog.load_settings().chat_template is None
    box.format_combo.setCurrentIndex(box.format_combo.findData("plain"))
    picked = tmp_path / "chat_template.jinja"
    picked.write_text("[gMASK]<sop>{% for m in messages %}<|user|>{{ m.content }}{% endfor %}<|assistant|>")
    box.template_edit.setText(str(picked))
    assert box.detected.text().startswith("Automatic reads the chat template as The chat template only")
    chosen = dialog.load_settings()
    assert (chosen.chat_format, chosen.chat_template) == ("plain", str(picked))
    dialog.model_edit.setText(str(tmp_path / "model.gguf"))
    box.template_edit.clear()
    assert box.detected.text() == "The format is read from the chat template when the model loads."


def test_the_window_says_the_format_shows_thinking_and_a_tool_card(qtbot, make_window, folder, monkeypatch):
    window = make_window(start=False)
    with qtbot.waitSignal(window.loader.model_ready, timeout=MS) as ready:
        window.load_model(LoadSettings(model=str(folder), device="cpu", engine="transformers"))
    info = ready.args[0]
    assert (info.family, info.chat_format) == ("glm4-moe", "glm45")
    qtbot.waitUntil(
        lambda: "so this GLM-Z1-0414 checkpoint is prompted that way" in window.notice.text(), timeout=MS
    )
    model = window.session.loader.backend.loaded
    tok = model.tokenizer
    forcer = tm.ForceTokens(
        [tok.encode(WRITTEN, add_special_tokens=False) + [tok.convert_tokens_to_ids("<|observation|>")]]
    )
    monkeypatch.setattr(model, "logits_processors", lambda: (forcer,))
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


def test_open_model_reads_a_gguf_files_template(qtbot, tmp_path):
    from tests.helpers.gguf_models import write_gguf
    from tests.helpers.glm47_flash_models import write_glm47_flash

    path = write_gguf(write_glm47_flash(tmp_path / "GLM-4.7-Flash"), tmp_path / "GLM-4.7-Flash-F32.gguf")
    dialog = OpenModelDialog(LoadSettings(model=str(path)))
    qtbot.addWidget(dialog)
    assert dialog.chat_format_box.detected.text().startswith(
        "Automatic reads the chat template as GLM-4.5/4.6/4.7: reasoning, XML tool calls"
    )
