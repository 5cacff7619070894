"""``glmdesk serve`` on the llama.cpp engine keeps the KV cache between requests
(issue 21): a request that extends the previous one prefills only its new tokens.
Real server on 127.0.0.1, real embedded GGUF, the official ``openai`` client."""

from __future__ import annotations

import json

import httpx
import openai
import pytest

from glmdesk.core.messages import ChatMessage
from glmdesk.core.settings import LoadSettings, ParamsBox, SamplingParams
from glmdesk.engine.backends.llamacpp.backend import LlamaCppBackend
from glmdesk.server.app import create_app
from glmdesk.server.config import ServeSettings
from glmdesk.server.runner import ServerThread
from tests.helpers.waiting import wait_until

SYSTEM = {"role": "system", "content": "You are a helpful assistant."}


@pytest.fixture(scope="module")
def llama():
    b = LlamaCppBackend()
    b.load(LoadSettings(engine="llamacpp", threads=1))
    yield b
    b.close()


@pytest.fixture(scope="module")
def served(llama):
    settings = ServeSettings(port=0, queue_size=4)
    srv = ServerThread(create_app(llama, settings), settings).start()
    yield srv
    srv.stop()


def ask(server, messages: list[dict]) -> str:
    client = openai.OpenAI(base_url=server.url, api_key="none", max_retries=0, timeout=120)
    reply = client.chat.completions.create(
        model=client.models.list().data[0].id, messages=messages, temperature=0, max_tokens=8
    )
    return reply.choices[0].message.content


def test_serve_on_llama_cpp_prefills_only_the_new_tokens(served, llama):
    first = [SYSTEM, {"role": "user", "content": "Name a colour."}]
    colour = ask(served, first)
    # the answer's thread keeps the cache just after the reply has gone out
    wait_until(lambda: llama.kept_kv_bytes() > 0)
    assert llama.model.kv_pool.keys() == ["serve"]
    context = llama.model._context
    before = context.n_decoded
    second = first + [{"role": "assistant", "content": colour}, {"role": "user", "content": "And a fruit?"}]
    fruit = ask(served, second)
    evaluated = context.n_decoded - before
    messages = [ChatMessage(m["role"], m["content"]) for m in second]
    prompt = llama.prompt_tokens(messages)
    # only the new turn's tokens (and the answer's) were evaluated, not the prompt again
    assert evaluated < prompt - 20
    # the same answer as a fresh prefill of the whole conversation
    fresh = list(llama.stream(messages, ParamsBox(SamplingParams(temperature=0.0, max_new_tokens=8))))
    assert fresh[-1].reused_tokens == 0 and fruit == "".join(c.text for c in fresh)


def test_a_lone_surrogate_in_a_raw_prompt_is_answered(served, llama):
    """``"abc\\ud83d"`` was a 500 with llama.cpp's tokenizer's traceback; now it reads as U+FFFD."""
    assert llama.prompt_tokens("abc\ud83d") == llama.prompt_tokens("abc\ufffd")
    body = {"prompt": "abc\ud83d", "max_tokens": 2, "temperature": 0, "echo": True}
    response = httpx.post(
        served.url + "/completions",
        content=json.dumps(body),
        headers={"content-type": "application/json"},
        timeout=120,
    )
    assert response.status_code == 200 and response.json()["choices"][0]["text"].startswith("abc\ufffd")
