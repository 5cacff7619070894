"""Fit a conversation into the context window by dropping whole old rounds, and the
answer's token budgets (history kept, room left for the reply)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from glmdesk.core.errors import GlmdeskError
from glmdesk.core.messages import ChatMessage
from glmdesk.core.settings import CacheSettings, SamplingParams
from glmdesk.engine.formats.prompt import PromptFormat

#: The shortest reply a prompt must leave room for, in tokens (fewer if max new tokens is lower).
MIN_REPLY_TOKENS = 16


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


def _too_long(fmt: PromptFormat, messages: Sequence[ChatMessage], system: list[int], ids, limit: int):
    """The error for a prompt whose system prompt and newest round exceed ``limit``: it names
    which part does not fit (the system prompt alone, or the message after it)."""
    system_ids = fmt.encode([messages[i] for i in system] + [ChatMessage("user", "")])
    if system and len(system_ids) > limit:
        return GlmdeskError(
            "system_prompt_too_long",
            f"The system prompt is too long for this model: it needs {len(system_ids)} tokens and "
            f"at most {limit} fit (context window minus room for a reply). Shorten the system prompt.",
            tokens=len(system_ids),
            limit=limit,
        )
    room = limit - len(system_ids) if system else limit
    own = len(ids) - len(system_ids) if system else len(ids)
    return GlmdeskError(
        "prompt_too_long",
        f"Your message is too long for this model: it needs {own} tokens and at most {room} fit "
        "(context window minus the system prompt and room for a reply). Shorten it or send it in parts.",
        tokens=own,
        limit=room,
    )


def fit_prompt(
    fmt: PromptFormat,
    messages: Sequence[ChatMessage],
    max_prompt_tokens: int,
    fallback_tokens: int | None = None,
) -> FittedPrompt:
    """Encode ``messages``, dropping the oldest whole rounds until it fits.

    The system prompt and the newest round (the user message being answered) are
    never dropped.

    Args:
        fmt: The model's prompt format.
        messages: System messages, then turns ending with a user message, with an
            observation (the answer continues after a tool's result), or with an
            assistant message (Continue: the prompt ends with its text, the turn left
            open; it stays in the newest round with the question it answers).
        max_prompt_tokens: Context length minus the answer budget, in tokens: older
            rounds are dropped until the prompt fits this.
        fallback_tokens: A larger limit (context length minus a minimal reply), in tokens,
            for when the system prompt and the newest round alone exceed
            ``max_prompt_tokens``: the prompt is then taken if it fits this, and the
            reply gets what is left. ``None``: no fallback.

    Raises:
        GlmdeskError: ``system_prompt_too_long`` when the system prompt alone exceeds
            the (fallback) limit, ``prompt_too_long`` when the newest message does;
            its ``tokens`` and ``limit`` are the message's own tokens and the room left
            for it. Nothing should be generated.
        ValueError: when ``messages`` is empty or ends with a system message.
    """
    if not messages or messages[-1].role not in ("user", "observation", "assistant"):
        raise ValueError("the conversation must end with a user message, an observation or an answer")
    system, rounds = _rounds(messages)
    first = 0
    while True:
        kept = sorted(system + [i for r in rounds[first:] for i in r])
        ids = fmt.encode([messages[i] for i in kept])
        if len(ids) <= max_prompt_tokens:
            dropped = tuple(i for r in rounds[:first] for i in r)
            return FittedPrompt(ids, tuple(kept), dropped)
        if first == len(rounds) - 1:
            dropped = tuple(i for r in rounds[:first] for i in r)
            limit = max(max_prompt_tokens, fallback_tokens or 0)
            if len(ids) <= limit:
                return FittedPrompt(ids, tuple(kept), dropped)
            raise _too_long(fmt, messages, system, ids, limit)
        first += 1


def answer_budget(params: SamplingParams, context_length: int) -> int:
    """Tokens kept free for the answer when choosing which older rounds to keep:
    ``max_new_tokens``, but never more than half the context window, in tokens.

    This only decides how much history is kept. A newest message that does not fit
    with this budget is still answered if it fits with :func:`min_reply_tokens`; the
    reply then gets what is left (:func:`reply_limit`).
    """
    return min(params.max_new_tokens, context_length // 2)


def min_reply_tokens(params: SamplingParams) -> int:
    """The room a prompt must leave for the reply, in tokens: :data:`MIN_REPLY_TOKENS`
    or ``max_new_tokens`` if that is lower."""
    return max(1, min(params.max_new_tokens, MIN_REPLY_TOKENS))


def reply_limit(params: SamplingParams, context_length: int, prompt_tokens: int, cache: CacheSettings) -> int:
    """Tokens the reply can actually use: ``max_new_tokens``, capped by the room left in the
    context window after the prompt when the KV cache is full (unbounded), in tokens.
    Window strategies evict old positions, so they are not capped."""
    if cache.strategy != "full":
        return params.max_new_tokens
    return max(0, min(params.max_new_tokens, context_length - prompt_tokens))
