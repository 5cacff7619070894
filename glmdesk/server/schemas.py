"""Request bodies of the OpenAI-compatible API (pydantic, unknown fields ignored) and
their translation into glmdesk's :class:`~glmdesk.core.settings.SamplingParams`.

Field names and meanings follow OpenAI's API reference and vLLM's extra sampling
parameters (``top_k``, ``min_p``, ``repetition_penalty``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model

from glmdesk.core.messages import ChatMessage
from glmdesk.core.sampling_fields import RequestFieldError, params_from_request
from glmdesk.core.settings import SamplingParams
from glmdesk.core.tools import ToolSet
from glmdesk.engine.tools.openai_tools import messages_from_openai, toolset_from_openai
from glmdesk.server.errors import APIError
from glmdesk.server.images import user_parts

#: At most this many stop strings per request (OpenAI allows 4; vLLM more).
MAX_STOP_STRINGS = 16
#: OpenAI's "developer" role is a system message for models that predate it.
_ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant"}
#: Tool results (``function`` is OpenAI's older name of ``tool``).
_TOOL_ROLES = ("tool", "function")


class _Body(BaseModel):
    # NaN and infinity are JSON to Python's decoder, never a sampling setting.
    model_config = ConfigDict(extra="ignore", allow_inf_nan=False)


class TextPart(_Body):
    """One part of a message's content: ``text``, or ``image_url`` (``{"url": "data:..."}``)."""

    type: str
    text: str | None = None
    image_url: dict[str, Any] | str | None = None


class MessageIn(_Body):
    """One chat message as clients send it."""

    role: str
    content: str | list[TextPart] | None = None
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None
    name: str | None = None


class StreamOptions(_Body):
    """``stream_options``: ``include_usage`` adds a last chunk with ``usage``."""

    include_usage: bool = False


class _RequestFields(_Body):
    """What both endpoints accept besides the sampling fields."""

    model: str | None = None
    stream: bool = False
    stream_options: StreamOptions | None = None
    stop: str | list[str] | None = None
    n: int | None = Field(default=1)


def sampling_request_model(params_type: type[SamplingParams] = SamplingParams) -> type[_RequestFields]:
    """The request body both endpoints accept: one optional field per request name of
    ``params_type.TABLE`` (:mod:`glmdesk.core.sampling_fields`; ``None``: the model
    family's default), with the model, ``stream``, ``stream_options``, ``stop`` and ``n``."""
    fields: dict[str, Any] = {}
    for row in params_type.TABLE:
        for name in (row.request_name, *row.request_aliases):
            fields[name] = (row.type | None, None)
    return create_model(
        "SamplingFields",
        __base__=_RequestFields,
        __module__=__name__,
        __doc__="The sampling fields both endpoints accept (``None``: the model family's default).",
        **fields,
    )


SamplingFields = sampling_request_model()


class ChatRequest(SamplingFields):
    """``POST /v1/chat/completions``."""

    messages: list[MessageIn]
    tools: list[dict[str, Any]] | None = None
    tool_choice: str | dict[str, Any] | None = None
    chat_template_kwargs: dict[str, Any] | None = None


def request_thinking(body: ChatRequest, params: SamplingParams) -> SamplingParams:
    """``params`` with the request's ``chat_template_kwargs.enable_thinking`` (as vLLM
    takes it: GLM-4.5's template switch; other keys are not read).

    Raises:
        APIError: 400 when ``enable_thinking`` is given and is not a boolean.
    """
    value = (body.chat_template_kwargs or {}).get("enable_thinking")
    if value is None:
        return params
    if not isinstance(value, bool):
        raise APIError(
            400,
            f"chat_template_kwargs.enable_thinking must be true or false, not {value!r}.",
            "chat_template_kwargs",
        )
    return replace(params, enable_thinking=value)


class CompletionRequest(SamplingFields):
    """``POST /v1/completions``."""

    prompt: str | list[str]
    echo: bool = False


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


def prompt_chars(body: ChatRequest | CompletionRequest) -> int:
    """Characters of text the request's prompt holds at least, for the length check
    before tokenizing: message contents or the prompt, without the whitespace at their
    ends (a chat template may trim it); tool schemas and names are not counted."""
    if isinstance(body, CompletionRequest):
        prompts = body.prompt if isinstance(body.prompt, list) else [body.prompt]
        return sum(len(p.strip()) for p in prompts)
    total = 0
    for message in body.messages:
        content = message.content
        if isinstance(content, str):
            total += len(content.strip())
        elif content is not None:
            total += sum(len((part.text or "").strip()) for part in content)
    return total


def stop_strings(body: SamplingFields) -> tuple[str, ...]:
    """The ``stop`` strings (empty ones dropped).

    Raises:
        APIError: 400 for more than :data:`MAX_STOP_STRINGS`.
    """
    stop = body.stop
    stops = (stop,) if isinstance(stop, str) else tuple(stop or ())
    if len(stops) > MAX_STOP_STRINGS:
        raise APIError(400, f"At most {MAX_STOP_STRINGS} stop strings are allowed, not {len(stops)}.", "stop")
    return tuple(s for s in stops if s)


def sampling_params(body: SamplingFields, base: SamplingParams, room: int | None) -> SamplingParams:
    """The request's :class:`SamplingParams` over the model family's ``base``.

    ``max_completion_tokens`` (or the older ``max_tokens``) is the answer's length limit;
    without either, ``base.max_new_tokens``. It is capped to ``room``, the context
    window left after the prompt, in tokens (the answer then ends with ``length``).
    ``top_k`` of -1 (vLLM's "off") is 0 here.

    Raises:
        APIError: 400 with :class:`SamplingParams`' sentence and the field at fault.
    """
    if body.n not in (None, 1):
        raise APIError(400, f"This server gives one answer per request (n=1), not n={body.n}.", "n")
    try:
        params = params_from_request(dict(body), base)
    except RequestFieldError as exc:
        raise APIError(400, str(exc), exc.param, "invalid_value") from None
    if room is not None and params.max_new_tokens > room:
        params = replace(params, max_new_tokens=room)
    return params


def wants_usage(body: SamplingFields) -> bool:
    """True when a stream should end with a usage chunk."""
    return bool(body.stream_options and body.stream_options.include_usage)
