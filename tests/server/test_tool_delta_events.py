"""``delta.tool_calls`` from the answer run's tool-call events (no model, no server)."""

from __future__ import annotations

from glmdesk.chat.reader import ChunkReader
from glmdesk.core.parts import TextPart, ToolCallPart
from glmdesk.core.tools import ToolCall
from glmdesk.engine.chunk import GenerationChunk
from glmdesk.server.tool_stream import ToolCallStream

PARIS = ToolCall("get_weather", {"city": "Paris"}, raw='{"city": "Paris"}', call_id="call_paris")


def pending(text: str) -> GenerationChunk:
    return GenerationChunk(parts=(ToolCallPart("get_weather", text),))


def called(*calls: ToolCall) -> GenerationChunk:
    return GenerationChunk(finish_reason="tool_calls", tool_call=calls[0], tool_calls=calls)


def sent(chunks) -> list[dict]:
    reader, stream = ChunkReader(), ToolCallStream()
    return [d for c in chunks for d in stream.update(reader.read(c))]


def test_json_arguments_stream_while_written_and_nothing_is_sent_twice():
    deltas = sent([pending('{"ci'), pending('{"city": "Par'), pending('{"city": "Paris"}'), called(PARIS)])
    head, *pieces = deltas
    assert head["index"] == 0 and head["function"] == {"name": "get_weather", "arguments": ""}
    assert "".join(p["function"]["arguments"] for p in pieces) == '{"city": "Paris"}'
    assert {p["index"] for p in pieces} == {0}


def test_a_call_never_shown_pending_goes_out_whole_with_its_own_id():
    deltas = sent([GenerationChunk(parts=(TextPart("Checking."),)), called(PARIS)])
    assert deltas[0] == {
        "index": 0,
        "id": "call_paris",
        "type": "function",
        "function": {"name": "get_weather", "arguments": ""},
    }
    assert deltas[1] == {"index": 0, "function": {"arguments": '{"city": "Paris"}'}}


def test_after_a_call_released_as_text_the_next_call_takes_the_next_index():
    rome = ToolCall("get_weather", {"city": "Rome"}, raw='{"city": "Rome"}')
    chunks = [
        pending("{oops"),
        GenerationChunk(parts=(TextPart("get_weather {oops"),)),
        pending('{"city": "Rome"}'),
        called(rome),
    ]
    deltas = sent(chunks)
    heads = [d for d in deltas if "id" in d]
    assert [h["index"] for h in heads] == [0, 1]
    assert all(d["index"] == 1 for d in deltas[deltas.index(heads[1]) :])
