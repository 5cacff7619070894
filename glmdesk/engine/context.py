"""Fit a conversation into the context window by dropping whole old rounds."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from glmdesk.core.errors import GlmdeskError
from glmdesk.core.messages import ChatMessage
from glmdesk.engine.prompt import PromptFormat


@dataclass(frozen=True)
class FittedPrompt:
    """The prompt that will be run.

    Attributes:
        ids: Prompt token ids, shape ``[n_prompt]``.
        kept: Indices of the request's messages that are in the prompt.
        dropped: Indices of messages left out (oldest whole rounds first).
    """

    ids: list[int]
    kept: tuple[int, ...]
    dropped: tuple[int, ...]


def _rounds(messages: Sequence[ChatMessage]) -> tuple[list[int], list[list[int]]]:
    """Split message indices into system messages and rounds.

    A round is a user turn and everything after it until the next user turn: the
    answers, tool calls and their observations, so a call and its result are kept or
    dropped together.
    """
    system: list[int] = []
    rounds: list[list[int]] = []
    for i, message in enumerate(messages):
        if message.role == "system":
            system.append(i)
        elif message.role == "user" or not rounds:
            rounds.append([i])
        else:
            rounds[-1].append(i)
    return system, rounds


def fit_prompt(fmt: PromptFormat, messages: Sequence[ChatMessage], max_prompt_tokens: int) -> FittedPrompt:
    """Encode ``messages``, dropping the oldest whole rounds until it fits.

    The system prompt and the newest round (the user message being answered) are
    never dropped.

    Args:
        fmt: The model's prompt format.
        messages: System messages, then turns ending with a user message, or with an
            observation (the answer continues after a tool's result).
        max_prompt_tokens: Context length minus the answer budget, in tokens.

    Raises:
        GlmdeskError: ``prompt_too_long`` when the system prompt and the newest
            message alone exceed ``max_prompt_tokens``; nothing should be generated.
        ValueError: when ``messages`` does not end with a user message or an observation.
    """
    if not messages or messages[-1].role not in ("user", "observation"):
        raise ValueError("the conversation must end with a user message or an observation")
    system, rounds = _rounds(messages)
    first = 0
    while True:
        kept = sorted(system + [i for r in rounds[first:] for i in r])
        ids = fmt.encode([messages[i] for i in kept])
        if len(ids) <= max_prompt_tokens:
            dropped = tuple(i for r in rounds[:first] for i in r)
            return FittedPrompt(ids, tuple(kept), dropped)
        if first == len(rounds) - 1:
            raise GlmdeskError(
                "prompt_too_long",
                f"The message is too long for this model: it needs {len(ids)} tokens and at most "
                f"{max_prompt_tokens} fit (context window minus max new tokens). Shorten it or lower "
                "max new tokens.",
                tokens=len(ids),
                limit=max_prompt_tokens,
            )
        # Drop whole rounds; skip ahead quickly when far over the limit.
        first += 1
