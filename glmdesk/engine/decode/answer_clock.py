"""One answer's clock: time to first token and decode speed, as every backend reports them.

The local decode loop (:mod:`glmdesk.engine.decode.generate`, transformers and llama.cpp) and
the remote backend (:mod:`glmdesk.engine.backends.remote.stream`) time their answers
with it, so that ``GenerationChunk.ttft_s`` and ``tokens_per_s`` mean the same thing
whichever engine wrote the answer.
"""

from __future__ import annotations

import time
from collections.abc import Callable


class AnswerClock:
    """Times one answer from the request on.

    ``ttft_s`` is the time from the clock's start to the first token, in s.
    ``tokens_per_s`` counts the tokens after the first one over the time since it (the
    prompt's prefill is in TTFT, not in the speed), as llama.cpp's and mlx-lm's
    reports do. ``answer_ttft_s`` is the time to the first answer part after a
    reasoning block, in s (0 until then, and for an answer without reasoning).

    Args:
        clock: Seconds as a float (default :func:`time.perf_counter`).
    """

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self.clock = clock
        self.start = clock()
        self.first_at = 0.0
        self.ttft_s = 0.0
        self.answer_ttft_s = 0.0

    def first_token(self) -> None:
        """Note that the first token arrived (later calls change nothing)."""
        if not self.first_at:
            self.first_at = self.clock()
            self.ttft_s = self.first_at - self.start

    def answer_began(self) -> None:
        """Note that the answer after a reasoning block began (later calls change nothing)."""
        if not self.answer_ttft_s:
            self.answer_ttft_s = self.clock() - self.start

    def tokens_per_s(self, n_generated: int) -> float:
        """Decode speed after the first token, in tokens/s; 0 before a second token.

        Args:
            n_generated: Tokens generated so far, the first one included, in tokens.
        """
        if n_generated <= 1 or not self.first_at:
            return 0.0
        return (n_generated - 1) / max(self.clock() - self.first_at, 1e-9)
