"""The remote backend (official openai client) against real servers on 127.0.0.1:
``glmdesk serve`` with the embedded model, and a small FastAPI server that stalls."""

from __future__ import annotations

import asyncio
import threading

import pytest
from fastapi import FastAPI
from fastapi.responses import StreamingResponse

from glmdesk.core.errors import GlmdeskError
from glmdesk.core.messages import ChatMessage
from glmdesk.core.settings import CACHE_STRATEGIES, LoadSettings, ParamsBox, SamplingParams
from glmdesk.engine.backends import create_backend
from glmdesk.engine.backends.base import SAMPLING_FIELDS
from glmdesk.engine.backends.remote.backend import RemoteBackend, base_url, metrics_url, parse_kv_usage
from glmdesk.server.config import ServeSettings
from glmdesk.server.runner import ServerThread

PARIS = [ChatMessage("user", "What is the capital of France?")]
STORY = [ChatMessage("user", "Write a long story about a dragon.")]
GREEDY = ParamsBox(SamplingParams(temperature=0, max_new_tokens=24))


@pytest.fixture
def remote(server):
    settings = LoadSettings(remote_url=server.url.removesuffix("/v1"))
    backend = create_backend(settings)
    backend.load(settings)
    yield backend
    backend.close()


def test_answer_streams_with_client_timings_and_server_counts(remote, backend):
    assert isinstance(remote, RemoteBackend) and remote.info.engine == "remote"
    assert remote.info.name == backend.info.name and remote.info.context_length == backend.info.context_length
    chunks = list(remote.stream(PARIS, GREEDY))
    text = "".join(c.text for c in chunks)
    local = "".join(c.text for c in backend.stream(PARIS, GREEDY))
    assert text == local and "Paris" in text and len(chunks) > 3
    last = chunks[-1]
    assert last.finish_reason == "stop" and last.error is None
    assert last.prompt_tokens == backend.prompt_tokens(PARIS) and last.n_generated > 2
    assert last.ttft_s > 0 and last.tokens_per_s > 0


def test_capabilities_say_what_the_server_decides(remote):
    caps = remote.capabilities()
    assert caps.per_answer_sampling == frozenset(SAMPLING_FIELDS) and not caps.live_sampling
    assert caps.memory_probe == "remote" and caps.device == remote.url
    assert not caps.continue_answers  # a chat completion always starts a new turn
    assert set(caps.kv_strategies) == set(CACHE_STRATEGIES)
    assert all(info is not None and info.params["reason"] for info in caps.kv_strategies.values())
    assert all(info is not None for info in caps.quantizations.values())
    assert remote.kv_cache_usage() == 0.0  # glmdesk serve's gauge, idle


def test_raw_prompt_and_length(remote):
    chunks = list(
        remote.stream_prompt(
            "The capital of France is", ParamsBox(SamplingParams(temperature=0, max_new_tokens=5))
        )
    )
    assert chunks[-1].finish_reason == "length" and chunks[-1].n_generated == 5
    assert "Paris" in "".join(c.text for c in chunks)


def test_stop_ends_the_answer_and_the_server_frees_the_model(remote, state):
    stop = threading.Event()
    chunks = []
    for chunk in remote.stream(
        STORY, ParamsBox(SamplingParams(temperature=0, max_new_tokens=400)), stop=stop
    ):
        chunks.append(chunk)
        if len(chunks) == 3:
            stop.set()
    assert chunks[-1].finish_reason == "cancelled" and len(chunks) == 4
    partial = "".join(c.text for c in chunks)
    assert partial.strip()
    cancelled = state.records[-1]
    after = list(remote.stream(PARIS, GREEDY))  # gets the model: the server saw the disconnect
    assert after[-1].finish_reason == "stop" and cancelled.finish_reason == "cancelled"
    assert cancelled.n_generated < 400


def test_stop_while_the_server_is_silent(remote, server, state):
    holder = create_backend(LoadSettings(remote_url=server.url))
    holder.load(LoadSettings(remote_url=server.url))
    long = holder.stream(STORY, ParamsBox(SamplingParams(temperature=0, max_new_tokens=300)))
    next(long)  # the model is busy with this answer
    stop = threading.Event()
    waiting = remote.stream(PARIS, GREEDY, stop=stop)
    stop.set()
    last = list(waiting)[-1]
    assert last.finish_reason == "cancelled" and last.n_generated == 0
    assert state.records[-1].ended == 0  # the long answer still runs: Stop did not wait for it
    long.close()
    holder.close()


def test_connection_and_model_faults_are_sentences(server):
    for url, reason in (("http://127.0.0.1:9/v1", "refused"), (f"https://127.0.0.1:{server.port}/v1", "tls")):
        with pytest.raises(GlmdeskError) as exc:
            RemoteBackend(connect_s=5).load(LoadSettings(remote_url=url))
        assert exc.value.kind == "server_unreachable" and exc.value.params["reason"] == reason
        assert url in exc.value.message
    with pytest.raises(GlmdeskError) as exc:
        RemoteBackend().load(LoadSettings(remote_url=server.url, remote_model="nope"))
    assert exc.value.kind == "remote_model_not_found" and "nope" in exc.value.message


def test_wrong_key_is_a_sentence(backend):
    from glmdesk.server.app import create_app

    settings = ServeSettings(port=0, api_key="sesame")
    srv = ServerThread(create_app(backend, settings), settings).start()
    try:
        with pytest.raises(GlmdeskError) as exc:
            RemoteBackend().load(LoadSettings(remote_url=srv.url, remote_api_key="wrong"))
        assert exc.value.kind == "server_auth_failed" and "wrong" not in exc.value.message
        ok = RemoteBackend()
        ok.load(LoadSettings(remote_url=srv.url, remote_api_key="sesame"))
        assert "Paris" in "".join(c.text for c in ok.stream(PARIS, GREEDY))
        ok.close()
    finally:
        srv.stop()


def _stalling_app(release: asyncio.Event | None = None) -> FastAPI:
    """A real OpenAI-shaped server that sends one piece, then nothing."""
    app = FastAPI()

    @app.get("/v1/models")
    async def models() -> dict:
        return {
            "object": "list",
            "data": [{"id": "staller", "object": "model", "created": 0, "owned_by": "test"}],
        }

    @app.post("/v1/chat/completions")
    async def chat() -> StreamingResponse:
        async def events():
            head = '{"id":"c","object":"chat.completion.chunk","created":0,"model":"staller","choices":'
            yield f'data: {head}[{{"index":0,"delta":{{"role":"assistant","content":"Once"}},"finish_reason":null}}]}}\n\n'
            await asyncio.sleep(30)  # ended by the client's timeout, or the server's shutdown

        return StreamingResponse(events(), media_type="text/event-stream")

    return app


def test_stalled_stream_ends_with_a_sentence_and_keeps_the_text():
    settings = ServeSettings(port=0)
    srv = ServerThread(_stalling_app(), settings).start()
    try:
        remote = RemoteBackend(stall_s=1.0)
        info = remote.load(LoadSettings(remote_url=srv.url))
        assert info.context_length == 8192  # the server does not say: the default
        chunks = list(remote.stream(PARIS, GREEDY))
        assert "".join(c.text for c in chunks) == "Once"
        assert chunks[-1].finish_reason == "error" and chunks[-1].error.kind == "server_stalled"
        remote.close()
    finally:
        srv.stop(timeout_s=2)


def test_helpers():
    assert base_url("http://gpu:8000") == "http://gpu:8000/v1"
    assert base_url("http://gpu:8000/v1/") == "http://gpu:8000/v1"
    text = (
        "# HELP vllm:kv_cache_usage_perc KV-cache usage.\n# TYPE vllm:kv_cache_usage_perc gauge\n"
        'vllm:kv_cache_usage_perc{engine="0",model_name="glm"} 0.25\n'
        'vllm:kv_cache_usage_perc{engine="1",model_name="glm"} 0.5\nvllm:num_requests_running 3\n'
    )
    assert parse_kv_usage(text) == 0.5 and parse_kv_usage("other_metric 1\n") is None
    # The text format's corners: a timestamp after the value, a quoted "} " in a label
    # value, tabs, NaN (skipped), vLLM's older name.
    assert parse_kv_usage("vllm:gpu_cache_usage_perc 0.125 1700000000000\n") == 0.125
    assert parse_kv_usage('vllm:kv_cache_usage_perc{model_name="a} \\"b\\""}\t0.75\n') == 0.75
    assert parse_kv_usage("glmdesk:kv_cache_usage_perc NaN\n") is None
    assert metrics_url("http://gpu:8000") == metrics_url("http://gpu:8000/v1/") == "http://gpu:8000/metrics"
    assert "secret" not in repr(LoadSettings(remote_url="http://h:1/v1", remote_api_key="secret"))
    with pytest.raises(ValueError, match="http:// or https://"):
        LoadSettings(remote_url="ftp://h/v1")
    with pytest.raises(ValueError, match="API key in its own field"):
        LoadSettings(remote_url="http://user:pw@h/v1")
    with pytest.raises(ValueError, match="needs the server's URL"):
        LoadSettings(engine="remote")
