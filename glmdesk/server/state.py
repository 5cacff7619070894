"""What the endpoints share: the served backend, its queue, its counters and the checks
every answer request goes through (model id, prompt length, tokens left)."""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable
from typing import TypeVar

from fastapi import Request

from glmdesk.core.settings import CacheSettings, SamplingParams
from glmdesk.engine.backends.base import Backend
from glmdesk.engine.families import sampling_defaults
from glmdesk.server.answer import RequestRecord
from glmdesk.server.body import BodyIntake
from glmdesk.server.config import ServeSettings
from glmdesk.server.errors import APIError
from glmdesk.server.schemas import RequestFields
from glmdesk.server.turns import Turns

_Body = TypeVar("_Body", bound=RequestFields)

#: A prompt of more than this many characters per token of context is refused without
#: tokenizing it: it fits only if its tokens average more characters than that. The
#: embedded SmolLM2's longest token is 81 characters (a run of spaces or of ``#``); a
#: vocabulary with tokens over 256 characters could see a prompt refused that would fit.
MAX_CHARS_PER_TOKEN = 256
#: Bytes of large request bodies held at once (read, parsed, validated), in body-size limits.
BODY_BUDGET_LIMITS = 4


class ServerState:
    """What the routes share: the backend, the queue, counters.

    Attributes:
        backend: The loaded backend (answers go through its ``stream``).
        settings: The server's settings.
        cache: The KV-cache strategy of every answer.
        model_id: The id clients name (``settings.model_name`` or the model's name).
        turns: The FIFO queue for the model.
        body_limit: The largest request body read, in bytes.
        bodies: How request bodies are taken in (limit, budget, timeout).
        tokenizing: Lets one prompt be tokenized at a time (its memory is bounded).
        requests: Answers started since the server started.
        records: The last answers, newest last (:class:`RequestRecord`).
        on_request: Called on the event loop with :attr:`requests` when an answer starts.
    """

    def __init__(
        self,
        backend: Backend,
        settings: ServeSettings,
        cache: CacheSettings,
        on_request: Callable[[int], None] | None = None,
    ) -> None:
        self.backend, self.settings, self.cache = backend, settings, cache
        info = backend.info
        self.model_id = settings.model_name or info.name
        self.context_length = backend.capabilities().context_length or info.context_length
        self.base_params: SamplingParams = sampling_defaults(info.family)
        self.turns = Turns(settings.queue_size, settings.retry_after_s)
        self.body_limit = settings.body_limit(self.context_length)
        self.bodies = BodyIntake(self.body_limit, BODY_BUDGET_LIMITS * self.body_limit)
        self.tokenizing = asyncio.Semaphore(1)
        self.requests = 0
        self.records: deque[RequestRecord] = deque(maxlen=64)
        self.on_request = on_request
        self.created = int(time.time())

    def check_model(self, model: str | None) -> None:
        """Raises APIError 404 when ``model`` is set and not the model served here."""
        if model is not None and model != self.model_id:
            raise APIError(
                404,
                f"The model {model!r} does not exist here; this server serves {self.model_id!r} (see /v1/models).",
                "model",
                "model_not_found",
            )

    def check_chars(self, body: RequestFields) -> None:
        """Refuse a prompt far longer than the context can hold, before tokenizing it.

        Raises:
            APIError: 400 ``context_length_exceeded`` when the prompt has more than
                :data:`MAX_CHARS_PER_TOKEN` characters per token of context.
        """
        n = body.prompt_chars()
        most = self.context_length * MAX_CHARS_PER_TOKEN
        if n > most:
            raise APIError(
                400,
                f"The prompt is {n:,} characters long, far more than this model's context window "
                f"of {self.context_length} tokens can hold (at most {most:,} characters). "
                "Shorten the prompt.",
                body.prompt_field,
                "context_length_exceeded",
            )

    async def read(self, request: Request, model: type[_Body]) -> _Body:
        """The request's body as ``model``, read by :attr:`bodies` (see
        :meth:`~glmdesk.server.body.BodyIntake.read`) and checked with :meth:`check_chars`."""
        return await self.bodies.read(request, model, self.check_chars)

    async def room(self, prompt) -> int | None:
        """Tokens left for the answer after ``prompt``, or ``None`` when the backend
        cannot count them. Prompts are tokenized one at a time, on a worker thread.

        Raises:
            APIError: 400 naming both lengths when the prompt fills the context.
        """
        async with self.tokenizing:
            n = await asyncio.to_thread(self.backend.prompt_tokens, prompt)
        if n is None:
            return None
        if n >= self.context_length:
            raise APIError(
                400,
                f"The prompt is {n} tokens long, but this model's context window is "
                f"{self.context_length} tokens (prompt and answer together). Shorten the prompt.",
                "messages" if not isinstance(prompt, str) else "prompt",
                "context_length_exceeded",
            )
        return self.context_length - n
