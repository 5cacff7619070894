"""The transformers backend: HF folders, converted ChatGLM checkpoints, GGUF copies.

Loading is :func:`glmdesk.engine.loader.load_model`; answering is the text layer
(:func:`glmdesk.engine.generate.stream_answer`) over a KV-cache strategy.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable, Iterator, Sequence

from glmdesk.core.errors import ErrorInfo, GlmdeskError
from glmdesk.core.messages import ChatMessage
from glmdesk.core.settings import (
    CACHE_STRATEGIES,
    PRECISIONS,
    QUANTIZATIONS,
    CacheSettings,
    LoadSettings,
    ParamsBox,
)
from glmdesk.engine.backends.base import Capabilities, ProgressCallback, images_refused
from glmdesk.engine.backends.local import LocalBackend
from glmdesk.engine.chunk import GenerationChunk
from glmdesk.engine.info import ModelInfo


def _option_errors(prefix: str, names: Sequence[str], availability: dict[str, ErrorInfo | None]) -> dict:
    return {name: availability.get(f"{prefix}:{name}") for name in names}


class TransformersBackend(LocalBackend):
    """Answers with a transformers causal LM loaded by glmdesk's loader.

    Args:
        loaded: An already loaded :class:`~glmdesk.engine.loader.LoadedModel` to use
            (tests share one); the backend does not close a model it was given.
    """

    name = "transformers"

    def __init__(self, loaded=None) -> None:
        self._loaded = loaded
        self._owns = loaded is None
        self._capabilities: Capabilities | None = None

    @property
    def loaded(self):
        """The :class:`~glmdesk.engine.loader.LoadedModel` (``None`` before a load)."""
        return self._loaded

    def load(
        self,
        settings: LoadSettings,
        progress: ProgressCallback | None = None,
        cancel: threading.Event | None = None,
    ) -> ModelInfo:
        from glmdesk.engine.loader import load_model

        loaded = load_model(settings, progress=progress, cancel=cancel)
        loaded.logits_processors()  # builds the UTF-8 guard's masks now, not at the first answer
        if self._loaded is not None and self._owns:
            self._loaded.close()
        self._loaded, self._owns, self._capabilities = loaded, True, None
        return loaded.info

    @property
    def info(self) -> ModelInfo:
        if self._loaded is None:
            raise RuntimeError("no model is loaded")
        return self._loaded.info

    def stream(
        self,
        messages: Sequence[ChatMessage],
        params: ParamsBox,
        cache: CacheSettings | None = None,
        stop: threading.Event | None = None,
        conversation: Hashable | None = None,
    ) -> Iterator[GenerationChunk]:
        from glmdesk.engine.generate import stream_answer

        if self._loaded is None:
            error = ErrorInfo("generation_failed", "No model is loaded.", {"detail": "no model is loaded"})
            return iter([GenerationChunk(finish_reason="error", error=error)])
        if not self._loaded.vision:
            refused = images_refused(messages, self._loaded.info.name, self.name)
            if refused is not None:
                return refused
        return stream_answer(self._loaded, messages, params, cache, stop, conversation)

    def forget_conversation(self, conversation: Hashable) -> None:
        if self._loaded is not None:
            self._loaded.kv_pool.discard(conversation)

    def kept_kv_bytes(self) -> int:
        return 0 if self._loaded is None else self._loaded.kv_pool.total_bytes()

    def text_model(self):
        return self._loaded

    def encode_raw(self, text: str) -> list[int]:
        return self._loaded.tokenizer.encode(text)

    def capabilities(self) -> Capabilities:
        if self._capabilities is None:
            from glmdesk.engine.options import option_availability

            info = self.info
            availability = option_availability()
            self._capabilities = Capabilities(
                engine=self.name,
                kv_strategies=self._kv_strategies(),
                quantizations=_option_errors("quantization", QUANTIZATIONS[1:], availability),
                precisions=_option_errors("precision", PRECISIONS[1:], availability),
                memory_probe="cuda" if info.device.startswith("cuda") else "cpu",
                device=info.device,
                context_length=info.context_length,
                stop_ids=frozenset(self._loaded.prompt_format.stop_ids),
                tool_calls=bool(getattr(self._loaded.prompt_format, "tool_calls", False)),
                vision=self._loaded.vision,
                image_sizing=self._loaded.prompt_format.sizing() if self._loaded.vision else None,
            )
        return self._capabilities

    def _kv_strategies(self) -> dict[str, ErrorInfo | None]:
        """Which KV-cache strategies can run with this model (each tried once, empty)."""
        from glmdesk.engine.cache import make_cache_strategy

        out: dict[str, ErrorInfo | None] = {}
        for name in CACHE_STRATEGIES:
            try:
                make_cache_strategy(self._loaded.model, CacheSettings(strategy=name)).release()
                out[name] = None
            except GlmdeskError as exc:
                out[name] = exc.info
            except Exception as exc:
                out[name] = ErrorInfo(
                    "invalid_setting", str(exc), {"name": "kv_cache", "value": name, "reason": str(exc)}
                )
        return out

    def close(self) -> None:
        loaded, self._loaded = self._loaded, None
        if loaded is not None and self._owns:
            loaded.close()
