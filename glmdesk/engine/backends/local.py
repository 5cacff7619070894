"""What the backends that decode locally (transformers, llama.cpp) share: raw-prompt
completions and prompt token counts over their :class:`~glmdesk.engine.generate.TextModel`."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence

from glmdesk.core.messages import ChatMessage
from glmdesk.core.settings import CacheSettings, ParamsBox
from glmdesk.core.text import without_lone_surrogates
from glmdesk.engine.backends.base import Backend
from glmdesk.engine.chunk import GenerationChunk


class LocalBackend(Backend):
    """A :class:`Backend` whose answers run through glmdesk's own decode loop.

    Subclasses give :meth:`text_model` (``None`` before a load) and :meth:`encode_raw`.
    """

    def text_model(self):
        """The loaded :class:`~glmdesk.engine.generate.TextModel`, or ``None``."""
        raise NotImplementedError

    def encode_raw(self, text: str) -> list[int]:
        """Token ids of a raw text prompt (the model's tokenizer, no chat format)."""
        raise NotImplementedError

    def stream_prompt(
        self,
        prompt: str,
        params: ParamsBox,
        cache: CacheSettings | None = None,
        stop: threading.Event | None = None,
    ) -> Iterator[GenerationChunk]:
        """Stream the continuation of a raw text prompt (see :meth:`Backend.stream_prompt`;
        lone surrogates become U+FFFD, as in chat messages)."""
        from glmdesk.engine.generate import stream_prompt_ids

        model = self.text_model()
        if model is None:
            return super().stream_prompt(prompt, params, cache, stop)
        return stream_prompt_ids(model, self.encode_raw(without_lone_surrogates(prompt)), params, cache, stop)

    def prompt_tokens(self, messages: Sequence[ChatMessage] | str) -> int | None:
        """Tokens in the whole prompt (nothing dropped), in tokens.

        Raises:
            RuntimeError: before :meth:`load` succeeded.
        """
        from glmdesk.engine.prompt import encodable

        model = self.text_model()
        if model is None:
            raise RuntimeError("no model is loaded")
        if isinstance(messages, str):
            return len(self.encode_raw(without_lone_surrogates(messages)))
        return len(model.prompt_format.encode(encodable(messages)))
