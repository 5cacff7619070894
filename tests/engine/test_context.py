"""Context fitting by whole rounds (issue 5, issue 7 case 8)."""

from __future__ import annotations

import pytest

from glmdesk.core.errors import GlmdeskError
from glmdesk.core.messages import ChatMessage
from glmdesk.core.settings import ParamsBox, SamplingParams
from glmdesk.engine.context import fit_prompt
from glmdesk.engine.generate import stream_chat


def conversation(rounds: int) -> list[ChatMessage]:
    msgs = [ChatMessage("system", "You are terse.")]
    for i in range(rounds):
        msgs += [
            ChatMessage("user", f"Question {i}: " + "words " * 40),
            ChatMessage("assistant", f"Answer {i}."),
        ]
    return msgs + [ChatMessage("user", "Newest question?")]


def test_fits_without_dropping(embedded):
    msgs = conversation(2)
    fitted = fit_prompt(embedded.prompt_format, msgs, 10_000)
    assert fitted.dropped == () and len(fitted.kept) == len(msgs)


def test_drops_oldest_whole_rounds_keeps_system_and_newest(embedded):
    msgs = conversation(6)
    full = len(embedded.prompt_format.encode(msgs))
    fitted = fit_prompt(embedded.prompt_format, msgs, full - 60)
    assert fitted.dropped == (1, 2)  # the first user message and its answer
    assert 0 in fitted.kept and len(msgs) - 1 in fitted.kept
    assert len(fitted.ids) <= full - 60
    tight = fit_prompt(embedded.prompt_format, msgs, 60)
    assert tight.kept == (0, len(msgs) - 1)


def test_newest_message_alone_too_long_is_refused(embedded):
    msgs = [ChatMessage("system", "s"), ChatMessage("user", "long " * 500)]
    with pytest.raises(GlmdeskError) as err:
        fit_prompt(embedded.prompt_format, msgs, 100)
    assert err.value.kind == "prompt_too_long" and "too long" in err.value.message


def test_huge_paste_reports_before_generating(embedded):
    msgs = [ChatMessage("user", "paste " * 9000)]
    chunks = list(stream_chat(embedded, msgs, ParamsBox(SamplingParams(temperature=0, max_new_tokens=8))))
    assert len(chunks) == 1
    assert chunks[0].finish_reason == "error" and chunks[0].error.kind == "prompt_too_long"
    assert chunks[0].n_generated == 0


def test_stream_reports_dropped_messages(embedded, monkeypatch):
    from dataclasses import replace

    small = replace(embedded.info, context_length=300)
    monkeypatch.setattr(embedded, "info", small)
    msgs = conversation(6)
    chunks = list(stream_chat(embedded, msgs, ParamsBox(SamplingParams(temperature=0, max_new_tokens=8))))
    assert chunks[-1].finish_reason in ("stop", "length")
    assert chunks[-1].dropped_messages and chunks[-1].dropped_messages[0] == 1
