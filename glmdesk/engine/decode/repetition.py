"""Stop an answer stuck repeating itself (finish reason ``repetition``).

A small model asked in a language it barely knows may write the same emoji or word
hundreds of times until max new tokens runs out ("🌟🌟🌟..." for 512 tokens). The rule,
checked after every generated token by the decode loop that every local engine shares
(:func:`glmdesk.engine.decode.decoding.generate_tokens`):

    the answer's last :data:`WINDOW` (128) tokens are one unit of 1 to :data:`MAX_PERIOD`
    (8) tokens repeated, i.e. ``ids[i] == ids[i - p]`` for every one of the last
    ``WINDOW - p`` positions, for some period ``p <= 8``.

So a single token must repeat 128 times, a two-token emoji 64 times, an eight-token
phrase 16 times in a row, with nothing else between. Text never needs that: a Markdown
rule or a table's ``|---|`` row is a few tokens, a long number or a run of spaces is
tokenized into a few multi-character tokens. Sampling penalties (repetition penalty,
DRY) make such runs less likely; this rule ends the ones that happen anyway, before
they use up the answer's budget. The cost is ``MAX_PERIOD`` integer comparisons per token.
"""

from __future__ import annotations

#: Tokens of the same repeated unit that end an answer, in tokens.
WINDOW = 128
#: The longest repeated unit looked for, in tokens.
MAX_PERIOD = 8


class RepetitionGuard:
    """Watches one answer's generated ids for the rule above.

    Args:
        window: :data:`WINDOW` (tests may use a smaller one), in tokens, ``> max_period``.
        max_period: :data:`MAX_PERIOD`, in tokens, ``>= 1``.

    Raises:
        ValueError: For a window not longer than the longest period.
    """

    def __init__(self, window: int = WINDOW, max_period: int = MAX_PERIOD) -> None:
        if max_period < 1 or window <= max_period:
            raise ValueError(f"window ({window}) must exceed max_period ({max_period}) >= 1")
        self.window, self.max_period = window, max_period
        self._recent: list[int] = []  # the last max_period ids, oldest first
        self._runs = [0] * (max_period + 1)  # runs[p]: trailing positions with ids[i] == ids[i-p]

    def push(self, token: int) -> bool:
        """Add the next generated id; True when the answer now breaks the rule."""
        recent, runs = self._recent, self._runs
        stuck = False
        for p in range(1, self.max_period + 1):
            if len(recent) >= p and recent[-p] == token:
                runs[p] += 1
                stuck = stuck or runs[p] >= self.window - p
            else:
                runs[p] = 0
        recent.append(token)
        if len(recent) > self.max_period:
            del recent[0]
        return stuck
