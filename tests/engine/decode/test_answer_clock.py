"""AnswerClock: TTFT and tokens/s as every backend reports them (a stepped clock)."""

from glmdesk.engine.decode.answer_clock import AnswerClock


class Stepped:
    """A clock the test moves by hand, in s."""

    def __init__(self) -> None:
        self.now = 10.0

    def __call__(self) -> float:
        return self.now


def test_ttft_is_request_to_first_token_and_speed_counts_after_it():
    now = Stepped()
    clock = AnswerClock(now)
    assert clock.tokens_per_s(0) == 0.0
    now.now = 10.5
    clock.first_token()
    now.now = 11.0
    clock.first_token()  # a second call keeps the first time
    assert clock.ttft_s == 0.5
    assert clock.tokens_per_s(1) == 0.0  # one token: no speed yet
    now.now = 12.5
    assert clock.tokens_per_s(5) == 2.0  # 4 tokens after the first, in 2 s


def test_the_answer_after_reasoning_is_timed_once():
    now = Stepped()
    clock = AnswerClock(now)
    assert clock.answer_ttft_s == 0.0
    now.now = 13.0
    clock.answer_began()
    now.now = 14.0
    clock.answer_began()
    assert clock.answer_ttft_s == 3.0
