"""Context fitting by whole rounds (issue 5, issue 7 case 8)."""

from __future__ import annotations

import pytest

from glmdesk.core.errors import GlmdeskError
from glmdesk.core.messages import ChatMessage
from glmdesk.core.settings import ParamsBox, SamplingParams
from glmdesk.engine.decode.context import fit_prompt
from glmdesk.engine.decode.generate import stream_chat


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


def test_a_long_system_prompt_is_named_not_the_message(embedded):
    msgs = [ChatMessage("system", "Always answer politely. " * 60), ChatMessage("user", "Hi")]
    with pytest.raises(GlmdeskError) as err:
        fit_prompt(embedded.prompt_format, msgs, 100)
    assert err.value.kind == "system_prompt_too_long" and "system prompt" in err.value.message
    assert err.value.params["tokens"] > 100 and err.value.params["limit"] == 100


def test_a_long_message_counts_its_own_tokens_after_the_system_prompt(embedded):
    fmt = embedded.prompt_format
    system = ChatMessage("system", "You are terse. " * 10)
    msgs = [system, ChatMessage("user", "long " * 500)]
    with pytest.raises(GlmdeskError) as err:
        fit_prompt(fmt, msgs, 200)
    system_only = len(fmt.encode([system, ChatMessage("user", "")]))
    assert err.value.kind == "prompt_too_long"
    assert err.value.params["limit"] == 200 - system_only
    assert err.value.params["tokens"] == len(fmt.encode(msgs)) - system_only


def test_a_prompt_that_fits_with_a_shorter_reply_is_taken(embedded):
    msgs = conversation(3)
    newest_only = len(embedded.prompt_format.encode([msgs[0], msgs[-1]]))
    fitted = fit_prompt(embedded.prompt_format, msgs, newest_only - 1, fallback_tokens=newest_only)
    assert fitted.kept == (0, len(msgs) - 1) and len(fitted.ids) == newest_only


@pytest.mark.slow
def test_max_new_tokens_over_half_the_context_caps_the_reply_and_says_so(embedded, monkeypatch):
    from dataclasses import replace

    monkeypatch.setattr(embedded, "info", replace(embedded.info, context_length=200))
    msgs = [ChatMessage("user", "Count: " + "one two three " * 30)]  # over 100 tokens: half refused it
    prompt = len(embedded.prompt_format.encode(msgs))
    assert 100 < prompt < 180
    params = ParamsBox(SamplingParams(temperature=0, max_new_tokens=150))
    chunks = list(stream_chat(embedded, msgs, params))
    assert chunks[-1].finish_reason in ("stop", "length") and chunks[-1].error is None
    assert chunks[0].reply_limit == 200 - prompt  # what the reply can use, reported
    assert chunks[-1].n_generated <= 200 - prompt
    from glmdesk.core.settings import CacheSettings

    windowed = CacheSettings("sliding_window", window=64, sinks=4)
    first = next(
        iter(
            stream_chat(embedded, msgs, ParamsBox(SamplingParams(temperature=0, max_new_tokens=3)), windowed)
        )
    )
    assert first.reply_limit == 3
