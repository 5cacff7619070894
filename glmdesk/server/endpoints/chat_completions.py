"""``POST /v1/chat/completions``: its request body (OpenAI's chat request, with vLLM's
``chat_template_kwargs``), its translation into glmdesk's messages,
tools and sampling settings, and its route."""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Any, ClassVar

from fastapi import FastAPI, Request
from fastapi.responses import Response

from glmdesk.core.messages import ChatMessage
from glmdesk.core.settings import ParamsBox, SamplingParams
from glmdesk.core.tools import ToolSet
from glmdesk.engine.tools.openai_tools import messages_from_openai, toolset_from_openai
from glmdesk.server.answering import answer
from glmdesk.server.errors import APIError
from glmdesk.server.images import user_parts
from glmdesk.server.responses import Reply
from glmdesk.server.schemas import Body, SamplingFields, sampling_params, wants_usage
from glmdesk.server.state import ServerState

#: OpenAI's "developer" role is a system message for models that predate it.
_ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant"}
#: Tool results (``function`` is OpenAI's older name of ``tool``).
_TOOL_ROLES = ("tool", "function")


class ContentPart(Body):
    """One part of a message's content: ``text``, or ``image_url`` (``{"url": "data:..."}``)."""

    type: str
    text: str | None = None
    image_url: dict[str, Any] | str | None = None


class MessageIn(Body):
    """One chat message as clients send it."""

    role: str
    content: str | list[ContentPart] | None = None
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None
    name: str | None = None
    #: An earlier answer's thinking (vLLM's field; ``reasoning`` from vLLM 0.32 on), kept
    #: or dropped by the chat template (``chat_template_kwargs.clear_thinking``).
    reasoning_content: str | None = None
    reasoning: str | None = None


class ChatRequest(SamplingFields):
    """``POST /v1/chat/completions``."""

    messages: list[MessageIn]
    tools: list[dict[str, Any]] | None = None
    tool_choice: str | dict[str, Any] | None = None
    chat_template_kwargs: dict[str, Any] | None = None
    reasoning_effort: str | None = None

    prompt_field: ClassVar[str] = "messages"

    def prompt_chars(self) -> int:
        """Characters of the message contents, without the whitespace at their ends (a
        chat template may trim it); tool schemas and names are not counted."""
        total = 0
        for message in self.messages:
            content = message.content
            if isinstance(content, str):
                total += len(content.strip())
            elif content is not None:
                total += sum(len((part.text or "").strip()) for part in content)
        return total


def request_thinking(body: ChatRequest, params: SamplingParams) -> SamplingParams:
    """``params`` with the request's ``chat_template_kwargs`` (as vLLM takes them: every
    key reaches the chat template): ``enable_thinking`` as GLM-4.5's template switch, the
    others (GLM-4.7's ``clear_thinking``) as ``template_kwargs``.

    Raises:
        APIError: 400 when ``enable_thinking`` is given and is not a boolean, or another
            value is not a JSON scalar (text, number, true, false, null).
    """
    given = dict(body.chat_template_kwargs or {})
    value = given.pop("enable_thinking", None)
    if value is not None and not isinstance(value, bool):
        raise APIError(
            400,
            f"chat_template_kwargs.enable_thinking must be true or false, not {value!r}.",
            "chat_template_kwargs",
        )
    for name, other in given.items():
        if other is not None and not isinstance(other, str | int | float | bool):
            raise APIError(
                400,
                f"chat_template_kwargs.{name} must be text, a number, true, false or null.",
                "chat_template_kwargs",
            )
    if value is None and not given:
        return params
    thinking = params.enable_thinking if value is None else value
    return replace(params, enable_thinking=thinking, template_kwargs=tuple(given.items()))


def request_effort(body: ChatRequest, params: SamplingParams, levels: tuple[str, ...]) -> SamplingParams:
    """``params`` with the request's ``reasoning_effort`` (OpenAI's field, which vLLM
    passes to the chat template) as a value the template reads.

    Args:
        body: The request.
        params: Its sampling parameters so far.
        levels: The served model's effort levels (``ModelInfo.effort_levels``).

    Raises:
        APIError: 400 for a level the served model's template does not tell apart (or
            any level, for a model without effort levels).
    """
    effort = body.reasoning_effort
    if effort is None:
        return params
    if effort not in levels:
        allowed = f"one of {', '.join(levels)}" if levels else "left out: this model has no effort levels"
        raise APIError(400, f"reasoning_effort must be {allowed}, not {effort!r}.", "reasoning_effort")
    kwargs = tuple((k, v) for k, v in params.template_kwargs if k != "reasoning_effort")
    return replace(params, template_kwargs=(*kwargs, ("reasoning_effort", effort)))


def chat_tools(body: ChatRequest, tool_format: bool) -> ToolSet:
    """The tools the request offers the model (empty for none, or ``tool_choice: "none"``).

    Args:
        body: The request.
        tool_format: Whether the served model's prompt format has tool calls.

    A named function in ``tool_choice`` is forced (``ToolSet.forced``: the answer is
    that function's call); ``"required"`` forces the only function when exactly one is
    offered (see :func:`~glmdesk.engine.tools.openai_tools.toolset_from_openai`).

    Raises:
        APIError: 400 for malformed ``tools``/``tool_choice``, a ``tool_choice`` naming
            a function that is not among the tools, ``"required"`` with several
            functions (a GLM model can be made to call a named function, not to choose
            among several), or tools offered to a model without a tool format (as vLLM
            refuses tools it has no parser for).
    """
    choice = "auto" if body.tool_choice is None else body.tool_choice
    if not body.tools or choice == "none":
        if isinstance(choice, dict) and not body.tools:
            raise APIError(400, "tool_choice names a function, but the request has no tools.", "tool_choice")
        return ToolSet()
    if not tool_format:
        raise APIError(
            400,
            "This model has no tool-call format (only ChatGLM3, GLM-4 and GLM-4.5/4.6/4.7 models do); send the "
            'request without tools or with tool_choice "none".',
            "tools",
        )
    try:
        return toolset_from_openai(body.tools, choice)
    except ValueError as exc:
        raise APIError(400, str(exc), "tools" if "tool_choice" not in str(exc) else "tool_choice") from None


def chat_messages(
    body: ChatRequest, tools: ToolSet | None = None, tool_format: bool = False, vision: bool = False
) -> list[ChatMessage]:
    """The request's messages as :class:`ChatMessage` values (via
    :func:`~glmdesk.engine.tools.openai_tools.messages_from_openai`): ``tool`` messages become
    observations, assistant ``tool_calls`` become call turns, ``tools`` go on the
    system message. With ``vision`` (the model reads images), a user message's
    ``image_url`` parts with ``data:`` URLs become its attachments
    (:func:`~glmdesk.server.images.user_parts`).

    Raises:
        APIError: 400 for an unknown role, content parts the model cannot read (an image
            for a text model, an ``http(s)`` image URL: never fetched), tool turns for a
            model without a tool format, malformed calls, or a conversation that does
            not end with a user message or a tool result.
    """
    if not body.messages:
        raise APIError(400, "The request has no messages.", "messages")
    raw: list[dict[str, Any]] = []
    for i, message in enumerate(body.messages):
        if message.role not in _ROLES and message.role not in _TOOL_ROLES:
            raise APIError(
                400,
                f"messages[{i}] has the role {message.role!r}; this server takes system, user, "
                "assistant and tool messages.",
                f"messages[{i}].role",
            )
        if not tool_format and (message.role in _TOOL_ROLES or message.tool_calls):
            raise APIError(
                400,
                f"messages[{i}] is a tool call or result, but this model has no tool-call format.",
                f"messages[{i}]",
            )
        content, images = message.content, ()
        if isinstance(content, list):
            content, images = user_parts(i, message.role, content, vision)
        raw.append(message.model_dump() | {"content": content or "", "attachments": images})
    try:
        out = messages_from_openai(raw, tools or ToolSet())
    except ValueError as exc:
        raise APIError(400, str(exc), "messages") from None
    if out[-1].role not in ("user", "observation"):
        raise APIError(
            400, "The last message must be the user's message or a tool result to answer.", "messages"
        )
    return out


def register(app: FastAPI, state: ServerState, guarded: list) -> None:
    """Add the route to ``app`` (``guarded``: the API-key dependency)."""
    backend = state.backend

    @app.post("/v1/chat/completions", dependencies=guarded)
    async def chat_completions(request: Request) -> Response:
        body = await state.read(request, ChatRequest)
        state.check_model(body.model)
        capabilities = backend.capabilities()
        tool_format = capabilities.tool_calls
        messages = chat_messages(body, chat_tools(body, tool_format), tool_format, capabilities.vision)
        sampled = sampling_params(body, state.base_params, await state.room(messages))
        levels = getattr(backend.info, "effort_levels", ())
        params = ParamsBox(request_effort(body, request_thinking(body, sampled), levels))
        reply = Reply(
            f"chatcmpl-{uuid.uuid4().hex}", state.model_id, chat=True, usage_chunk=wants_usage(body)
        )
        return await answer(
            state,
            request,
            body,
            lambda stop: backend.stream(messages, params, state.cache, stop, conversation="serve"),
            reply,
        )


#: The request bodies this endpoint reads (for naming the field of a validation error).
REQUEST_MODELS = (ChatRequest,)
