"""``glmdesk serve`` under bad input (issue 30 §4): a body-size limit answered before
the rest of the body is read, prompts far past the context refused before tokenizing,
lone surrogates in every text field never a 500, ``echo`` streamed, error ``param``
naming the client's field with ``code`` always set, the API key checked before the body
is parsed. Real servers on 127.0.0.1 over the real embedded model and the tiny GLM-4."""

from __future__ import annotations

import json
import select
import socket
import threading
import time

import httpx
import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from glmdesk.server.app import create_app
from glmdesk.server.config import ServeSettings, default_max_body_bytes
from glmdesk.server.runner import ServerThread
from glmdesk.server.state import MAX_CHARS_PER_TOKEN

from .conftest import WEATHER

LIMIT = 64 * 1024


@pytest.fixture(scope="module")
def small(backend):
    """A server over the embedded model that reads bodies of at most :data:`LIMIT` bytes."""
    settings = ServeSettings(port=0, max_body_bytes=LIMIT)
    srv = ServerThread(create_app(backend, settings), settings).start()
    yield srv
    srv.stop()


def raw_post(port: int, path: str, headers: dict[str, str], chunks=()) -> tuple[int, dict, dict]:
    """POST over a plain socket, sending ``chunks`` only while the server has not answered;
    returns (status, headers, JSON body) of its answer, read until it closes."""
    head = f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    head += "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        sock.sendall(head.encode())
        for chunk in chunks:
            if select.select([sock], [], [], 0)[0]:
                break  # the server answered: send no more
            sock.sendall(chunk)
        data = b""
        while not data.endswith(b"}") or b"\r\n\r\n" not in data:
            more = sock.recv(65536)
            if not more:
                break
            data += more
    head_bytes, _, body = data.partition(b"\r\n\r\n")
    lines = head_bytes.decode().split("\r\n")
    fields = dict(line.split(": ", 1) for line in lines[1:])
    return int(lines[0].split()[1]), {k.lower(): v for k, v in fields.items()}, json.loads(body)


def test_a_body_declared_over_the_limit_is_413_before_it_is_sent(small):
    # Only the headers go out: the answer cannot have waited for the 100 MB.
    status, headers, body = raw_post(
        small.port,
        "/v1/chat/completions",
        {"Content-Type": "application/json", "Content-Length": str(100 * 1024 * 1024)},
    )
    assert status == 413
    error = body["error"]
    assert error["code"] == "request_too_large" and error["type"] == "invalid_request_error"
    assert f"{LIMIT:,} bytes" in error["message"] and "104,857,600 bytes" in error["message"]


def test_a_chunked_body_is_counted_while_it_arrives(small):
    piece = b"x" * 8192
    chunks = [b"2000\r\n" + piece + b"\r\n"] * 64  # 512 KiB, eight times the limit
    status, _headers, body = raw_post(
        small.port,
        "/v1/completions",
        {"Content-Type": "application/json", "Transfer-Encoding": "chunked"},
        [b"2000\r\n" + b'{"prompt": "' + piece[12:] + b"\r\n", *chunks],
    )
    assert status == 413 and body["error"]["code"] == "request_too_large"
    # A client that writes its whole body before it reads (the openai client) gets the 413 too.
    c = openai.OpenAI(base_url=small.url, api_key="none", max_retries=0, timeout=120)
    with pytest.raises(openai.APIStatusError) as caught:
        c.completions.create(model=None, prompt="word " * (4 * LIMIT), max_tokens=1)
    assert caught.value.status_code == 413 and "--max-body-mib" in caught.value.body["message"]
    under = httpx.post(small.url + "/completions", json={"prompt": "Hi", "max_tokens": 1}, timeout=120)
    assert under.status_code == 200 and under.json()["choices"][0]["finish_reason"] == "length"


def _wait_for(condition, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "the server did not get there in time"
        threading.Event().wait(0.02)


def _answer(sock: socket.socket) -> tuple[int, dict]:
    data = b""
    while b"\r\n\r\n" not in data or not data.endswith(b"}"):
        more = sock.recv(65536)
        assert more, "the server closed the connection without an answer"
        data += more
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body)


def test_slow_bodies_hold_up_no_small_request_and_time_out(backend):
    """Clients that declare large bodies and send nothing fill the large-body budget: a
    small request is answered meanwhile, and each slow one gets 408 once its time is up."""
    settings = ServeSettings(port=0, max_body_bytes=8 * 2**20)
    srv = ServerThread(create_app(backend, settings), settings).start()
    bodies = srv.server.config.app.state.glmdesk.bodies
    bodies.timeout_s = 2.0
    head = f"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: {bodies.limit}\r\n\r\n"
    slow = [socket.create_connection(("127.0.0.1", srv.port), timeout=60) for _ in range(5)]
    try:
        for sock in slow:
            sock.sendall(head.encode())
        _wait_for(lambda: bodies.held == bodies.budget)  # four fit; the fifth waits for room
        quick = httpx.post(srv.url + "/completions", json={"prompt": "Hi", "max_tokens": 1}, timeout=60)
        assert quick.status_code == 200 and bodies.held == bodies.budget
        for sock in slow:
            status, body = _answer(sock)
            assert status == 408 and body["error"]["code"] == "request_timeout"
        assert bodies.held == 0
    finally:
        for sock in slow:
            sock.close()
        srv.stop()


def test_the_default_limit_grows_with_the_context(state, backend):
    assert state.body_limit == default_max_body_bytes(backend.info.context_length)
    assert default_max_body_bytes(8192) == 32 * 8192 + 2**20
    with pytest.raises(ValueError, match="body-size limit"):
        ServeSettings(max_body_bytes=10)


def test_a_prompt_far_past_the_context_is_refused_before_tokenizing(backend):
    """A prompt with more characters than any tokenizer's tokens could fit in the context
    is refused by its length in characters, not tokens (it is never tokenized)."""
    most = backend.info.context_length * MAX_CHARS_PER_TOKEN
    settings = ServeSettings(port=0, max_body_bytes=4 * most)
    srv = ServerThread(create_app(backend, settings), settings).start()
    try:
        for path, body in (
            ("/completions", {"prompt": "a" * (most + 1)}),
            ("/chat/completions", {"messages": [{"role": "user", "content": "a" * (most + 1)}]}),
        ):
            response = httpx.post(srv.url + path, json=body, timeout=120)
            error = response.json()["error"]
            assert response.status_code == 400 and error["code"] == "context_length_exceeded"
            assert f"{most + 1:,} characters" in error["message"]
            assert error["param"] == ("prompt" if path == "/completions" else "messages")
    finally:
        srv.stop()


def test_prompts_are_tokenized_one_at_a_time(server, backend, monkeypatch):
    """Two requests at once: the second prompt is tokenized only after the first (each
    count waits up to 1 s for another to start beside it; none does)."""
    count, active, most, entered = backend.prompt_tokens, [0], [0], threading.Event()
    lock = threading.Lock()

    def counting(messages):
        with lock:
            active[0] += 1
            most[0] = max(most[0], active[0])
        entered.set()
        entered.clear()
        entered.wait(1.0)  # another count starting meanwhile would wake this one
        try:
            return count(messages)
        finally:
            with lock:
                active[0] -= 1

    monkeypatch.setattr(backend, "prompt_tokens", counting)
    codes: list[int] = []

    def ask() -> None:
        body = {"messages": [{"role": "user", "content": "word " * 50}], "max_tokens": 1}
        codes.append(httpx.post(server.url + "/chat/completions", json=body, timeout=120).status_code)

    threads = [threading.Thread(target=ask) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert codes == [200, 200] and most[0] == 1


#: Lone surrogates: high and low halves, alone (JSON's "\ud83d" escapes decode to them).
LONE = st.sampled_from(["\ud83d", "\ud800", "\udbff", "\udc00", "\ude00", "\udfff"])


@st.composite
def broken_text(draw) -> str:
    """Some text with a lone surrogate in it."""
    text = draw(st.text(alphabet=st.characters(codec="utf-8"), max_size=6))
    at = draw(st.integers(0, len(text)))
    return text[:at] + draw(LONE) + text[at:]


ASK = [{"role": "user", "content": "Hi"}]


def _tool(name: str = "get_weather", description: str = "weather", prop: str = "city") -> dict:
    params = {"type": "object", "properties": {prop: {"type": "string", "description": description}}}
    return {"type": "function", "function": {"name": name, "description": description, "parameters": params}}


def _called(arguments: str, result: str) -> list[dict]:
    call = {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": arguments}}
    return ASK + [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": result},
    ]


#: (endpoint, body with the text ``t`` in one field), every text field a client sends.
FIELDS = [
    ("/completions", lambda t: {"prompt": t}),
    ("/completions", lambda t: {"prompt": [t], "echo": True}),
    ("/completions", lambda t: {"prompt": "Hi", "stop": [t, "x"]}),
    ("/completions", lambda t: {"prompt": "Hi", "model": t}),
    ("/chat/completions", lambda t: {"messages": [{"role": "user", "content": t}]}),
    ("/chat/completions", lambda t: {"messages": [{"role": "system", "content": t}, *ASK]}),
    (
        "/chat/completions",
        lambda t: {"messages": [{"role": "user", "content": [{"type": "text", "text": t}]}]},
    ),
    ("/chat/completions", lambda t: {"messages": [{"role": t, "content": "Hi"}]}),
    ("/chat/completions", lambda t: {"messages": ASK, "stop": t}),
    ("/chat/completions", lambda t: {"messages": ASK, "tools": [_tool(description=t)]}),
    ("/chat/completions", lambda t: {"messages": ASK, "tools": [_tool(name=t)]}),
    ("/chat/completions", lambda t: {"messages": ASK, "tools": [_tool(prop=t)]}),
    (
        "/chat/completions",
        lambda t: {
            "messages": ASK,
            "tools": [WEATHER],
            "tool_choice": {"type": "function", "function": {"name": t}},
        },
    ),
    ("/chat/completions", lambda t: {"messages": _called(json.dumps({"city": t}), t), "tools": [WEATHER]}),
    ("/chat/completions", lambda t: {"messages": [{"role": "user", "content": "Hi", "name": t}]}),
]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(field=st.sampled_from(FIELDS), text=broken_text(), raw=st.booleans())
def test_lone_surrogates_in_any_field_are_never_a_500(glm_server, field, text, raw):
    path, make = field
    body = make(text) | {"max_tokens": 2, "temperature": 0}
    # As a \\ud83d escape, or as the surrogate's own three bytes (Python's decoder takes both).
    content = (
        json.dumps(body, ensure_ascii=False).encode("utf-8", "surrogatepass") if raw else json.dumps(body)
    )
    response = httpx.post(
        glm_server.url + path, content=content, headers={"content-type": "application/json"}, timeout=120
    )
    assert response.status_code in (200, 400, 404), response.text
    answer = response.json()
    if response.status_code == 200:
        assert answer["choices"][0]["finish_reason"] in ("stop", "length", "tool_calls")
    else:
        error = answer["error"]
        assert set(error) == {"message", "type", "param", "code"} and error["code"] and error["message"]


#: Any JSON value (small).
ANY_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6,
)
CHAT_KEYS = ["messages", "tools", "tool_choice", "stop", "stream", "stream_options", "temperature"]
CHAT_KEYS += ["top_p", "top_k", "min_p", "repetition_penalty", "max_tokens", "max_completion_tokens"]
CHAT_KEYS += ["seed", "n", "model"]
MESSAGE_KEYS = ["role", "content", "tool_calls", "tool_call_id", "name"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    where=st.sampled_from(["chat", "message", "call", "completion"]),
    key=st.sampled_from(CHAT_KEYS + MESSAGE_KEYS + ["prompt", "echo"]),
    value=ANY_JSON,
)
def test_any_json_in_any_field_is_a_200_or_a_4xx(glm_server, where, key, value):
    """Every body the JSON decoder accepts (NaN and Infinity too) gets an answer or an
    OpenAI-shaped 4xx."""
    if where == "chat":
        path, body = "/chat/completions", {"messages": ASK, "tools": [WEATHER], key: value}
    elif where == "message":
        path, body = "/chat/completions", {"messages": [ASK[0] | {key: value}]}
    elif where == "call":
        path, body = (
            "/chat/completions",
            {"messages": _called(json.dumps(value), "sunny"), "tools": [WEATHER]},
        )
        body["messages"][1]["tool_calls"][0]["function"][key] = value
    else:
        path, body = "/completions", {"prompt": "Hi", key: value}
    body.setdefault("max_tokens", 2)
    response = httpx.post(
        glm_server.url + path,
        content=json.dumps(body),
        headers={"content-type": "application/json"},
        timeout=120,
    )
    assert response.status_code in (200, 400, 404), response.text
    if response.headers["content-type"].startswith("text/event-stream"):
        assert response.status_code == 200 and response.text.rstrip().endswith("data: [DONE]")
        assert '"error"' not in response.text, response.text
    elif response.status_code != 200:
        error = response.json()["error"]
        assert set(error) == {"message", "type", "param", "code"} and error["code"] and error["message"]


def test_a_lone_surrogate_is_read_as_the_replacement_character(server):
    body = {"prompt": "abc\ud83d", "echo": True, "max_tokens": 2, "temperature": 0}
    response = httpx.post(
        server.url + "/completions",
        content=json.dumps(body),  # "abc\\ud83d": the openai client cannot send it at all
        headers={"content-type": "application/json"},
        timeout=120,
    )
    assert response.status_code == 200 and response.json()["choices"][0]["text"].startswith("abc\ufffd")


def test_echo_streams_the_prompt_first(server):
    c = openai.OpenAI(base_url=server.url, api_key="none", max_retries=0, timeout=120)
    prompt = "The capital of France is"
    kw = dict(model=None, prompt=prompt, echo=True, max_tokens=4, temperature=0)
    chunks = [ch.choices[0].text for ch in c.completions.create(stream=True, **kw)]
    assert chunks[0] == prompt and len(chunks) > 2
    assert "".join(chunks) == c.completions.create(**kw).choices[0].text


def _error(response: httpx.Response) -> dict:
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"} and error["code"]
    return error


def test_param_names_the_clients_field_and_code_is_always_set(server):
    def post(body, path: str = "/chat/completions") -> dict:
        response = httpx.post(server.url + path, json=body, timeout=120)
        assert response.status_code == 400
        return _error(response)

    assert post({"messages": [{"role": "user", "content": 5}]})["param"] == "messages[0].content"
    assert post({"messages": [ASK[0], {"role": "user", "content": [{"text": "x"}]}]})["param"] == (
        "messages[1].content[0].type"
    )
    assert post({"messages": ASK, "stop": [1]})["param"] == "stop[0]"
    assert post({"messages": ASK, "temperature": "hot"})["param"] == "temperature"
    nan = httpx.post(
        server.url + "/chat/completions",
        content=b'{"messages": [{"role": "user", "content": "Hi"}], "temperature": NaN}',
        headers={"content-type": "application/json"},
    )
    assert nan.status_code == 400 and _error(nan)["param"] == "temperature"
    assert post({"messages": [{"role": "user", "content": "Hi"}, {"role": "robot", "content": "x"}]})[
        "param"
    ] == ("messages[1].role")
    assert "JSON object" in post(["not", "an", "object"])["message"]
    missing = post({}, "/completions")
    assert missing["param"] == "prompt" and missing["message"] == "The request needs the field prompt."
    nowhere = httpx.post(server.url + "/nowhere", json={})
    assert nowhere.status_code == 404 and _error(nowhere)["code"] == "not_found"


def test_the_api_key_is_checked_before_the_body_is_read(backend):
    settings = ServeSettings(port=0, api_key="sesame")
    srv = ServerThread(create_app(backend, settings), settings).start()
    try:
        url, broken = srv.url + "/chat/completions", b'{"messages": ['
        headers = {"content-type": "application/json"}
        no_key = httpx.post(url, content=broken, headers=headers)
        assert no_key.status_code == 401 and _error(no_key)["code"] == "invalid_api_key"
        big = raw_post(srv.port, "/v1/completions", headers | {"Content-Length": str(2**30)})
        assert big[0] == 401
        keyed = httpx.post(url, content=broken, headers=headers | {"authorization": "Bearer sesame"})
        assert keyed.status_code == 400 and _error(keyed)["code"] == "invalid_json"
    finally:
        srv.stop()
