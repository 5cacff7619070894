"""The answer run on the embedded model (SmolLM2-135M-Instruct, CPU): what the model
writes reaches the events unchanged, with the engine's figures."""

from __future__ import annotations

import threading

from glmdesk.chat.answer import run_answer
from glmdesk.chat.events import AnswerDone, StepFigures, TextDelta
from glmdesk.core.messages import ChatMessage
from glmdesk.core.parts import TextPart
from glmdesk.core.settings import ParamsBox, SamplingParams
from glmdesk.engine.decode.generate import stream_answer

ASK = [ChatMessage("user", "Name three colours.")]


def test_the_events_carry_the_models_answer_and_figures(embedded):
    box = ParamsBox(SamplingParams(temperature=0.0, max_new_tokens=12))
    chunks = list(stream_answer(embedded, ASK, box))
    events = list(run_answer(lambda m, p, c, s: stream_answer(embedded, m, p, c, s), ASK, box))
    written = "".join(c.text for c in chunks)
    assert written and "".join(e.text for e in events if isinstance(e, TextDelta)) == written
    done = events[-1]
    assert isinstance(done, AnswerDone) and done.finish_reason == chunks[-1].finish_reason == "length"
    assert done.parts == (TextPart(written),)
    assert (done.figures.n_generated, done.figures.prompt_tokens) == (12, chunks[-1].prompt_tokens)
    steps = [e.figures.n_generated for e in events if isinstance(e, StepFigures)]
    # Each step's figures count up to the answer's tokens, never past them.
    assert steps == sorted(steps) and len(steps) >= len(chunks) - 1 and steps[-1] <= 12


def test_stop_ends_the_run_cancelled_with_the_text_so_far(embedded):
    box = ParamsBox(SamplingParams(temperature=0.0, max_new_tokens=64))
    stop = threading.Event()
    events = []
    for event in run_answer(lambda m, p, c, s: stream_answer(embedded, m, p, c, s), ASK, box, stop=stop):
        events.append(event)
        if isinstance(event, TextDelta):
            stop.set()
    done = events[-1]
    assert isinstance(done, AnswerDone) and done.finish_reason == "cancelled"
    shown = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert shown and done.parts == (TextPart(shown),) and done.figures.n_generated < 64
