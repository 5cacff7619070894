"""The model a transformers load hands to the decoder: weights, tokenizer, prompt format,
info, the decode step and the kept KV caches (:class:`LoadedModel`).

:func:`glmdesk.engine.backends.transformers.loader.load_model` builds one; the vision loader's
:class:`glmdesk.engine.backends.transformers.vision.VisionLoadedModel` extends it.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import torch

from glmdesk.core.images import ImageSizing
from glmdesk.core.settings import CacheSettings
from glmdesk.engine.cache import kv_budget_bytes
from glmdesk.engine.cache.base import DecodeStep
from glmdesk.engine.decode.kv_pool import KVPool
from glmdesk.engine.decode.threads import ThreadTuner
from glmdesk.engine.formats.prompt import PromptFormat
from glmdesk.engine.info import ModelInfo


class TextTokenizer(Protocol):
    """What a loaded model uses of its transformers tokenizer (``PreTrainedTokenizerBase``)."""

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` (the tokenizer's special tokens added as it adds them)."""
        ...

    def decode(self, token_ids: Sequence[int], skip_special_tokens: bool = False) -> str:
        """Text of ``token_ids``."""
        ...


@dataclass
class LoadedModel:
    """A model ready for :func:`glmdesk.engine.decode.generate.stream_chat`.

    Attributes:
        model: The transformers causal LM, in eval mode.
        tokenizer: Its tokenizer (transformers or :class:`ChatGLMTokenizer`).
        prompt_format: How conversations become ids.
        info: What was loaded.
        step: The decode step single tokens go through (fused or compiled), or ``None``
            for transformers' forward; handed to every KV-cache strategy.
        lock: Held for the whole answer (one answer at a time per model).
        kv_pool: The conversations' kept KV caches (cleared by :meth:`close`); its
            ``total_bytes`` counts the static step's idle slabs too (:meth:`idle_kv_bytes`).
        tuner: Adapts the CPU thread count to measured decode steps (``None`` when
            the threads setting fixes the count, or on a GPU).
        vision: Whether user messages' images reach the model (class attribute; True for
            :class:`glmdesk.engine.backends.transformers.vision.VisionLoadedModel`).
    """

    vision = False

    model: object
    tokenizer: TextTokenizer
    prompt_format: PromptFormat
    info: ModelInfo
    step: DecodeStep | None = None
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    kv_pool: KVPool[CacheSettings] = field(init=False, repr=False)
    tuner: ThreadTuner | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.kv_pool = KVPool(self._pool_budget, spare=self.idle_kv_bytes)

    def idle_kv_bytes(self) -> int:
        """Bytes of the static decode step's KV slabs that no cache leases (kept for the
        next answer, :mod:`glmdesk.engine.cache.static_pool`); 0 for another step."""
        pool = getattr(self.step, "pool", None)
        return 0 if pool is None else pool.idle_bytes()

    def _pool_budget(self, settings: CacheSettings, held: int) -> int:
        """The kept caches' budget: the dynamic strategy's (free GPU memory read now
        does not count what the pool and the idle static slabs hold already), in bytes."""
        device = torch.device(self.device)
        budget = kv_budget_bytes(settings, device)
        if settings.budget_mib is None and device.type == "cuda":
            budget += held + self.idle_kv_bytes()
        return budget

    @property
    def context_length(self) -> int:
        """The context window, in tokens."""
        return self.info.context_length

    @property
    def device(self) -> str:
        """``cpu`` or ``cuda:N``."""
        return self.info.device

    def decode(self, ids) -> str:
        """Decode ids to text, skipping special tokens but writing the format's markers
        (``marker_ids``: GLM-4.5's think and tool-call tags, which its tokenizer may mark
        special; the reply parser reads them as text)."""
        markers = self.prompt_format.marker_ids
        if not markers:
            return self.tokenizer.decode(list(ids), skip_special_tokens=True)
        out, run = [], []
        for token in ids:
            if token in markers:
                out += [self.tokenizer.decode(run, skip_special_tokens=True), markers[token]]
                run = []
            else:
                run.append(token)
        return "".join(out) + self.tokenizer.decode(run, skip_special_tokens=True)

    def open_source(self, cache: CacheSettings):
        """A fresh KV-cache strategy (:mod:`glmdesk.engine.cache`) for one answer.

        Raises:
            GlmdeskError: ``invalid_setting`` when the strategy cannot run here.
        """
        from glmdesk.engine.cache import make_cache_strategy

        strategy = make_cache_strategy(self.model, cache, self.step)
        strategy.tuner = self.tuner
        return strategy

    def image_sizing(self) -> ImageSizing | None:
        """The image processor's resizing rule; ``None``: the model reads no images."""
        return None

    def logits_processors(self) -> tuple:
        """Fresh processors for one answer, applied before the user's sampling chain:
        for a byte-level vocabulary, the UTF-8 guard (:mod:`glmdesk.engine.decode.utf8_guard`;
        its masks are built once per tokenizer)."""
        from glmdesk.engine.decode.utf8_guard import guard_for

        guard = guard_for(self.tokenizer)
        return () if guard is None else (guard.processor(),)

    def close(self) -> None:
        """Release the kept KV caches, the static step's slabs (idle once those caches
        are gone) and the weights (and cached CUDA blocks)."""
        self.kv_pool.clear()
        pool = getattr(self.step, "pool", None)
        if pool is not None:
            pool.free_idle()
        self.model = None
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
