"""A GGUF file without llama.cpp: transformers runs it with the file's own 4-bit grid
(int4 weight-only), says so, and the terminal names the command that builds llama.cpp."""

from __future__ import annotations

from glmdesk import cli
from glmdesk.core.settings import LoadSettings
from glmdesk.engine.backends import llamacpp as llamacpp_spec
from glmdesk.engine.backends.transformers.fallback import transformers_fallback


def test_only_the_automatic_engine_on_a_gguf_falls_back_to_weight_only() -> None:
    chosen, note = transformers_fallback(LoadSettings(device="cpu"), llama_cpp_installed=False)
    assert chosen.quantization == "int4-wo" and note.kind == "engine_fallback"
    assert note.params == {"quantization": "int4-wo", "file_type": "Q4_1", "reason": "missing"}
    for settings, installed in (
        (LoadSettings(device="cpu"), True),  # llama.cpp runs it
        (LoadSettings(device="cpu", engine="transformers"), False),  # the user's choice stands
        (LoadSettings(device="cpu", quantization="int8-wo"), False),
        (LoadSettings(device="cpu", model="/models/glm4"), False),  # a folder, not a GGUF file
    ):
        assert transformers_fallback(settings, installed) == (settings, None)


def test_the_terminal_answers_on_int4_weight_only_and_says_why(embedded_folder, monkeypatch, capsys) -> None:
    monkeypatch.setattr(llamacpp_spec, "llama_cpp_available", lambda: False)
    prompt = ["--prompt", "What is the capital of Japan?", "--temperature", "0", "--max-new-tokens", "12"]
    assert cli.main(["chat", "--device", "cpu", *prompt]) == 0
    out, err = capsys.readouterr()
    assert "Tokyo" in out
    assert ", int4-wo, fused decode" in err and "transformers)" in err
    assert "note: llama.cpp is not installed, so transformers runs this Q4_1 file with int4-wo weights" in err
    assert "note: llama.cpp answers faster: build it once with glmdesk build-llamacpp" in err


def test_a_fallback_after_llama_cpp_crashed_says_so() -> None:
    from glmdesk.core.distrusted_engines import distrust_engine

    distrust_engine("llamacpp")
    chosen, note = transformers_fallback(LoadSettings(device="cpu"), llama_cpp_installed=False)
    assert chosen.quantization == "int4-wo" and note.params["reason"] == "crashed"
    assert note.message.startswith(
        "llama.cpp crashed here while it answered, so transformers runs this Q4_1 file"
    )
