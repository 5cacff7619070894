"""An answer stuck repeating one short unit ends with finish reason ``repetition``, in the
decode loop every local engine shares; text that merely repeats a little goes on."""

from __future__ import annotations

import pytest
import torch

from glmdesk.core.messages import ChatMessage
from glmdesk.core.settings import ParamsBox, SamplingParams
from glmdesk.engine.decode.generate import stream_chat
from glmdesk.engine.decode.repetition import MAX_PERIOD, WINDOW, RepetitionGuard


def first_stuck(ids: list[int], guard: RepetitionGuard | None = None) -> int | None:
    """How many ids were pushed when the guard first fired, or None."""
    guard = guard or RepetitionGuard()
    for n, token in enumerate(ids, 1):
        if guard.push(token):
            return n
    return None


def test_the_rule_fires_once_the_last_window_is_one_repeated_unit() -> None:
    assert first_stuck([7] * 300) == WINDOW  # one token 128 times
    assert first_stuck([1, 2, 3] + [9, 8] * 100) == 3 + WINDOW  # a two-token emoji 64 times
    unit = list(range(100, 100 + MAX_PERIOD))
    assert first_stuck(unit * 20) == WINDOW  # an eight-token phrase 16 times
    assert first_stuck([7] * (WINDOW - 1) + [8] + [7] * (WINDOW - 1)) is None  # broken runs
    assert first_stuck(list(range(100, 109)) * 40) is None  # a nine-token unit is left alone
    assert first_stuck(list(range(1000))) is None
    with pytest.raises(ValueError):
        RepetitionGuard(window=8, max_period=8)


class Cycle:
    """Forces the answer to write ``unit`` over and over (a logits processor)."""

    def __init__(self, unit: list[int], prompt_len: int) -> None:
        self.unit, self.prompt_len = unit, prompt_len

    def __call__(self, ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        forced = torch.full_like(scores, float("-inf"))
        forced[:, self.unit[(ids.shape[1] - self.prompt_len) % len(self.unit)]] = 0.0
        return forced


def test_an_emoji_written_over_and_over_stops_with_repetition(embedded, monkeypatch) -> None:
    star = embedded.tokenizer.encode("🌟", add_special_tokens=False)
    assert 1 <= len(star) <= MAX_PERIOD
    prompt_len: list[int] = []
    messages = [ChatMessage("user", "你好，介绍一下你自己。")]

    class FirstCall(Cycle):
        def __call__(self, ids, scores):
            if not prompt_len:
                prompt_len.append(ids.shape[1])
            self.prompt_len = prompt_len[0]
            return super().__call__(ids, scores)

    monkeypatch.setattr(embedded, "logits_processors", lambda: (FirstCall(star, 0),))
    params = ParamsBox(SamplingParams(temperature=0.0, max_new_tokens=512))
    chunks = list(stream_chat(embedded, messages, params))
    last = chunks[-1]
    assert last.finish_reason == "repetition"
    assert WINDOW <= last.n_generated < WINDOW + len(star)  # stopped at once, not at 512
    assert "🌟🌟🌟" in "".join(c.text for c in chunks)
