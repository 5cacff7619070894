"""What the window says when an answer ends: nothing extra for an answer that ended by
itself (even when max new tokens asks for the whole context, as GLM-4.5's defaults do),
and a note under an answer the engine stopped for repeating itself."""

from __future__ import annotations

import torch

from glmdesk.core.settings import SamplingParams

ANSWER_MS = 120_000


def test_no_reply_limit_note_on_an_answer_that_ended_by_itself(qtbot, window, shared_model) -> None:
    context = shared_model.context_length
    window.sidebar.set_params(SamplingParams(temperature=0.0, top_p=1.0, max_new_tokens=context))
    with qtbot.waitSignal(window.session.answer_finished, timeout=ANSWER_MS) as done:
        assert window.send_message("Say hello.")
    chunk = done.args[1]
    assert 0 < chunk.reply_limit < context  # the prompt took some of the context...
    assert chunk.finish_reason == "stop"
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
    assert done.args[1].finish_reason == "repetition" and done.args[1].n_generated == 96
    answer = window.chat_view.messages()[-1]
    assert answer.note_label.isVisible() and "repeating" in answer.note_label.text()
