"""One answer from queue to response, shared by the answer endpoints: wait for the model
(unless the client leaves), run the backend's stream on a worker thread, send server-sent
events or one JSON body."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator

from fastapi import Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from glmdesk.chat.events import AnswerFailed, ChatEvent, TextDelta
from glmdesk.core.run_marker import generating
from glmdesk.engine.chunk import GenerationChunk
from glmdesk.server.answer import RequestRecord, ServedAnswer, StopStrings
from glmdesk.server.body import ClientGone
from glmdesk.server.errors import from_engine
from glmdesk.server.responses import Outcome, Reply, pieces, sse
from glmdesk.server.schemas import RequestFields, stop_strings
from glmdesk.server.state import ServerState


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


async def answer(
    state: ServerState,
    request: Request,
    body: RequestFields,
    make_stream: Callable[..., Iterator[GenerationChunk]],
    reply: Reply,
) -> Response:
    """Wait for the model, start the answer, send it as events or one JSON body.

    Args:
        state: The server's state (queue, records, counters).
        request: The HTTP request (its client leaving stops the answer).
        body: The request body (``stop``, ``stream``).
        make_stream: ``make_stream(stop_event)`` starts the backend's answer.
        reply: How chunks become the endpoint's JSON.

    Raises:
        APIError: the engine's failure before the first text, or at the end.
        ClientGone: when the client leaves while waiting.
    """
    stops = StopStrings(stop_strings(body))
    loop = asyncio.get_running_loop()
    await _unless_gone(request, state.turns.acquire(), undo=lambda _held: state.turns.release())
    record = RequestRecord(reply.id)
    state.records.append(record)
    run = ServedAnswer(loop, _marked(state, make_stream), record, state.turns.release)
    run.start()
    state.requests += 1
    if state.on_request is not None:
        state.on_request(state.requests)
    try:
        first = await _unless_gone(request, run.next())
        failed = next((e for e in first or () if isinstance(e, AnswerFailed)), None)
        if first is None or (failed is not None and not any(isinstance(e, TextDelta) for e in first)):
            raise from_engine(failed.error if failed is not None else None)
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
    if out.error is not None:
        raise from_engine(out.error)
    return JSONResponse(
        reply.whole("".join(out.text), out.finish, out.figures, out.calls, "".join(out.reasoning))
    )


def _marked(
    state: ServerState, make_stream: Callable[..., Iterator[GenerationChunk]]
) -> Callable[..., Iterator[GenerationChunk]]:
    """``make_stream`` with this process's "engine was generating" marker held while the
    answer runs (:mod:`glmdesk.core.run_marker`): the next start tells a run that died."""

    def start(stop) -> Iterator[GenerationChunk]:
        info = state.backend.info
        with generating(info.engine, info.name, "serve"):
            yield from make_stream(stop)

    return start


async def _collect(run: ServedAnswer, first: list[ChatEvent], stops: StopStrings, out: Outcome) -> None:
    async for piece in pieces(run, first, stops, out):
        if isinstance(piece, str):  # without a call stream, every piece is text
            out.text.append(piece)
