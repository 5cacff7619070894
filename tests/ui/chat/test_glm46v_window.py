"""GLM-4.6V in the window: the image button and the Thinking switch are on, a photo's
answer shows its thinking in the reasoning block and its text as the answer."""

from __future__ import annotations

from glmdesk.core.settings import SamplingParams
from glmdesk.engine.backends.transformers.vision import VisionLoadedModel
from tests.helpers.tool_models import ForceTokens

ANSWER_TIMEOUT_MS = 60_000


def test_a_photo_is_answered_with_its_thinking_apart(
    qtbot, make_window, glm46v_loaded, red_photo, monkeypatch
):
    tok = glm46v_loaded.tokenizer
    script = tok.encode("<think>It is red.</think>A red square", add_special_tokens=False)
    script.append(tok.convert_tokens_to_ids("<|user|>"))
    forcer = ForceTokens([script])
    monkeypatch.setattr(VisionLoadedModel, "logits_processors", lambda self: (forcer,))
    window = make_window(glm46v_loaded)
    window.sidebar.set_params(SamplingParams(temperature=0.0, max_new_tokens=len(script) + 2))
    box = window.input_box
    assert box.attach_button.isEnabled() and window.sidebar.thinking.box.isEnabled()
    assert not box.ocr_button.isEnabled()  # a vision model, not an OCR one
    box.add_images([red_photo])
    box.set_text("What is this?")
    with qtbot.waitSignal(window.session.answer_finished, timeout=ANSWER_TIMEOUT_MS):
        box.submit()
    answer = window.chat_view.messages()[-1]
    assert answer.text() == "A red square"
    assert answer.reasoning_block.text() == "It is red."
    assert window.session.state.messages[-2].attachments[0].sha256 == red_photo.sha256
