"""The FastAPI application: OpenAI-compatible routes over one loaded backend."""

from __future__ import annotations

import asyncio
import hmac
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import replace

from fastapi import Depends, FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from glmdesk.core.settings import CacheSettings, ParamsBox, SamplingParams
from glmdesk.engine.backends.base import Backend
from glmdesk.engine.chunk import GenerationChunk
from glmdesk.engine.families import sampling_defaults
from glmdesk.server.answer import AnswerRecord, AnswerRun, StopStrings
from glmdesk.server.body import BodyIntake, ClientGone, invalid_request
from glmdesk.server.config import ServeSettings
from glmdesk.server.errors import APIError, from_engine, install_handlers
from glmdesk.server.responses import Outcome, Reply, pieces, sse
from glmdesk.server.schemas import (
    ChatRequest,
    CompletionRequest,
    SamplingFields,
    chat_messages,
    chat_tools,
    completion_prompt,
    prompt_chars,
    request_thinking,
    sampling_params,
    stop_strings,
    wants_usage,
)
from glmdesk.server.turns import Turns

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
        records: The last answers, newest last (:class:`AnswerRecord`).
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
        self.records: deque[AnswerRecord] = deque(maxlen=64)
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

    def check_chars(self, body: ChatRequest | CompletionRequest) -> None:
        """Refuse a prompt far longer than the context can hold, before tokenizing it.

        Raises:
            APIError: 400 ``context_length_exceeded`` when the prompt has more than
                :data:`MAX_CHARS_PER_TOKEN` characters per token of context.
        """
        n = prompt_chars(body)
        most = self.context_length * MAX_CHARS_PER_TOKEN
        if n > most:
            raise APIError(
                400,
                f"The prompt is {n:,} characters long, far more than this model's context window "
                f"of {self.context_length} tokens can hold (at most {most:,} characters). "
                "Shorten the prompt.",
                "prompt" if isinstance(body, CompletionRequest) else "messages",
                "context_length_exceeded",
            )

    async def read(self, request: Request, model: type[ChatRequest] | type[CompletionRequest]):
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


async def _disconnected(request: Request) -> None:
    """Returns when the client has gone (the request body is read already)."""
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return


async def _unless_gone(request: Request, awaitable, undo: Callable[[object], None] | None = None):
    """``await awaitable``, unless the client disconnects first (then ClientGone).

    When both happen in the same turn of the loop the client's leaving wins: the
    awaitable's result is handed to ``undo`` (a queue place given back) and ClientGone
    is raised, so a request whose client has gone never starts.
    """
    task = asyncio.ensure_future(awaitable)
    watch = asyncio.ensure_future(_disconnected(request))
    try:
        done, _ = await asyncio.wait({task, watch}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        watch.cancel()
    if watch not in done:
        return task.result()
    if task in done and undo is not None and not task.cancelled() and task.exception() is None:
        undo(task.result())
    task.cancel()
    raise ClientGone


async def _answer(
    state: ServerState,
    request: Request,
    body: SamplingFields,
    make_stream: Callable[..., Iterator[GenerationChunk]],
    reply: Reply,
) -> Response:
    """Wait for the model, start the answer, send it as events or one JSON body."""
    stops = StopStrings(stop_strings(body))
    loop = asyncio.get_running_loop()
    await _unless_gone(request, state.turns.acquire(), undo=lambda _held: state.turns.release())
    record = AnswerRecord(reply.id)
    state.records.append(record)
    run = AnswerRun(loop, make_stream, record, state.turns.release)
    run.start()
    state.requests += 1
    if state.on_request is not None:
        state.on_request(state.requests)
    try:
        first = await _unless_gone(request, run.next())
        if first is None or (first.finish_reason == "error" and not first.text):
            raise from_engine(first.error if first is not None else None)
        if body.stream:
            headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
            return StreamingResponse(
                sse(run, first, stops, reply), media_type="text/event-stream", headers=headers
            )
        out = Outcome()
        await _unless_gone(request, _collect(run, first, stops, out))
    except BaseException:
        run.stop.set()
        raise
    if out.last is not None and out.last.finish_reason == "error":
        raise from_engine(out.last.error)
    return JSONResponse(
        reply.whole("".join(out.text), out.finish, out.last, out.calls, "".join(out.reasoning))
    )


async def _collect(run: AnswerRun, first: GenerationChunk, stops: StopStrings, out: Outcome) -> None:
    async for text in pieces(run, first, stops, out):
        out.text.append(text)


def create_app(
    backend: Backend,
    settings: ServeSettings | None = None,
    cache: CacheSettings | None = None,
    on_request: Callable[[int], None] | None = None,
) -> FastAPI:
    """The OpenAI-compatible application over a loaded ``backend``.

    Args:
        backend: A loaded backend; the server never closes it.
        settings: API key, queue size, served model id (host and port are the runner's).
        cache: The KV-cache strategy of every answer (default: full).
        on_request: Called on the server's event loop with the number of answers
            started so far, each time one starts.

    Returns:
        The FastAPI app; ``app.state.glmdesk`` is its :class:`ServerState`.
    """
    settings = settings or ServeSettings()
    state = ServerState(backend, settings, cache or CacheSettings(), on_request)
    app = FastAPI(title="glmdesk", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.glmdesk = state
    install_handlers(app, invalid_request)

    @app.exception_handler(ClientGone)
    async def _gone(request: Request, exc: ClientGone) -> Response:
        return Response(status_code=499)  # nginx's "client closed request"; nobody reads it

    guarded = [Depends(_authorizer(settings.api_key))]
    _info_routes(app, state, guarded)
    _answer_routes(app, state, guarded)
    return app


def _authorizer(api_key: str | None) -> Callable[[Request], None]:
    """A dependency that refuses a request without ``Authorization: Bearer <api_key>``."""

    def authorized(request: Request) -> None:
        if api_key is None:
            return
        scheme, _, key = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(key.strip().encode(), api_key.encode()):
            raise APIError(
                401,
                "The API key is missing or wrong: send it as the header Authorization: Bearer KEY.",
                code="invalid_api_key",
            )

    return authorized


def _info_routes(app: FastAPI, state: ServerState, guarded: list) -> None:
    """``/health`` and ``/metrics`` (open, as vLLM's) and ``/v1/models`` (guarded)."""

    @app.get("/health")
    async def health() -> dict:
        return {"status": "ok", "busy": state.turns.busy, "waiting": state.turns.waiting}

    @app.get("/metrics")
    async def metrics() -> Response:
        running = state.records[-1] if state.records and not state.records[-1].ended else None
        usage = (running.kv_tokens if running else 0) / max(state.context_length, 1)
        text = (
            "# HELP glmdesk:kv_cache_usage_perc KV-cache positions held by the running answer, "
            "as a fraction of the context window (0-1).\n"
            "# TYPE glmdesk:kv_cache_usage_perc gauge\n"
            f"glmdesk:kv_cache_usage_perc {usage:.6f}\n"
            "# HELP glmdesk:num_requests_waiting Requests waiting for the model.\n"
            "# TYPE glmdesk:num_requests_waiting gauge\n"
            f"glmdesk:num_requests_waiting {state.turns.waiting}\n"
            "# HELP glmdesk:requests_total Answers started since the server started.\n"
            "# TYPE glmdesk:requests_total counter\n"
            f"glmdesk:requests_total {state.requests}\n"
        )
        return Response(text, media_type="text/plain; version=0.0.4")

    @app.get("/v1/models", dependencies=guarded)
    async def models() -> dict:
        entry = {
            "id": state.model_id,
            "object": "model",
            "created": state.created,
            "owned_by": "glmdesk",
            "max_model_len": state.context_length,
        }
        return {"object": "list", "data": [entry]}


def _answer_routes(app: FastAPI, state: ServerState, guarded: list) -> None:
    """``/v1/chat/completions`` and ``/v1/completions``."""
    backend = state.backend

    @app.post("/v1/chat/completions", dependencies=guarded)
    async def chat_completions(request: Request) -> Response:
        body = await state.read(request, ChatRequest)
        state.check_model(body.model)
        capabilities = backend.capabilities()
        tool_format = capabilities.tool_calls
        messages = chat_messages(body, chat_tools(body, tool_format), tool_format, capabilities.vision)
        sampled = sampling_params(body, state.base_params, await state.room(messages))
        params = ParamsBox(request_thinking(body, sampled))
        reply = Reply(
            f"chatcmpl-{uuid.uuid4().hex}", state.model_id, chat=True, usage_chunk=wants_usage(body)
        )
        return await _answer(
            state,
            request,
            body,
            lambda stop: backend.stream(messages, params, state.cache, stop, conversation="serve"),
            reply,
        )

    @app.post("/v1/completions", dependencies=guarded)
    async def completions(request: Request) -> Response:
        body = await state.read(request, CompletionRequest)
        state.check_model(body.model)
        prompt = completion_prompt(body)
        params = ParamsBox(sampling_params(body, state.base_params, await state.room(prompt)))
        reply = Reply(f"cmpl-{uuid.uuid4().hex}", state.model_id, chat=False, usage_chunk=wants_usage(body))
        if body.echo:
            reply = replace(reply, echo=prompt)
        return await _answer(
            state, request, body, lambda stop: backend.stream_prompt(prompt, params, state.cache, stop), reply
        )
