"""What the answer endpoints' request bodies share (pydantic, unknown fields ignored):
the sampling fields, ``stop``, ``stream`` and ``n``, and their translation into
glmdesk's :class:`~glmdesk.core.settings.SamplingParams`. Each endpoint's own body
(messages, prompt) is in its module under :mod:`glmdesk.server.endpoints`.

Field names and meanings follow OpenAI's API reference and vLLM's extra sampling
parameters (``top_k``, ``min_p``, ``repetition_penalty``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, create_model

from glmdesk.core.sampling_fields import RequestFieldError, params_from_request
from glmdesk.core.settings import SamplingParams
from glmdesk.server.errors import APIError

#: At most this many stop strings per request (OpenAI allows 4; vLLM more).
MAX_STOP_STRINGS = 16


class Body(BaseModel):
    """A request body's part: unknown fields ignored, no NaN or infinity."""

    # NaN and infinity are JSON to Python's decoder, never a sampling setting.
    model_config = ConfigDict(extra="ignore", allow_inf_nan=False)


class StreamOptions(Body):
    """``stream_options``: ``include_usage`` adds a last chunk with ``usage``."""

    include_usage: bool = False


class RequestFields(Body):
    """What both endpoints accept besides the sampling fields (the base of every
    :data:`SamplingFields` model, which is made at run time: annotations name this one)."""

    model: str | None = None
    stream: bool = False
    stream_options: StreamOptions | None = None
    stop: str | list[str] | None = None
    n: int | None = Field(default=1)

    #: The field a prompt-length error names (``messages``, ``prompt``).
    prompt_field: ClassVar[str] = "prompt"

    def prompt_chars(self) -> int:
        """Characters of text the prompt holds at least, for the length check before
        tokenizing (each endpoint's request counts its own prompt)."""
        raise NotImplementedError


def sampling_request_model(params_type: type[SamplingParams] = SamplingParams) -> type[RequestFields]:
    """The request body both endpoints accept: one optional field per request name of
    ``params_type.TABLE`` (:mod:`glmdesk.core.sampling_fields`; ``None``: the model
    family's default), with the model, ``stream``, ``stream_options``, ``stop`` and ``n``."""
    fields: dict[str, Any] = {}
    for row in params_type.TABLE:
        for name in (row.request_name, *row.request_aliases):
            fields[name] = (row.type | None, None)
    return create_model(
        "SamplingFields",
        __base__=RequestFields,
        __module__=__name__,
        __doc__="The sampling fields both endpoints accept (``None``: the model family's default).",
        **fields,
    )


SamplingFields = sampling_request_model()


def stop_strings(body: RequestFields) -> tuple[str, ...]:
    """The ``stop`` strings (empty ones dropped).

    Raises:
        APIError: 400 for more than :data:`MAX_STOP_STRINGS`.
    """
    stop = body.stop
    stops = (stop,) if isinstance(stop, str) else tuple(stop or ())
    if len(stops) > MAX_STOP_STRINGS:
        raise APIError(400, f"At most {MAX_STOP_STRINGS} stop strings are allowed, not {len(stops)}.", "stop")
    return tuple(s for s in stops if s)


def sampling_params(body: RequestFields, base: SamplingParams, room: int | None) -> SamplingParams:
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


def wants_usage(body: RequestFields) -> bool:
    """True when a stream should end with a usage chunk."""
    return bool(body.stream_options and body.stream_options.include_usage)
