"""The transformers backend: HF folders, converted ChatGLM checkpoints, GGUF copies.

Loading is :func:`glmdesk.engine.backends.transformers.loader.load_model`; answering is the text layer
(:func:`glmdesk.engine.decode.generate.stream_answer`) over a KV-cache strategy.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

from glmdesk.core.errors import ErrorInfo
from glmdesk.core.settings import PRECISIONS, QUANTIZATIONS, CacheSettings, LoadSettings
from glmdesk.engine.backends.base import ProgressCallback
from glmdesk.engine.backends.local import LocalBackend
from glmdesk.engine.info import ModelInfo

if TYPE_CHECKING:
    from glmdesk.engine.backends.transformers.loaded_model import LoadedModel


def _option_errors(prefix: str, names: Sequence[str], availability: dict[str, ErrorInfo | None]) -> dict:
    return {name: availability.get(f"{prefix}:{name}") for name in names}


class TransformersBackend(LocalBackend):
    """Answers with a transformers causal LM loaded by glmdesk's loader.

    Args:
        loaded: An already loaded :class:`~glmdesk.engine.backends.transformers.loader.LoadedModel` to use
            (tests share one); the backend does not close a model it was given.
        fallback: ``auto`` chose transformers because the engine it prefers is not here
            (llama.cpp for a GGUF file): load a GGUF file with its weight-only scheme
            when one holds it (:func:`~glmdesk.engine.backends.transformers.fallback.transformers_fallback`).
        note: Why the preferred engine did not run although installed (kind
            ``llamacpp_untrusted``): the first load note, instead of "not installed".
    """

    name = "transformers"
    _model: LoadedModel | None

    def __init__(self, loaded=None, fallback: bool = False, note: ErrorInfo | None = None) -> None:
        super().__init__()
        self._fallback, self._note = fallback, note
        self._model, self._owns = loaded, loaded is None
        self._info = None if loaded is None else loaded.info

    @property
    def loaded(self):
        """The :class:`~glmdesk.engine.backends.transformers.loader.LoadedModel` (``None`` before a load)."""
        return self._model

    def load(
        self,
        settings: LoadSettings,
        progress: ProgressCallback | None = None,
        cancel: threading.Event | None = None,
    ) -> ModelInfo:
        from glmdesk.engine.backends.transformers.fallback import transformers_fallback
        from glmdesk.engine.backends.transformers.loader import load_model

        if self._fallback and settings.engine != "auto":  # a named engine passed over: auto's best
            settings = dataclasses.replace(settings, engine="auto")
        settings, note = transformers_fallback(settings, llama_cpp_installed=not self._fallback)
        if self._note is not None:
            note = self._note
        loaded = load_model(settings, progress=progress, cancel=cancel)
        if note is not None:
            loaded.info = dataclasses.replace(loaded.info, notes=(note, *loaded.info.notes))
        loaded.logits_processors()  # builds the UTF-8 guard's masks now, not at the first answer
        if self._model is not None and self._owns:
            self._model.close()
        self._model, self._owns, self._capabilities = loaded, True, None
        self._info = loaded.info
        return loaded.info

    def _loaded(self) -> LoadedModel:
        """The loaded model.

        Raises:
            RuntimeError: before :meth:`load` succeeded.
        """
        if self._model is None:
            raise RuntimeError("no model is loaded")
        return self._model

    def encode_raw(self, text: str) -> list[int]:
        return self._loaded().tokenizer.encode(text)

    def engine_capabilities(self) -> dict:
        """The torch options this machine has, whether the format has tool calls, and
        whether the model reads images (with its processor's resizing rule)."""
        from glmdesk.engine.backends.transformers.options import option_availability

        availability = option_availability()
        model = self._loaded()
        return {
            "quantizations": _option_errors("quantization", QUANTIZATIONS[1:], availability),
            "precisions": _option_errors("precision", PRECISIONS[1:], availability),
            "tool_calls": bool(model.prompt_format.tool_calls),
            "vision": model.vision,  # a GLM vision model (engine/backends/transformers/vision.py)
            "image_sizing": model.image_sizing(),
        }

    def probe_strategy(self, strategy: str) -> None:
        """Make the strategy's cache for this model, empty, and release it."""
        from glmdesk.engine.cache import make_cache_strategy

        make_cache_strategy(self._loaded().model, CacheSettings(strategy=strategy)).release()

    def close(self) -> None:
        loaded, self._model = self._model, None
        self._info = self._capabilities = None
        if loaded is not None and self._owns:
            loaded.close()
