"""The cache-strategy interface, the shared forward, and KV size arithmetic.

A strategy owns one answer's KV cache and runs every forward that uses it, so the
decode loop never touches a transformers cache class (their names changed often
across transformers 4.4x-5.x; every use of them stays in this package).
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import torch

from glmdesk.core.settings import CacheSettings
from glmdesk.engine.chunk import CacheStats


def kv_shape(config) -> tuple[int, int, int]:
    """Layers, KV heads and head dimension of a decoder config.

    Args:
        config: A transformers ``PreTrainedConfig`` (``LlamaConfig``, ``GlmConfig``...).

    Returns:
        ``(layers, kv_heads, head_dim)``.
    """
    text = config.get_text_config(decoder=True) if hasattr(config, "get_text_config") else config
    layers = int(text.num_hidden_layers)
    heads = int(text.num_attention_heads)
    kv_heads = int(getattr(text, "num_key_value_heads", None) or heads)
    head_dim = int(getattr(text, "head_dim", None) or text.hidden_size // heads)
    return layers, kv_heads, head_dim


def kv_bytes_per_token(config, dtype: torch.dtype) -> int:
    """Bytes of keys and values one token adds to a full cache.

    ``2 x layers x kv heads x head dim x bytes per element``; e.g. ChatGLM3-6B in
    fp16: 2 x 28 x 2 x 128 x 2 = 28 KiB per token; SmolLM2-135M in fp32:
    2 x 30 x 3 x 64 x 4 = 45 KiB per token.

    Args:
        config: The model's config.
        dtype: Element type of the cached keys and values.

    Returns:
        Bytes per token.
    """
    layers, kv_heads, head_dim = kv_shape(config)
    element = torch.empty((), dtype=dtype).element_size()
    return 2 * layers * kv_heads * head_dim * element


def model_dtype(model) -> torch.dtype:
    """Dtype the model computes keys and values in (its first floating parameter)."""
    for parameter in model.parameters():
        if parameter.is_floating_point():
            return parameter.dtype
    return torch.float32


def tensor_bytes(*tensors: torch.Tensor | None) -> int:
    """Bytes held by the given tensors (``numel x element size``), ``None`` skipped."""
    return sum(t.numel() * t.element_size() for t in tensors if t is not None)


def run_model(
    model,
    cache,
    input_ids: torch.Tensor,
    start: int,
    attention_mask: torch.Tensor | None = None,
    step=None,
) -> torch.Tensor:
    """One forward of ``input_ids`` at explicit positions ``start .. start+n-1``.

    ``logits_to_keep=1`` skips the vocabulary projection for every other position
    (a 2K-token prefill of a 49K-vocabulary model would otherwise make 400 MB of
    logits). A single token without an explicit mask goes through ``step`` (the
    decode step the load chose: fused or compiled) when one is given.

    Args:
        model: A transformers causal LM.
        cache: The transformers ``Cache`` the strategy owns.
        input_ids: Token ids, shape ``[1, n]``, on the model's device.
        start: Rotary position of the first token, in tokens.
        attention_mask: ``None`` (the cache's mask sizes give a causal mask) or a
            4D mask ``[1, 1, n, kv_length]`` matching the keys the cache returns.
        step: ``step(cache, ids [1, 1], position) -> logits`` with ``step.accepts(cache,
            n, mask)``, or ``None`` for transformers' forward on every token.

    Returns:
        Logits of the last position, shape ``[vocab]``, float32.
    """
    n = input_ids.shape[1]
    if step is not None and step.accepts(cache, n, attention_mask):
        return step(cache, input_ids, start)
    positions = torch.arange(start, start + n, device=input_ids.device).unsqueeze(0)
    out = model(
        input_ids=input_ids,
        attention_mask=attention_mask,
        position_ids=positions,
        cache=cache,
        use_cache=True,
        logits_to_keep=1,
    )
    return out.logits[0, -1].float()


class CacheStrategy(ABC):
    """Owns one answer's KV cache and runs the forwards that use it.

    The decode loop calls :meth:`prefill` once with the prompt, then :meth:`step`
    once per generated token, :meth:`stats` whenever it reports, and
    :meth:`release` at the end. Positions are explicit: token ``i`` of the
    sequence always gets rotary position ``i`` whatever the cache evicted (keys are
    stored after the rotary embedding).

    Args:
        model: A transformers causal LM in eval mode.
        settings: Strategy parameters.

    Attributes:
        tokens_seen: Positions processed so far, prompt included, in tokens.
    """

    name = "base"
    #: The decode step for single tokens (set by ``make_cache_strategy``); ``None`` runs
    #: transformers' forward.
    decode_step = None

    def __init__(self, model, settings: CacheSettings) -> None:
        self.model = model
        self.settings = settings
        self.tokens_seen = 0
        self.device = model.device

    @torch.inference_mode()
    def prefill(self, input_ids: torch.Tensor) -> torch.Tensor:
        """Run the prompt through the model in chunks of ``settings.prefill_chunk``.

        Chunking bounds activation memory: one chunk's attention scores are
        ``heads x chunk x (held + chunk)``, whatever the prompt length.

        Args:
            input_ids: Prompt ids, shape ``[1, n_prompt]``, ``n_prompt >= 1``.

        Returns:
            Logits of the last prompt position, shape ``[vocab]``, float32.

        Raises:
            ValueError: for an empty prompt or a batch other than 1.
        """
        if input_ids.dim() != 2 or input_ids.shape[0] != 1 or input_ids.shape[1] < 1:
            raise ValueError(f"prefill takes ids of shape [1, n >= 1], not {tuple(input_ids.shape)}")
        input_ids = input_ids.to(self.device)
        chunk = self.settings.prefill_chunk
        logits = None
        for start in range(0, input_ids.shape[1], chunk):
            logits = self._advance(input_ids[:, start : start + chunk])
        return logits

    @torch.inference_mode()
    def step(self, token_id: int) -> torch.Tensor:
        """Append one token and return the next-token logits, shape ``[vocab]``, float32."""
        return self._advance(torch.tensor([[int(token_id)]], device=self.device))

    def _advance(self, input_ids: torch.Tensor) -> torch.Tensor:
        logits = self._forward(input_ids, self.tokens_seen)
        self.tokens_seen += input_ids.shape[1]
        return logits

    @abstractmethod
    def _forward(self, input_ids: torch.Tensor, start: int) -> torch.Tensor:
        """Run ``input_ids`` ([1, n]) at positions ``start..start+n-1``; last logits."""

    @abstractmethod
    def stats(self) -> CacheStats:
        """Current accounting: bytes held, tokens held and seen, state."""

    def release(self) -> None:
        """Drop every tensor the cache holds (after an answer or an OOM)."""
        self.cache = None
