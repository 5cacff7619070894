"""A tool call streams while it is written: the real decode loop on tiny ChatGLM3 and
GLM-4 models (a test-only logits processor forces the call's tokens) gives chunks that
name the pending tool and carry the call's text so far; ``glmdesk serve``'s delta
builder turns those real chunks into ``delta.tool_calls`` (JSON arguments piece by
piece for GLM-4, once parsed for ChatGLM3)."""

from __future__ import annotations

import json
import threading

import pytest

from glmdesk.chat.reader import ChunkReader
from glmdesk.core.messages import ChatMessage
from glmdesk.core.settings import ParamsBox, SamplingParams
from glmdesk.core.tools import INTERPRETER, FunctionSpec, ToolSet
from glmdesk.engine.decode.generate import stream_answer
from glmdesk.server.tool_stream import JsonObjectEnd, ToolCallStream, json_prefix
from tests.helpers import tool_models as tm

TOOLS = ToolSet((FunctionSpec("get_weather", "Weather of a city"),), interpreter=True)
ASK = [ChatMessage("system", "", tools=TOOLS), ChatMessage("user", "北京天气怎么样？")]


@pytest.fixture(scope="module")
def g4(glm4_tokenizer_folder):
    return tm.tiny_glm4(glm4_tokenizer_folder)


def special(loaded, name: str) -> int:
    tok = loaded.tokenizer
    return tok.special_id(name) if hasattr(tok, "special_id") else tok.special_ids[name]


def stream(loaded, script: list[int], messages=ASK, stop=None, max_new=200):
    forcer = tm.ForceTokens([script])
    loaded.logits_processors = lambda: (forcer,)
    box = ParamsBox(SamplingParams(temperature=0.0, max_new_tokens=max_new))
    return stream_answer(loaded, messages, box, stop=stop)


def live_texts(chunks, name: str) -> list[str]:
    """The call's text of each pending chunk, checked to only grow."""
    texts = [c.tool_text for c in chunks if c.tool_pending is not None]
    assert {c.tool_pending for c in chunks if c.tool_pending is not None} == {name}
    assert all(b.startswith(a) for a, b in zip(texts, texts[1:], strict=False))
    assert all(c.tool_text == "" for c in chunks if c.tool_pending is None)
    return texts


def deltas(chunks) -> tuple[list[list[dict]], ToolCallStream]:
    """What glmdesk serve sends per chunk, read by the answer run (the last entry: for
    the final chunk)."""
    reader, calls = ChunkReader(), ToolCallStream()
    return [calls.update(reader.read(c)) for c in chunks], calls


def test_glm4_call_text_grows_and_its_json_arguments_stream_as_written(g4):
    arguments = '{"city": "北京", "unit": "celsius"}'
    obs = special(g4, "<|observation|>")
    chunks = list(stream(g4, g4.tokenizer.encode("get_weather\n" + arguments) + [obs]))
    texts = live_texts(chunks, "get_weather")
    assert len(set(texts)) >= 5 and texts[-1] == arguments  # one step per token, the whole call at last
    assert "".join(c.text for c in chunks) == "" and chunks[-1].finish_reason == "tool_calls"

    sent, calls = deltas(chunks)
    flat = [d for step in sent for d in step]
    assert flat[0] == {
        "index": 0,
        "id": calls.id,
        "type": "function",
        "function": {"name": "get_weather", "arguments": ""},
    }
    pieces = [d["function"]["arguments"] for d in flat[1:]]
    assert "".join(pieces) == arguments and json.loads("".join(pieces)) == chunks[-1].tool_call.arguments
    # The head went out with the first pending chunk; the arguments while written, not at the end.
    first = next(i for i, c in enumerate(chunks) if c.tool_pending)
    assert sent[first][0]["id"] == calls.id and sum(1 for s in sent[:-1] for _ in s) >= 5
    assert sent[-1] == []


def test_chatglm3_call_text_grows_and_its_arguments_go_once_parsed(chatglm3_loaded):
    written = "```python\ntool_call(city='北京')\n```"
    obs = special(chatglm3_loaded, "<|observation|>")
    chunks = list(
        stream(chatglm3_loaded, chatglm3_loaded.tokenizer.encode("get_weather\n" + written) + [obs])
    )
    texts = live_texts(chunks, "get_weather")
    assert len(set(texts)) >= 5 and texts[-1] == written
    assert chunks[-1].finish_reason == "tool_calls"
    sent, _calls = deltas(chunks)
    assert [len(s) for s in sent[:-1] if s] == [1]  # the head only, while written
    assert sent[-1] == [{"index": 0, "function": {"arguments": '{"city": "北京"}'}}]


def test_interpreter_code_streams_after_the_text_before_it(g4):
    obs, seg = special(g4, "<|observation|>"), special(g4, "<|assistant|>")
    code = "```python\nprint(1 + 2)\n```"
    script = g4.tokenizer.encode("\n") + g4.tokenizer.encode("我来算。") + [seg]
    chunks = list(stream(g4, script + g4.tokenizer.encode("python\n" + code) + [obs]))
    texts = live_texts(chunks, INTERPRETER)
    assert texts[-1] == code and len(set(texts)) >= 3
    first = next(i for i, c in enumerate(chunks) if c.tool_pending)
    assert "".join(c.text for c in chunks[:first]) == "我来算。"
    assert chunks[-1].tool_call.code == "print(1 + 2)"


def test_stop_while_a_call_is_written_keeps_it_as_text_with_a_note(g4):
    """Stop mid-call: the call is not run, nor kept as a call; its text so far is the
    answer's text (cancelled), with the note saying why (what the history stores)."""
    obs = special(g4, "<|observation|>")
    stop = threading.Event()
    chunks = []
    for chunk in stream(
        g4, g4.tokenizer.encode('get_weather\n{"city": "北京", "unit": "celsius"}') + [obs], stop=stop
    ):
        chunks.append(chunk)
        if chunk.tool_pending and len(chunk.tool_text) >= 6:
            stop.set()
    last = chunks[-1]
    assert last.finish_reason == "cancelled" and last.tool_call is None and last.tool_pending is None
    written = [c.tool_text for c in chunks if c.tool_pending][-1]
    assert "".join(c.text for c in chunks) == "get_weather\n" + written
    assert last.notice.kind == "tool_call_invalid"


@pytest.mark.parametrize(
    ("text", "sendable"),
    [
        ('{"city": "北', '{"city": "北'),
        ('  {"a": [1, {"b": "}"}]', '{"a": [1, {"b": "}"}]'),
        ('{"a": 1}\n```', '{"a": 1}'),  # nothing after the object
        ('{"a": 1, ', '{"a": 1,'),  # trailing whitespace waits
        ('{"city": 北京}', ""),  # not a JSON prefix: nothing more goes out
        ("```json\n{", ""),
        ("tool_call(city='x')", ""),
    ],
)
def test_json_prefix(text, sendable):
    assert json_prefix(text) == sendable


def test_json_prefix_with_a_kept_scanner_equals_a_fresh_one_on_every_prefix():
    text = ' {"q": "a \\"}\\" b", "n": [1, {"m": "]"}], "ok": true}\n```'
    scan = JsonObjectEnd()
    got = [json_prefix(text[:i], scan) for i in range(len(text) + 1)]
    assert got == [json_prefix(text[:i]) for i in range(len(text) + 1)]
    assert got[-1] == text.strip().removesuffix("```").strip()


def test_chatglm3_call_through_glmdesk_serve_and_the_openai_client(chatglm3_loaded):
    """ChatGLM3 end to end: a real ``glmdesk serve`` on 127.0.0.1 over the tiny ChatGLM3
    model, the official ``openai`` client; the streamed call (its arguments sent once
    parsed) accumulates to the non-stream answer's call."""
    import openai

    from glmdesk.engine.backends.transformers.backend import TransformersBackend
    from glmdesk.server.app import create_app
    from glmdesk.server.config import ServeSettings
    from glmdesk.server.runner import ServerThread

    written = "```python\ntool_call(city='北京', days=3)\n```"
    script = chatglm3_loaded.tokenizer.encode("get_weather\n" + written) + [
        special(chatglm3_loaded, "<|observation|>")
    ]
    tools = [{"type": "function", "function": {"name": "get_weather", "description": "Weather of a city"}}]
    ask = [{"role": "user", "content": "北京天气怎么样？"}]
    settings = ServeSettings(port=0, queue_size=4)
    server = ServerThread(create_app(TransformersBackend(chatglm3_loaded), settings), settings).start()
    try:
        client = openai.OpenAI(base_url=server.url, api_key="none", max_retries=0, timeout=120)
        chatglm3_loaded.logits_processors = lambda: (tm.ForceTokens([script]),)
        whole = client.chat.completions.create(model="tiny", messages=ask, tools=tools, temperature=0)
        choice = whole.choices[0]
        assert choice.finish_reason == "tool_calls" and not choice.message.content
        (call,) = choice.message.tool_calls
        assert call.function.name == "get_weather"
        assert json.loads(call.function.arguments) == {"city": "北京", "days": 3}

        chatglm3_loaded.logits_processors = lambda: (tm.ForceTokens([script]),)
        with client.chat.completions.stream(model="tiny", messages=ask, tools=tools, temperature=0) as events:
            final = events.get_final_completion()
        streamed = final.choices[0]
        assert streamed.finish_reason == "tool_calls"
        (again,) = streamed.message.tool_calls
        assert again.function.name == "get_weather"
        assert json.loads(again.function.arguments) == json.loads(call.function.arguments)
    finally:
        server.stop()
