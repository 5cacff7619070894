"""``POST /v1/completions``: OpenAI's legacy completion of a raw prompt (``echo`` given
back first), its request body and its route."""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import ClassVar

from fastapi import FastAPI, Request
from fastapi.responses import Response

from glmdesk.core.settings import ParamsBox
from glmdesk.server.answering import answer
from glmdesk.server.errors import APIError
from glmdesk.server.responses import Reply
from glmdesk.server.schemas import SamplingFields, sampling_params, wants_usage
from glmdesk.server.state import ServerState


class CompletionRequest(SamplingFields):
    """``POST /v1/completions``."""

    prompt: str | list[str]
    echo: bool = False

    prompt_field: ClassVar[str] = "prompt"

    def prompt_chars(self) -> int:
        """Characters of the prompt, without the whitespace at its ends."""
        prompts = self.prompt if isinstance(self.prompt, list) else [self.prompt]
        return sum(len(p.strip()) for p in prompts)


def completion_prompt(body: CompletionRequest) -> str:
    """The request's raw prompt.

    Raises:
        APIError: 400 for several prompts in one request or an empty prompt.
    """
    prompt = body.prompt
    if isinstance(prompt, list):
        if len(prompt) != 1:
            raise APIError(
                400, "Send one prompt per request (a list of several is not served here).", "prompt"
            )
        prompt = prompt[0]
    if not prompt:
        raise APIError(400, "The prompt is empty.", "prompt")
    return prompt


def register(app: FastAPI, state: ServerState, guarded: list) -> None:
    """Add the route to ``app`` (``guarded``: the API-key dependency)."""

    @app.post("/v1/completions", dependencies=guarded)
    async def completions(request: Request) -> Response:
        body = await state.read(request, CompletionRequest)
        state.check_model(body.model)
        prompt = completion_prompt(body)
        params = ParamsBox(sampling_params(body, state.base_params, await state.room(prompt)))
        reply = Reply(f"cmpl-{uuid.uuid4().hex}", state.model_id, chat=False, usage_chunk=wants_usage(body))
        if body.echo:
            reply = replace(reply, echo=prompt)
        return await answer(
            state,
            request,
            body,
            lambda stop: state.backend.stream_prompt(prompt, params, state.cache, stop),
            reply,
        )


#: The request bodies this endpoint reads (for naming the field of a validation error).
REQUEST_MODELS = (CompletionRequest,)
