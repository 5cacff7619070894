"""A reasoning model in the window: GLM-Z1's thinking shows greyed above the answer while
it streams; the answer alone is the message text (copied, sent back), the thinking is
saved beside it and shown again when the conversation is reopened."""

from __future__ import annotations

import re

from PySide6.QtGui import QGuiApplication

from glmdesk.core.settings import LoadSettings
from glmdesk.engine.backends.transformers.loader import load_model
from tests.helpers import glm4_0414_models as glm0414
from tests.helpers import tool_models as tm
from tests.ui.conftest import history_window


def test_thinking_shows_above_the_answer_is_saved_and_comes_back(qtbot, make_window, tmp_path):
    folder = glm0414.write_glm4_0414(tmp_path / "GLM-Z1-9B-0414", glm0414.Z1_TEMPLATE, "THUDM/GLM-Z1-9B-0414")
    z1 = load_model(LoadSettings(model=str(folder), device="cpu"))
    tok = z1.tokenizer
    script = tok.encode("step one</think>answer", add_special_tokens=False) + [
        tok.convert_tokens_to_ids("<|user|>")
    ]
    forcer = tm.ForceTokens([script])
    z1.logits_processors = lambda: (forcer,)
    window, history, panel, controller = history_window(make_window, tmp_path / "history.sqlite3", z1)
    try:
        with qtbot.waitSignal(window.session.answer_finished, timeout=60_000):
            assert window.send_message("Hello world")
        widget = window.chat_view.messages()[-1]
        block = widget.reasoning_block
        assert widget.reasoning() == "step one" and widget.text() == "answer"
        # Collapsed once the answer started: how long it thought and how many tokens.
        assert block.isVisible() and not block.is_expanded() and not widget.reasoning_label.isVisible()
        assert re.fullmatch(r"Thought for (\d+\.\d s|\d+ ms) · \d+ tokens", block.header_text()), (
            block.header_text()
        )
        header = block.header_text()
        block.toggle_button.click()  # expandable
        assert widget.reasoning_label.isVisible() and widget.reasoning_label.text() == "step one"
        with qtbot.waitSignal(block.copied, timeout=5_000):
            block.copy_button.click()  # copyable
        assert QGuiApplication.clipboard().text() == "step one"
        assert window.state.messages[-1].content == "answer"
        assert window.state.messages[-1].reasoning == "step one"
        controller.flush()
        # Time to first token both ways in the answer's figures (its footer, shown on hover).
        footer = window.branch_actions.footers()[1]
        both = re.compile(r"TTFT [\d.]+ s thinking, [\d.]+ s answer")
        qtbot.waitUntil(lambda: both.search(footer.stats_label.text()) is not None, timeout=5_000)
        cid = controller.conversation_id
        (_question, stored) = history.messages(cid)
        assert (stored.text, stored.reasoning) == ("answer", "step one")
        assert 0 < stored.stats.ttft_s < stored.stats.answer_ttft_s and stored.stats.reasoning_tokens > 0

        window.new_chat()
        assert not window.chat_view.messages()
        panel.conversation_selected.emit(cid)  # as a click in the panel does
        qtbot.waitUntil(lambda: len(window.chat_view.messages()) == 2, timeout=10_000)
        reopened = window.chat_view.messages()[-1]
        assert reopened.text() == "answer" and reopened.reasoning() == "step one"
        qtbot.waitUntil(reopened.reasoning_block.isVisible, timeout=5_000)
        assert not reopened.reasoning_block.is_expanded()
        qtbot.waitUntil(lambda: "tokens" in reopened.reasoning_block.header_text(), timeout=5_000)
        assert reopened.reasoning_block.header_text() == header  # the stored figures
    finally:
        controller.close()
        history.close()
        z1.close()
