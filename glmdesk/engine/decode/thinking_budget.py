"""A thinking budget: a reasoning model thinks at most N tokens, then its close marker
(``</think>``) is written for it and it answers (what llama.cpp's ``--reasoning-budget``
and vLLM's thinking budgets do)."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from glmdesk.engine.formats.prompt import PromptFormat


class ThinkingBudget:
    """Logits constraint for one answer whose reply starts inside a reasoning block.

    Called once per generated token (after the others in ``Sampler.extra``); once
    ``budget`` tokens were thought without the close marker, it forces the marker's ids
    one by one, then lets the model answer. A marker the model writes itself ends it.

    Args:
        close_ids: Token ids of the close marker (``</think>``), in order, at least one.
        budget: Tokens of thinking allowed, in tokens, 1 or more.

    Raises:
        ValueError: for no close ids or a budget below 1.
    """

    def __init__(self, close_ids: Sequence[int], budget: int) -> None:
        if not close_ids or budget < 1:
            raise ValueError("a thinking budget needs the close marker's ids and at least one token")
        self.close_ids = tuple(int(i) for i in close_ids)
        self.budget = budget
        self.calls = 0  # tokens chosen so far in this answer
        self.forced = 0  # close ids forced so far
        self.done = False

    def __call__(self, ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        """``ids`` ``[1, n]`` seen so far, ``scores`` ``[1, vocab]`` -> scores."""
        n = len(self.close_ids)
        if not self.done and self.forced == 0 and self.calls >= n:
            if tuple(ids[0, -n:].tolist()) == self.close_ids:  # the model closed it itself
                self.done = True
        self.calls += 1
        if self.done or self.calls <= self.budget:
            return scores
        forced = torch.full_like(scores, float("-inf"))
        forced[:, self.close_ids[self.forced]] = 0.0
        self.forced += 1
        self.done = self.forced == n
        return forced


def thinking_budget(prompt_format: PromptFormat, budget: int) -> ThinkingBudget | None:
    """The budget for one answer, or ``None``: off, or a format whose reply does not
    start inside a reasoning block (its ``opens_reasoning``) or has no close ids."""
    close_ids = prompt_format.reasoning_close_ids
    if budget <= 0 or not prompt_format.opens_reasoning or not close_ids:
        return None
    return ThinkingBudget(close_ids, budget)
