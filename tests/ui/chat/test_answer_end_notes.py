"""What the window says when an answer ends: nothing extra for an answer that ended by
itself (even when max new tokens asks for the whole context, as GLM-4.5's defaults do),
and a note under an answer the engine stopped for repeating itself."""

from __future__ import annotations

import torch

from glmdesk.core.settings import SamplingParams
from glmdesk.engine.decode.repetition import WINDOW

ANSWER_MS = 120_000


def test_no_reply_limit_note_on_an_answer_that_ended_by_itself(qtbot, window, shared_model) -> None:
    context = shared_model.context_length
    window.sidebar.set_params(SamplingParams(temperature=0.0, top_p=1.0, max_new_tokens=context))
    with qtbot.waitSignal(window.session.answer_finished, timeout=ANSWER_MS) as done:
        assert window.send_message("Say hello.")
    end = done.args[1]
    assert 0 < end.figures.reply_limit < context  # the prompt took some of the context...
    assert end.finish_reason == "stop"
    assert window.notice.text() == ""  # ...but the answer was not cut: nothing to say


def test_an_answer_stuck_repeating_stops_with_a_note(qtbot, window, shared_model, monkeypatch) -> None:
    hello = shared_model.tokenizer.encode(" hello", add_special_tokens=False)[0]

    def always_hello(_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        forced = torch.full_like(scores, float("-inf"))
        forced[:, hello] = 0.0
        return forced

    monkeypatch.setattr(shared_model, "logits_processors", lambda: (always_hello,))
    window.sidebar.set_params(SamplingParams(temperature=0.0, top_p=1.0, max_new_tokens=512))
    with qtbot.waitSignal(window.session.answer_finished, timeout=ANSWER_MS) as done:
        assert window.send_message("Greet me.")
    assert done.args[1].finish_reason == "repetition" and done.args[1].figures.n_generated == WINDOW
    answer = window.chat_view.messages()[-1]
    assert answer.note_label.isVisible() and "repeating" in answer.note_label.text()


def _scripted_window(qtbot, chunk):
    from glmdesk.ui.app.main_window import MainWindow
    from tests.helpers.fake_backend import CallingBackend

    window = MainWindow(backend=CallingBackend([chunk]))
    qtbot.addWidget(window)
    window.show()
    with qtbot.waitSignal(window.loader.model_ready, timeout=10_000):
        window.start()
    window.sidebar.set_params(SamplingParams(temperature=0.0, top_p=1.0, max_new_tokens=512))
    with qtbot.waitSignal(window.session.answer_finished, timeout=10_000):
        assert window.send_message("Hi")
    return window


def test_the_reply_limit_note_shows_for_a_cut_answer_and_goes_with_the_model(qtbot) -> None:
    from glmdesk.core.parts import TextPart
    from glmdesk.engine.chunk import GenerationChunk

    ended = GenerationChunk(parts=(TextPart("Hello."),), finish_reason="stop", reply_limit=90)
    window = _scripted_window(qtbot, ended)
    assert window.notice.text() == ""  # 90 < 512 left, but the answer ended by itself
    window.close()

    cut = GenerationChunk(parts=(TextPart("Hello"),), finish_reason="length", reply_limit=90)
    window = _scripted_window(qtbot, cut)
    assert window.notice.text().startswith("Only 90 tokens are left in the context window")
    window.loader.model_ready.emit(window.model_info)  # another model is in use now
    assert window.notice.text() == ""
    window.close()
