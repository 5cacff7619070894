"""Pick the next token from logits with transformers' own processors and warpers."""

from __future__ import annotations

import torch
from transformers import (
    LogitsProcessorList,
    MinPLogitsWarper,
    RepetitionPenaltyLogitsProcessor,
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
)

from glmdesk.core.settings import SamplingParams


def build_processors(params: SamplingParams) -> LogitsProcessorList:
    """The processor chain for ``params``, in ``generate``'s order.

    Repetition penalty (CTRL, Keskar et al. 2019) first, then temperature, top-k,
    top-p (nucleus, Holtzman et al. 2019) and min-p. Greedy decoding (temperature 0)
    keeps only the repetition penalty. Top-p 0 keeps exactly the most likely token
    (``min_tokens_to_keep=1``), never every token.
    """
    chain = LogitsProcessorList()
    if params.repetition_penalty != 1.0:
        chain.append(RepetitionPenaltyLogitsProcessor(params.repetition_penalty))
    if params.greedy:
        return chain
    if params.temperature != 1.0:
        chain.append(TemperatureLogitsWarper(params.temperature))
    if params.top_k > 0:
        chain.append(TopKLogitsWarper(int(params.top_k), min_tokens_to_keep=1))
    if params.top_p < 1.0:
        chain.append(TopPLogitsWarper(params.top_p, min_tokens_to_keep=1))
    if params.min_p > 0.0:
        chain.append(MinPLogitsWarper(params.min_p, min_tokens_to_keep=1))
    return chain


def next_token(
    logits: torch.Tensor,
    seen_ids: torch.Tensor,
    params: SamplingParams,
    generator: torch.Generator,
) -> int:
    """Choose one token id.

    Args:
        logits: Next-token logits, shape ``[vocab]``, float32.
        seen_ids: Prompt and generated ids so far, shape ``[1, n]`` (for the
            repetition penalty).
        params: The parameters read for this step.
        generator: Random generator seeded per answer (CPU).

    Returns:
        The chosen id.
    """
    # transformers annotates the ids as torch.LongTensor, a class no int64 tensor is typed as.
    scores = build_processors(params)(seen_ids, logits.unsqueeze(0).float())  # pyright: ignore[reportArgumentType]
    if params.greedy:
        return int(torch.argmax(scores, dim=-1))
    probs = torch.softmax(scores, dim=-1).cpu()
    return int(torch.multinomial(probs, 1, generator=generator))
