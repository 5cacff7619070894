"""``glmdesk chat`` in a terminal (issue 2), run in this process (``tests/helpers/cli.py``)."""

from __future__ import annotations

from tests.helpers.cli import run_cli


def glmdesk(*args, input_text=""):
    return run_cli(*args, input_text=input_text)


def test_chat_prompt_streams_one_answer(embedded_folder):
    out = glmdesk(
        "chat", "--prompt", "What is the capital of France?", "--temperature", "0", "--engine", "transformers"
    )
    assert out.returncode == 0, out.stderr
    assert "Paris" in out.stdout
    assert "tokens/s" in out.stderr and "SmolLM2" in out.stderr and "fused decode" in out.stderr


def test_chat_interactive_clear_and_exit(embedded_folder):
    script = "What is the capital of France?\n/foo\n/clear\n/exit\n"
    out = glmdesk(
        "chat",
        "--temperature",
        "0",
        "--max-new-tokens",
        "16",
        "--no-fused-decode",
        "--engine",
        "transformers",
        input_text=script,
    )
    assert out.returncode == 0, out.stderr
    assert "Paris" in out.stdout and "new conversation" in out.stderr
    assert "Unknown command /foo" in out.stderr  # said, not sent to the model
    assert "SmolLM2" in out.stderr and "fused decode" not in out.stderr


def test_compile_is_skipped_for_caches_it_cannot_serve(embedded_folder):
    out = glmdesk(
        "chat",
        "--prompt",
        "What is the capital of France?",
        "--temperature",
        "0",
        "--compile-decode",
        "--kv-cache",
        "quantized",
    )
    assert out.returncode == 0, out.stderr
    assert "sliding-window and dynamic KV caches" in out.stderr and "fused decode" in out.stderr
    assert ", compiled decode" not in out.stderr and "Paris" in out.stdout


def test_bad_values_are_sentences_not_tracebacks(embedded_folder):
    out = glmdesk("chat", "--prompt", "hi", "--repetition-penalty", "0.5")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "Repetition penalty must be at least 1.0" in out.stderr
    out = glmdesk("chat", "--prompt", "hi", "--model", "/no/such/folder")
    assert out.returncode == 2 and "Traceback" not in out.stderr and "/no/such/folder" in out.stderr


def test_an_option_of_another_engine_is_said_not_dropped(embedded_folder):
    out = glmdesk(
        "chat", "--prompt", "Hi", "--max-new-tokens", "4", "--engine", "transformers", "--n-ctx", "100000"
    )
    assert out.returncode == 0, out.stderr
    assert "--n-ctx (llama.cpp): not read by the transformers engine" in out.stderr
