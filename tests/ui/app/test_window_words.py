"""Small words the window shows: shortcut names without menu mnemonics in any language,
"1 model" not "1 models", the model facts without the engine's keys."""

from __future__ import annotations

from types import SimpleNamespace

from PySide6.QtGui import QAction

from glmdesk.ui.app.shortcuts_dialog import action_label
from glmdesk.ui.common.model_facts import device_text, no_break, weights_text
from glmdesk.ui.models.remote_server_box import RemoteServerBox


def test_shortcut_names_drop_the_menu_mnemonic_in_english_and_chinese(qapp) -> None:
    assert action_label(QAction("&Open model...")) == "Open model..."
    assert action_label(QAction("打开模型(&O)...")) == "打开模型..."
    assert action_label(QAction("复制上一个回答(&C)")) == "复制上一个回答"
    assert action_label(QAction("Save && quit")) == "Save & quit"


def test_one_model_on_a_server_is_one_model(qtbot) -> None:
    box = RemoteServerBox(None)
    qtbot.addWidget(box)
    box._on_listed(["glm-4.5-air"])
    assert box.status_label.text() == "1 model on this server."
    box._on_listed(["a", "b"])
    assert box.status_label.text() == "2 models on this server."


def test_model_facts_say_what_the_weights_are_and_what_computes(qapp) -> None:
    def info(**kw):
        return SimpleNamespace(**{"engine": "transformers", "dtype": "fp32", "quantization": "none", **kw})

    assert weights_text(info(engine="llamacpp", quantization="Q4_1")) == "Q4_1 GGUF on llama.cpp"
    assert weights_text(info(quantization="int4-wo")) == "4-bit weights (int4 weight-only), fp32 compute"
    assert weights_text(info(dtype="bf16")) == "bf16 weights and compute"
    assert weights_text(info(engine="remote", dtype="server")) == "answered by the server"
    assert (device_text("cpu"), device_text("cuda:1"), device_text("cuda")) == ("CPU", "GPU 1", "GPU")
    assert no_break("SmolLM2-135M-Instruct") == "SmolLM2\u2011135M\u2011Instruct"


def test_thinking_time_reads_in_ms_under_a_second(qtbot) -> None:
    from glmdesk.ui.chat.reasoning_block import ReasoningBlock

    block = ReasoningBlock()
    qtbot.addWidget(block)
    block.set_text("hmm")
    block.set_done(0.04, 5)
    assert block.header_text() == "Thought for 40 ms · 5 tokens"  # not "0.0 s"
    block.set_done(2.25, 80)
    assert block.header_text() == "Thought for 2.2 s · 80 tokens"
