"""A reasoning model in the window: GLM-Z1's thinking shows greyed above the answer while
it streams; the answer alone is the message (copied, saved, sent back)."""

from __future__ import annotations

from glmdesk.core.settings import LoadSettings
from glmdesk.engine.loader import load_model
from tests.helpers import glm4_0414_models as glm0414
from tests.helpers import tool_models as tm


def test_thinking_shows_above_the_answer_and_only_the_answer_is_kept(qtbot, make_window, tmp_path):
    folder = glm0414.write_glm4_0414(tmp_path / "GLM-Z1-9B-0414", glm0414.Z1_TEMPLATE, "THUDM/GLM-Z1-9B-0414")
    z1 = load_model(LoadSettings(model=str(folder), device="cpu"))
    tok = z1.tokenizer
    script = tok.encode("step one</think>answer", add_special_tokens=False) + [
        tok.convert_tokens_to_ids("<|user|>")
    ]
    forcer = tm.ForceTokens([script])
    z1.logits_processors = lambda: (forcer,)
    try:
        window = make_window(z1)
        with qtbot.waitSignal(window.answer_finished, timeout=60_000):
            assert window.send_message("Hello world")
        widget = window.chat_view.messages()[-1]
        assert widget.reasoning() == "step one"
        assert widget.reasoning_label.isVisible() and "step one" in widget.reasoning_label.text()
        assert widget.text() == "answer"
        assert window.state.messages[-1].content == "answer"
    finally:
        z1.close()
