"""``glmdesk serve`` through the official ``openai`` client and plain HTTP (httpx): a real
server on 127.0.0.1 with the real embedded model; nothing mocked."""

from __future__ import annotations

import threading

import httpx
import openai
import pytest

from glmdesk.core.messages import ChatMessage
from glmdesk.server.app import create_app
from glmdesk.server.config import ServeSettings
from glmdesk.server.runner import ServerThread
from tests.helpers.waiting import wait_until

PARIS = [{"role": "user", "content": "What is the capital of France?"}]
STORY = [{"role": "user", "content": "Write a long story about a dragon."}]


def client(server, key: str = "none") -> openai.OpenAI:
    return openai.OpenAI(base_url=server.url, api_key=key, max_retries=0, timeout=120)


def model_id(server) -> str:
    return client(server).models.list().data[0].id


def test_health_and_models(server, backend):
    health = httpx.get(server.url.removesuffix("/v1") + "/health", timeout=10)
    assert health.status_code == 200 and health.json()["status"] == "ok"
    models = client(server).models.list().data
    assert [m.id for m in models] == [backend.info.name]
    assert models[0].model_extra["max_model_len"] == backend.info.context_length


def test_chat_non_stream_with_usage(server, backend):
    reply = client(server).chat.completions.create(
        model=model_id(server), messages=PARIS, temperature=0, max_tokens=24
    )
    choice = reply.choices[0]
    assert "Paris" in choice.message.content and choice.message.role == "assistant"
    assert choice.finish_reason == "stop" and reply.id.startswith("chatcmpl-")
    expected_prompt = backend.prompt_tokens([ChatMessage("user", PARIS[0]["content"])])
    assert reply.usage.prompt_tokens == expected_prompt
    assert 0 < reply.usage.completion_tokens < 24
    assert reply.usage.total_tokens == reply.usage.prompt_tokens + reply.usage.completion_tokens


def test_chat_stream_pieces_finish_and_usage(server):
    stream = client(server).chat.completions.create(
        model=model_id(server),
        messages=PARIS,
        temperature=0,
        max_tokens=24,
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    assert chunks[0].choices[0].delta.role == "assistant"
    pieces = [c.choices[0].delta.content for c in chunks[1:] if c.choices and c.choices[0].delta.content]
    assert len(pieces) > 2 and "Paris" in "".join(pieces)
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert finishes == ["stop"]
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens >= len(pieces)
    assert all(c.usage is None for c in chunks[:-1])
    whole = client(server).chat.completions.create(
        model=model_id(server), messages=PARIS, temperature=0, max_tokens=24
    )
    assert "".join(pieces) == whole.choices[0].message.content


def test_stream_wire_format_ends_with_done(server):
    body = {"messages": PARIS, "temperature": 0, "max_tokens": 8, "stream": True}
    with httpx.stream("POST", server.url + "/chat/completions", json=body, timeout=120) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        lines = [line for line in response.iter_lines() if line]
    assert all(line.startswith("data: ") for line in lines)
    assert lines[-1] == "data: [DONE]" and '"usage"' not in "".join(lines)


def test_max_tokens_gives_length(server):
    c = client(server)
    reply = c.chat.completions.create(model=model_id(server), messages=STORY, temperature=0, max_tokens=5)
    assert reply.choices[0].finish_reason == "length" and reply.usage.completion_tokens == 5
    reply = c.chat.completions.create(
        model=model_id(server), messages=STORY, temperature=0, max_completion_tokens=3
    )
    assert reply.choices[0].finish_reason == "length" and reply.usage.completion_tokens == 3


def test_stop_string_cuts_the_answer(server):
    c = client(server)
    full = c.chat.completions.create(model=model_id(server), messages=PARIS, temperature=0, max_tokens=24)
    text = full.choices[0].message.content
    stop = "Paris"
    assert stop in text
    cut = c.chat.completions.create(
        model=model_id(server), messages=PARIS, temperature=0, max_tokens=24, stop=[stop, "never-there"]
    )
    assert cut.choices[0].message.content == text[: text.index(stop)]
    assert cut.choices[0].finish_reason == "stop"
    stream = c.chat.completions.create(
        model=model_id(server), messages=PARIS, temperature=0, max_tokens=24, stop="aris", stream=True
    )
    chunks = list(stream)
    shown = "".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices)
    assert shown == text[: text.index("aris")]
    assert chunks[-1].choices[0].finish_reason == "stop"


def test_raw_completion_stream_and_not(server):
    c = client(server)
    whole = c.completions.create(
        model=model_id(server), prompt="The capital of France is", temperature=0, max_tokens=6
    )
    assert whole.choices[0].finish_reason == "length" and "Paris" in whole.choices[0].text
    assert whole.usage.completion_tokens == 6 and whole.usage.prompt_tokens > 3
    stream = c.completions.create(
        model=model_id(server), prompt="The capital of France is", temperature=0, max_tokens=6, stream=True
    )
    assert "".join(ch.choices[0].text for ch in stream) == whole.choices[0].text


def test_seed_and_vllm_sampling_fields(server):
    c = client(server)
    extra = {"top_k": 20, "min_p": 0.05, "repetition_penalty": 1.1}
    kw = dict(
        model=model_id(server), messages=STORY, temperature=1.0, max_tokens=12, seed=7, extra_body=extra
    )
    first, second = c.chat.completions.create(**kw), c.chat.completions.create(**kw)
    assert first.choices[0].message.content == second.choices[0].message.content


def test_errors_are_openai_shaped(server, backend):
    c = client(server)
    with pytest.raises(openai.NotFoundError) as exc:
        c.chat.completions.create(model="no-such-model", messages=PARIS)
    assert exc.value.body["code"] == "model_not_found" and "no-such-model" in exc.value.body["message"]
    with pytest.raises(openai.BadRequestError) as exc:
        c.chat.completions.create(model=model_id(server), messages=PARIS, temperature=3)
    assert exc.value.body["param"] == "temperature" and "between 0 and 2" in exc.value.body["message"]
    long = [{"role": "user", "content": "word " * (backend.info.context_length + 10)}]
    with pytest.raises(openai.BadRequestError) as exc:
        c.chat.completions.create(model=model_id(server), messages=long, max_tokens=4)
    n = backend.prompt_tokens([ChatMessage("user", long[0]["content"])])
    message = exc.value.body["message"]
    assert str(n) in message and str(backend.info.context_length) in message
    assert exc.value.body["code"] == "context_length_exceeded"
    raw = httpx.post(
        server.url + "/chat/completions",
        content=b'{"messages": [',
        headers={"content-type": "application/json"},
    )
    assert raw.status_code == 400 and set(raw.json()["error"]) == {"message", "type", "param", "code"}
    assert "JSON" in raw.json()["error"]["message"]
    missing = httpx.post(server.url + "/chat/completions", json={"model": model_id(server)})
    assert missing.status_code == 400 and missing.json()["error"]["param"] == "messages"
    ok = c.chat.completions.create(
        model=model_id(server), messages=PARIS, temperature=0, max_tokens=2, extra_body={"frobnicate": 1}
    )
    assert ok.choices[0].finish_reason == "length"


def test_wrong_api_key_is_401(backend):
    settings = ServeSettings(port=0, api_key="sesame")
    srv = ServerThread(create_app(backend, settings), settings).start()
    try:
        with pytest.raises(openai.AuthenticationError) as exc:
            client(srv, "wrong").models.list()
        assert exc.value.status_code == 401 and exc.value.body["code"] == "invalid_api_key"
        assert [m.id for m in client(srv, "sesame").models.list().data] == [backend.info.name]
        assert httpx.get(srv.url.removesuffix("/v1") + "/health").status_code == 200
    finally:
        srv.stop()


def test_full_queue_is_429_with_retry_after(server, state):
    c = client(server)
    stream = c.chat.completions.create(
        model=model_id(server), messages=STORY, temperature=0, max_tokens=300, stream=True
    )
    try:
        next(iter(stream))  # the model is busy now
        state.turns.queue_size = 0
        with pytest.raises(openai.RateLimitError) as exc:
            c.chat.completions.create(model=model_id(server), messages=PARIS, max_tokens=2)
        assert exc.value.response.headers["retry-after"] == str(state.turns.retry_after_s)
        assert exc.value.body["code"] == "queue_full"
    finally:
        state.turns.queue_size = 4
        stream.close()


def test_disconnect_mid_answer_frees_the_model(server, state):
    c = client(server)
    stream = c.chat.completions.create(
        model=model_id(server), messages=STORY, temperature=0, max_tokens=400, stream=True
    )
    seen = 0
    for _chunk in stream:
        seen += 1
        if seen == 4:
            break
    stream.close()
    gone = state.records[-1]
    after = c.chat.completions.create(model=model_id(server), messages=PARIS, temperature=0, max_tokens=24)
    assert "Paris" in after.choices[0].message.content
    assert gone.finish_reason == "cancelled" and gone.n_generated < 400
    nxt = state.records[-1]
    assert nxt is not gone and nxt.started >= gone.ended


def test_disconnect_while_queued_leaves_the_queue_without_running(server, state):
    c, name = client(server), model_id(server)
    holder = c.chat.completions.create(
        model=name, messages=STORY, temperature=0, max_tokens=1000, stream=True
    )
    next(iter(holder))  # this answer holds the model
    held = state.records[-1]
    before, left = state.requests, state.turns.left
    # A client that gives up while it waits behind the answer: its read timeout closes the connection.
    with pytest.raises(openai.APITimeoutError):
        c.with_options(timeout=httpx.Timeout(3.0, connect=10.0)).chat.completions.create(
            model=name, messages=PARIS, temperature=0, max_tokens=24
        )
    wait_until(lambda: state.turns.left == left + 1)
    assert state.turns.waiting == 0 and state.requests == before  # dropped, never run
    assert held.ended == 0 and state.records[-1] is held

    # The next request waits behind the running answer and gets the model the moment it ends.
    replies: list = []

    def ask() -> None:
        replies.append(c.chat.completions.create(model=name, messages=PARIS, temperature=0, max_tokens=24))

    thread = threading.Thread(target=ask)
    thread.start()
    wait_until(lambda: state.turns.waiting == 1)
    holder.close()
    thread.join(240)
    assert "Paris" in replies[0].choices[0].message.content
    assert held.finish_reason == "cancelled" and state.requests == before + 1
    nxt = state.records[-1]
    assert state.records[-2] is held and nxt.started >= held.ended
    wait_until(lambda: nxt.ended > 0)  # its thread lets go of the model just after the reply
    assert nxt.finish_reason == "stop"


def test_two_clients_at_once_take_turns(server, state):
    results: dict[int, str] = {}

    def ask(i: int) -> None:
        stream = client(server).chat.completions.create(
            model=model_id(server), messages=PARIS, temperature=0, max_tokens=16, stream=True
        )
        results[i] = "".join(ch.choices[0].delta.content or "" for ch in stream if ch.choices)

    before = state.requests
    threads = [threading.Thread(target=ask, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(240)
    assert len(results) == 2 and results[0] == results[1] and "Paris" in results[0]
    assert state.requests == before + 2
    a, b = sorted(list(state.records)[-2:], key=lambda r: r.started)
    wait_until(lambda: b.ended > 0)  # its thread lets go of the model just after the reply
    assert a.finish_reason == b.finish_reason == "stop" and b.started >= a.ended


def test_metrics_gauge(server, state):
    text = httpx.get(server.url.removesuffix("/v1") + "/metrics").text
    assert "glmdesk:kv_cache_usage_perc 0.000000" in text
    assert f"glmdesk:requests_total {state.requests}" in text
