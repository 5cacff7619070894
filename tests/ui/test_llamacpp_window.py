"""The window on the llama.cpp engine (issue 17): the embedded GGUF loads there, an answer
streams with its KV cache counted, the next turn reuses it (issue 21), and a file that is not GGUF is named at once while the
model in use stays."""

from __future__ import annotations

from glmdesk.core.settings import LoadSettings, SamplingParams

LOAD_MS = 180_000
ANSWER_MS = 120_000


def test_window_answers_on_llama_cpp_and_names_a_bad_file(qtbot, make_window, tmp_path) -> None:
    window = make_window(start=False)
    with qtbot.waitSignal(window.loader.model_ready, timeout=LOAD_MS) as ready:
        window.load_model(LoadSettings(engine="llamacpp", threads=1))
    info = ready.args[0]
    assert info.engine == "llamacpp" and info.source_kind == "embedded"
    assert window.session.loader.capabilities.kv_strategies["sliding_window"] is None
    window.sidebar.set_params(SamplingParams(temperature=0.0, top_p=1.0, max_new_tokens=16))
    kv_seen: list[int] = []
    window.session.step_shown.connect(lambda _id, step: kv_seen.append(step[0].figures.cache.kv_bytes))
    with qtbot.waitSignal(window.session.answer_finished, timeout=ANSWER_MS) as finished:
        assert window.send_message("What is the capital of France?")
    assert finished.args[1].finish_reason in ("stop", "length")
    assert window.chat_view.messages()[-1].text().strip()
    assert kv_seen and kv_seen[-1] > 0  # llama.cpp's own KV bytes reach the gauge
    assert window.loader.kept_kv_bytes() > 0  # kept in llama.cpp's context for the next turn
    with qtbot.waitSignal(window.session.answer_finished, timeout=ANSWER_MS) as second:
        assert window.send_message("And of Italy?")
    final = second.args[1]  # only the new turn was prefilled (issue 21)
    assert (
        final.finish_reason in ("stop", "length")
        and 0 < final.figures.reused_tokens < final.figures.prompt_tokens
    )

    fake = tmp_path / "model.gguf"
    fake.write_text("<html><body>404 Not Found</body></html>\n")
    with qtbot.waitSignal(window.load_view.load_error_shown, timeout=LOAD_MS) as failed:
        window.load_model(LoadSettings(model=str(fake), engine="llamacpp"))
    assert "GGUF" in failed.args[0] and info.name in failed.args[0]  # named; the model stays
    assert window.model_info is info
