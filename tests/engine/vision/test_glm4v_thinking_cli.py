"""GLM-4.1V-Thinking in the terminal: ``<think>`` goes to standard error as the thinking
block, the ``<answer>`` wrapper is never printed."""

from __future__ import annotations

from glmdesk.engine.backends.transformers.vision import VisionLoadedModel
from tests.helpers.cli import run_cli
from tests.helpers.tool_models import ForceTokens


def test_chat_prints_the_thinking_apart_and_the_answer_without_its_wrapper(
    glm4v_folder, glm4v_loaded, red_photo, tmp_path, monkeypatch
):
    tok = glm4v_loaded.tokenizer
    written = "<think>It is red.</think><answer>A red square</answer>"
    script = tok.encode(written, add_special_tokens=False) + [tok.convert_tokens_to_ids("<|user|>")]
    forcer = ForceTokens([script])
    # the CLI loads its own copy of the folder: every vision model of this test writes the script
    monkeypatch.setattr(VisionLoadedModel, "logits_processors", lambda self: (forcer,))
    photo = tmp_path / "red.png"
    photo.write_bytes(red_photo.data)
    out = run_cli(
        "chat", "--model", str(glm4v_folder), "--image", str(photo), "--prompt", "What is this?",
        "--temperature", "0", "--max-new-tokens", str(len(script) + 2), "--engine", "transformers",
        "--device", "cpu",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "A red square"
    assert "Thinking:\n│ It is red." in out.stderr
    assert "answer>" not in out.stdout + out.stderr and "think>" not in out.stdout + out.stderr
