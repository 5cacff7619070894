"""What the backends that decode locally (transformers, llama.cpp) share: answers,
raw-prompt completions and prompt token counts over their
:class:`~glmdesk.engine.decode.generate.TextModel`, the conversations' kept KV cache, and the
capabilities every local model has."""

from __future__ import annotations

import threading
from collections.abc import Hashable, Iterator, Sequence
from typing import TYPE_CHECKING, Protocol

from glmdesk.core.errors import ErrorInfo, GlmdeskError
from glmdesk.core.messages import ChatMessage
from glmdesk.core.settings import CACHE_STRATEGIES, CacheSettings, ParamsBox
from glmdesk.core.text import without_lone_surrogates
from glmdesk.engine.backends.base import Backend, Capabilities, images_refused
from glmdesk.engine.chunk import GenerationChunk
from glmdesk.engine.families.glm4v import OCR_FAMILIES, greedy
from glmdesk.engine.info import ModelInfo

if TYPE_CHECKING:
    from glmdesk.engine.decode.generate import TextModel
    from glmdesk.engine.decode.kv_pool import KVPool

    class KeptModel(TextModel, Protocol):
        """A local backend's loaded model: a text model that keeps conversations' caches."""

        kv_pool: KVPool


class _GreedyBox(ParamsBox):
    """The user's :class:`ParamsBox` read with greedy decoding forced (an OCR model's
    answers: :func:`~glmdesk.engine.families.glm4v.greedy`); the length limit and seed
    still come from it."""

    def __init__(self, inner: ParamsBox) -> None:
        super().__init__(inner.get())
        self._inner = inner

    def get(self):
        return greedy(self._inner.get())


class LocalBackend(Backend):
    """A :class:`Backend` whose answers run through glmdesk's own decode loop.

    A subclass's :meth:`load` sets ``_model`` (a
    :class:`~glmdesk.engine.decode.generate.TextModel` with a ``kv_pool``) and ``_info``, and
    gives :meth:`encode_raw`, :meth:`engine_capabilities` and :meth:`probe_strategy`.
    """

    def __init__(self) -> None:
        self._model: KeptModel | None = None
        self._info: ModelInfo | None = None
        self._capabilities: Capabilities | None = None

    def text_model(self) -> KeptModel | None:
        """The loaded :class:`~glmdesk.engine.decode.generate.TextModel`, or ``None``."""
        return self._model

    def encode_raw(self, text: str) -> list[int]:
        """Token ids of a raw text prompt (the model's tokenizer, no chat format)."""
        raise NotImplementedError

    @property
    def info(self) -> ModelInfo:
        if self._info is None:
            raise RuntimeError("no model is loaded")
        return self._info

    def stream(
        self,
        messages: Sequence[ChatMessage],
        params: ParamsBox,
        cache: CacheSettings | None = None,
        stop: threading.Event | None = None,
        conversation: Hashable | None = None,
    ) -> Iterator[GenerationChunk]:
        """Stream one answer through :func:`glmdesk.engine.decode.generate.stream_answer` (images
        on the newest message of a model without vision end it at once with
        ``vision_unavailable``: llama.cpp's multimodal library is not in this build)."""
        from glmdesk.engine.decode.generate import stream_answer

        if self._model is None:
            error = ErrorInfo("generation_failed", "No model is loaded.", {"detail": "no model is loaded"})
            return iter([GenerationChunk(finish_reason="error", error=error)])
        if not getattr(self._model, "vision", False):  # images for a text model: a sentence
            refused = images_refused(messages, self.info.name, self.name)
            if refused is not None:
                return refused
        if self.info.family in OCR_FAMILIES:  # GLM-OCR copies the page: greedy, whatever was set
            params = _GreedyBox(params)
        return stream_answer(self._model, messages, params, cache, stop, conversation)

    def forget_conversation(self, conversation: Hashable) -> None:
        if self._model is not None:
            self._model.kv_pool.discard(conversation)

    def kept_kv_bytes(self) -> int:
        return 0 if self._model is None else self._model.kv_pool.total_bytes()

    def stream_prompt(
        self,
        prompt: str,
        params: ParamsBox,
        cache: CacheSettings | None = None,
        stop: threading.Event | None = None,
    ) -> Iterator[GenerationChunk]:
        """Stream the continuation of a raw text prompt (see :meth:`Backend.stream_prompt`;
        lone surrogates become U+FFFD, as in chat messages)."""
        from glmdesk.engine.decode.generate import stream_prompt_ids

        model = self.text_model()
        if model is None:
            return super().stream_prompt(prompt, params, cache, stop)
        return stream_prompt_ids(model, self.encode_raw(without_lone_surrogates(prompt)), params, cache, stop)

    def prompt_tokens(self, messages: Sequence[ChatMessage] | str) -> int | None:
        """Tokens in the whole prompt (nothing dropped), in tokens.

        Raises:
            RuntimeError: before :meth:`load` succeeded.
        """
        from glmdesk.engine.formats.prompt import encodable

        model = self.text_model()
        if model is None:
            raise RuntimeError("no model is loaded")
        if isinstance(messages, str):
            return len(self.encode_raw(without_lone_surrogates(messages)))
        return len(model.prompt_format.encode(encodable(messages)))

    def capabilities(self) -> Capabilities:
        """What the loaded model can do (found once per load): the device and context
        from its :class:`ModelInfo`, the stop ids from its prompt format, the rest from
        :meth:`engine_capabilities`."""
        if self._capabilities is None:
            info, model = self.info, self._model
            if model is None:
                raise RuntimeError("no model is loaded")
            self._capabilities = Capabilities(
                engine=self.name,
                memory_probe="cuda" if info.device.startswith("cuda") else "cpu",
                device=info.device,
                context_length=info.context_length,
                stop_ids=frozenset(model.prompt_format.stop_ids),
                kv_strategies=self._kv_strategies(),
                thinking_switch=hasattr(model.prompt_format, "thinking"),
                **self.engine_capabilities(),
            )
        return self._capabilities

    def engine_capabilities(self) -> dict:
        """This engine's own :class:`Capabilities` fields (``quantizations``,
        ``precisions``, ``tool_calls``...)."""
        return {}

    def probe_strategy(self, strategy: str) -> None:
        """Try the KV-cache strategy ``strategy`` once, small, and free it.

        Raises:
            GlmdeskError: ``invalid_setting`` (or another kind) when it cannot run here.
        """
        raise NotImplementedError

    def _kv_strategies(self) -> dict[str, ErrorInfo | None]:
        """Which KV-cache strategies can run with this model (each probed once)."""
        out: dict[str, ErrorInfo | None] = {}
        for name in CACHE_STRATEGIES:
            try:
                self.probe_strategy(name)
                out[name] = None
            except GlmdeskError as exc:
                out[name] = exc.info
            except Exception as exc:
                out[name] = ErrorInfo(
                    "invalid_setting", str(exc), {"name": "kv_cache", "value": name, "reason": str(exc)}
                )
        return out
