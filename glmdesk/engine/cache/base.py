"""The cache-strategy interface, the shared forward, and KV size arithmetic.

A strategy owns one answer's KV cache and runs every forward that uses it, so the
decode loop never touches a transformers cache class (their names changed often
across transformers 4.4x-5.x; every use of them stays in this package).
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

from glmdesk.core.settings import CacheSettings
from glmdesk.engine.cache.layers import LINEAR_LAYER_TYPES, is_hybrid, layer_types
from glmdesk.engine.chunk import CacheStats
from glmdesk.engine.forecast import PREFILL_SCORE_BYTES
from glmdesk.engine.forecast_shape import indexer_width
from glmdesk.engine.forecast_shape import prefill_pair_bytes as pair_bytes

#: The smallest prefill chunk the score bound (``PREFILL_SCORE_BYTES``) may choose, in tokens.
MIN_PREFILL_CHUNK = 16


def prefill_pair_bytes(config, dtype: torch.dtype) -> int:
    """:func:`~glmdesk.engine.forecast_shape.prefill_pair_bytes` of a transformers config
    at ``dtype``: bytes per (query, key) pair of a prefill chunk, 0 without an indexer."""
    text = config.get_text_config(decoder=True) if hasattr(config, "get_text_config") else config
    return pair_bytes(text.to_dict(), torch.empty((), dtype=dtype).element_size())


if TYPE_CHECKING:
    from glmdesk.engine.decode.threads import ThreadTuner


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
    2 x 30 x 3 x 64 x 4 = 45 KiB per token. Multi-head latent attention
    (GLM-4.7-Flash's ``Glm4MoeLiteForCausalLM``; DeepSeek-V2, Liu et al. 2024, §2.1.2),
    whose attention hands the cache the compressed latent as its key and the rotary key
    as its value: ``layers x (kv_lora_rank + qk_rope_head_dim) x bytes``. Only layers
    that keep keys count (GLM-5.3-Flash's linear-attention layers keep a fixed-size
    state), each with its DSA indexer key (``index_head_dim``) where it has one (GLM-5).

    Args:
        config: The model's config.
        dtype: Element type of the cached keys and values.

    Returns:
        Bytes per token.
    """
    element = torch.empty((), dtype=dtype).element_size()
    text = config.get_text_config(decoder=True) if hasattr(config, "get_text_config") else config
    kinds = layer_types(config)
    growing = sum(kind not in LINEAR_LAYER_TYPES for kind in kinds)
    indexer = growing * indexer_width(vars(text)) if "indexed_attention" in kinds else 0
    latent = getattr(text, "kv_lora_rank", None)
    if latent:  # MLA: one latent of kv_lora_rank + the shared rotary key a token and layer
        return (growing * (int(latent) + int(text.qk_rope_head_dim)) + indexer) * element
    _layers, kv_heads, head_dim = kv_shape(config)
    return (2 * growing * kv_heads * head_dim + indexer) * element


def model_dtype(model) -> torch.dtype:
    """Dtype the model computes keys and values in (its first floating parameter)."""
    for parameter in model.parameters():
        if parameter.is_floating_point():
            return parameter.dtype
    return torch.float32


def tensor_bytes(*tensors: torch.Tensor | None) -> int:
    """Bytes held by the given tensors (``numel x element size``), ``None`` skipped."""
    return sum(t.numel() * t.element_size() for t in tensors if t is not None)


def buffer_bytes(*tensors: torch.Tensor | None) -> int:
    """Bytes of the storages behind the given KV buffers, ``None`` skipped: a bucket of
    the static step's slab (:mod:`glmdesk.engine.cache.static_pool`) holds its whole
    storage, which may be larger than the bucket. Equals :func:`tensor_bytes` for
    buffers allocated whole."""
    return sum(t.untyped_storage().nbytes() for t in tensors if t is not None)


def cache_bytes(cache) -> int:
    """Bytes a cache of our layers holds: each attention layer's key, value and DSA
    indexer-key buffers (:func:`buffer_bytes`), plus the fixed-size conv and recurrent
    states of linear-attention layers (GLM-5.3-Flash's KDA layers)."""
    size = 0
    for layer in cache.layers:
        if hasattr(layer, "recurrent_states"):
            states = [*layer.conv_states.values(), *layer.recurrent_states.values()]
            size += tensor_bytes(*states)
        else:
            size += buffer_bytes(layer.keys, layer.values, getattr(layer, "indexer_keys", None))
    return size


#: Attention kernels for a single-token decode step on a CUDA device: every SDPA
#: backend but cuDNN's. cuDNN's fused attention builds an execution plan for each new
#: key length, and a decode step's key length grows by one every token. Measured on an
#: H200 with torch 2.11, a ChatGLM3-6B-shaped model in bf16 (``benchmarks/gpu_decode.py
#: --cudnn``): 20 tokens/s with cuDNN chosen against 62 without, at 1K tokens (1.5 ms of
#: CPU per attention call in the profile). Prefill chunks keep every backend: there,
#: cuDNN's attention took a 128K-token prefill in 21 s against 37 s without it.
DECODE_ATTENTION_KERNELS = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]


def attention_kernels(device: torch.device, n_tokens: int):
    """The SDPA backends for a forward of ``n_tokens`` tokens on ``device``: a context
    manager that allows :data:`DECODE_ATTENTION_KERNELS` for one token on CUDA, and
    changes nothing otherwise (the CPU; prefill chunks)."""
    if device.type == "cuda" and n_tokens == 1:
        return sdpa_kernel(DECODE_ATTENTION_KERNELS)
    return contextlib.nullcontext()


class DecodeStep(Protocol):
    """A decode step for single tokens (the fused step, or the static one compiled or
    captured in CUDA graphs): :mod:`glmdesk.engine.decode.decode_step`."""

    def __call__(self, cache: Any, input_ids: torch.Tensor, position: int) -> torch.Tensor:
        """Append the token ``input_ids`` (``[1, 1]``) at rotary ``position`` to ``cache``;
        the next-token logits, ``[vocab]``, float32."""
        ...

    def accepts(self, cache: Any, n_tokens: int, attention_mask: torch.Tensor | None) -> bool:
        """Whether a forward of ``n_tokens`` with ``attention_mask`` can take the step."""
        ...


def run_model(
    model,
    cache,
    input_ids: torch.Tensor,
    start: int,
    attention_mask: torch.Tensor | None = None,
    step: DecodeStep | None = None,
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
    with attention_kernels(input_ids.device, n):
        out = model(
            input_ids=input_ids,
            attention_mask=attention_mask,
            position_ids=positions,
            cache=cache,
            use_cache=True,
            logits_to_keep=1,
        )
    return out.logits[0, -1].float()


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the longest common prefix of two id sequences, in tokens."""
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


class CacheStrategy(ABC):
    """Owns one conversation's KV cache and runs the forwards that use it.

    The decode loop calls :meth:`reuse` with the new prompt (a cache kept from the
    conversation's previous answer keeps the longest prefix it holds exactly),
    :meth:`prefill` once with the prompt ids after that prefix, then :meth:`step`
    once per generated token, :meth:`stats` whenever it reports, and :meth:`release`
    when the cache is dropped. Positions are explicit: token ``i`` of the sequence
    always gets rotary position ``i`` whatever the cache evicted (keys are stored
    after the rotary embedding), and they continue across answers.

    Args:
        model: A transformers causal LM in eval mode.
        settings: Strategy parameters.

    Attributes:
        tokens_seen: Positions processed so far (every answer of the conversation the
            cache was kept for), in tokens.
        ids: The token id processed at each position, ``len(ids) == tokens_seen``.
        tuner: Optional :class:`~glmdesk.engine.decode.threads.ThreadTuner` timing each decode step.
    """

    name = "base"
    #: The decode step for single tokens (set by ``make_cache_strategy``); ``None`` runs
    #: transformers' forward.
    decode_step: DecodeStep | None = None

    def __init__(self, model, settings: CacheSettings) -> None:
        self.model = model
        self.settings = settings
        self.tokens_seen = 0
        self.ids: list[int] = []
        self.tuner: ThreadTuner | None = None
        self._exact = True
        self.device = model.device
        #: Some layers keep a linear-attention state (GLM-5.3-Flash): it holds the whole
        #: sequence folded in and cannot be rewound to a shorter prefix.
        self.rewindable = not is_hybrid(model.config)
        self._pair_bytes = prefill_pair_bytes(model.config, getattr(model, "dtype", torch.float32))
        #: The bound on one prefill chunk's sparse-attention scores, in bytes.
        self.score_bytes = PREFILL_SCORE_BYTES

    @torch.inference_mode()
    def prefill(self, input_ids: torch.Tensor) -> torch.Tensor:
        """Run prompt ids through the model in chunks of ``settings.prefill_chunk``.

        The ids continue the held sequence at position :attr:`tokens_seen` (0 for a
        fresh cache; after :meth:`reuse`, the prompt's first position not reused).
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
        if self.tuner is not None:
            self.tuner.apply()
        start, n = 0, input_ids.shape[1]
        while True:
            piece = input_ids[:, start : start + self.prefill_chunk_now()]
            logits = self._advance(piece, piece[0].tolist())
            start += piece.shape[1]
            if start >= n:
                return logits

    def prefill_chunk_now(self) -> int:
        """The next prefill chunk, in tokens: ``settings.prefill_chunk``, or fewer (not
        under :data:`MIN_PREFILL_CHUNK`) where a sparse-attention model's scores over the
        keys visible now would pass :data:`PREFILL_SCORE_BYTES`."""
        chunk = self.settings.prefill_chunk
        if self._pair_bytes:
            keys = self._visible_keys() + chunk
            chunk = max(MIN_PREFILL_CHUNK, min(chunk, self.score_bytes // (self._pair_bytes * keys)))
        return chunk

    def _visible_keys(self) -> int:
        """Keys the next chunk's queries attend to besides their own, in tokens."""
        return self.tokens_seen

    @torch.inference_mode()
    def step(self, token_id: int) -> torch.Tensor:
        """Append one token and return the next-token logits, shape ``[vocab]``, float32."""
        ids = torch.tensor([[int(token_id)]], device=self.device)
        if self.tuner is None:
            return self._advance(ids, [int(token_id)])
        with self.tuner.timed_step():
            return self._advance(ids, [int(token_id)])

    def _advance(self, input_ids: torch.Tensor, ids: list[int]) -> torch.Tensor:
        self._exact = False  # a forward that raises leaves the cache in an unknown state
        logits = self._forward(input_ids, self.tokens_seen)
        self.tokens_seen += input_ids.shape[1]
        self.ids.extend(ids)
        self._exact = True
        return logits

    def reuse(self, prompt_ids: Sequence[int]) -> int:
        """Keep the longest prefix of ``prompt_ids`` the cache holds exactly; drop the rest.

        The common prefix of :attr:`ids` and ``prompt_ids`` (ids compared, not text)
        is capped at ``len(prompt_ids) - 1`` (the last prompt token is always run: its
        logits start the answer) and at what the strategy can keep exactly
        (:meth:`_keepable`); a cache left unfinished by an error keeps nothing.

        Args:
            prompt_ids: The new prompt, shape ``[n_prompt]``.

        Returns:
            Tokens reused; the caller prefills ``prompt_ids[returned:]`` next.
        """
        common = min(common_prefix(self.ids, prompt_ids), len(prompt_ids) - 1)
        keep = self._keepable(max(common, 0)) if self._exact else 0
        if keep < self.tokens_seen and not self.rewindable:
            keep = 0
        if keep == 0:
            if self.tokens_seen or self.cache is None:
                self.cache = self._fresh_cache()
        elif keep < self.tokens_seen:
            self._truncate(keep)
        self.tokens_seen = keep
        del self.ids[keep:]
        self._exact = True
        return keep

    def _keepable(self, common: int) -> int:
        """Most of the first ``common`` positions that can be kept exactly (0: none).
        Default: all of them (the cache holds every position it processed)."""
        return common

    @abstractmethod
    def _truncate(self, n: int) -> None:
        """Keep positions ``0..n-1`` (``0 < n < tokens_seen``, :meth:`_keepable` allowed it)."""

    @abstractmethod
    def _fresh_cache(self):
        """A new, empty transformers ``Cache`` for this strategy."""

    @abstractmethod
    def _forward(self, input_ids: torch.Tensor, start: int) -> torch.Tensor:
        """Run ``input_ids`` ([1, n]) at positions ``start..start+n-1``; last logits."""

    @abstractmethod
    def stats(self) -> CacheStats:
        """Current accounting: bytes held, tokens held and seen, state."""

    def release(self) -> None:
        """Drop every tensor the cache holds (a later :meth:`reuse` starts afresh)."""
        self.cache = None
        self.ids = []
        self._exact = False
