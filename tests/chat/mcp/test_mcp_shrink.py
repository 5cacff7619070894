"""A huge answer's long strings are cut before anything parses it: the JSON stays valid,
the cut says how long the string was, keys and images are not cut in half, and the HTTP
transport hands the SDK only the cut body (JSON and server-sent events)."""

from __future__ import annotations

import asyncio
import gzip
import json

import httpx2
from mcp.types import CallToolResult, TextContent

from glmdesk.chat.mcp.results import tool_result
from glmdesk.chat.mcp.shrink import shrink_json, strip_marks
from glmdesk.chat.mcp.transport import capped_client


def _answer(text: str, **more) -> dict:
    return {"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": text}], **more}}


def test_a_short_answer_is_left_as_it_is():
    raw = json.dumps(_answer('short "quoted" \\ text é')).encode()
    assert shrink_json(raw, 1000, 1000) == raw


def test_a_long_string_keeps_its_start_and_the_count_of_the_whole():
    text = 'é"\\\n' * 10 + "x" * 5000  # escapes and a two-byte character before the long run
    for ascii_only in (True, False):
        raw = json.dumps(_answer(text, structuredContent={"result": text}), ensure_ascii=ascii_only).encode()
        out = json.loads(shrink_json(raw, 100, 1000))
        kept, left_out = strip_marks(out["result"]["content"][0]["text"])
        assert text.startswith(kept) and 100 // 6 <= len(kept) <= 100  # an escape: up to 6 bytes
        assert len(kept) + left_out == len(text)
        assert out["result"]["structuredContent"]["result"] == out["result"]["content"][0]["text"]
        assert out["jsonrpc"] == "2.0" and out["id"] == 7


def test_keys_are_never_cut_and_images_are_kept_whole_or_dropped():
    long_key = "k" * 500
    doc = {
        long_key: "v",
        "content": [
            {"type": "image", "data": "A" * 800, "mimeType": "image/png"},
            {"type": "image", "data": "B" * 3000, "mimeType": "image/png"},
        ],
    }
    out = json.loads(shrink_json(json.dumps(doc).encode(), 100, 1000))
    assert out[long_key] == "v"
    assert out["content"][0]["data"] == "A" * 800 and out["content"][1]["data"] == ""


def test_text_that_is_not_json_passes_unchanged_from_where_it_breaks():
    raw = b'{"a": "' + b"x" * 500  # never closed
    assert shrink_json(raw, 100, 100) == raw


def test_the_models_note_counts_what_the_transport_cut():
    text = "y" * 300_000
    raw = json.dumps(_answer(text, structuredContent={"result": text})).encode()
    result = json.loads(shrink_json(raw, 100_000, 1000))["result"]
    read = tool_result(CallToolResult.model_validate(result), limit=1000)
    assert read.content.startswith("y" * 1000)
    assert read.content.endswith("[The result was cut: 299,000 of 300,000 characters were left out.]")
    assert "\x00" not in read.content and read.content.count("[The result was cut") == 1


def test_structured_content_alone_is_written_as_json_with_its_strings_cut():
    result = CallToolResult(
        content=[TextContent(type="text", text="done")], structured_content={"log": "z" * 5000}
    )
    read = tool_result(result, limit=2000)
    assert read.content.startswith('done\n{"log": "zzz') and len(read.content) < 2200


asked: list[str] = []  # the Accept-Encoding of the last request


class _Chunks(httpx2.AsyncByteStream):
    """A body that arrives in pieces, as from the network."""

    def __init__(self, body: bytes, size: int = 7000) -> None:
        self.body, self.size = body, size

    async def __aiter__(self):
        for at in range(0, len(self.body), self.size):
            yield self.body[at : at + self.size]


def _through_transport(body: bytes, content_type: str, encoding: str | None = None) -> tuple[bytes, dict]:
    def answer(request: httpx2.Request) -> httpx2.Response:
        headers = {"content-type": content_type, "content-length": str(len(body))}
        if encoding:
            headers["content-encoding"] = encoding
        return httpx2.Response(200, headers=headers, stream=_Chunks(body))

    async def fetch() -> tuple[bytes, dict]:
        asked.append("")
        client = capped_client(limit=1000, blob_limit=1000, transport=httpx2.MockTransport(answer))
        async with client:
            response = await client.post("http://server.invalid/mcp", json={})
            asked[0] = response.request.headers["accept-encoding"]
            return await response.aread(), dict(response.headers)

    return asyncio.run(fetch())


def test_the_transport_cuts_a_json_answer_before_the_sdk_reads_it():
    body = json.dumps(_answer("q" * 5_000_000)).encode()
    seen, headers = _through_transport(body, "application/json")
    assert len(seen) < 1200 and "content-length" not in headers and asked[-1] == "identity"
    kept, left_out = strip_marks(json.loads(seen)["result"]["content"][0]["text"])
    assert kept == "q" * 1000 and left_out == 4_999_000


def test_the_transport_cuts_a_long_event_and_keeps_the_others():
    small = json.dumps({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}})
    big = json.dumps(_answer("w" * 50_000))
    stream = f"event: message\ndata: {small}\n\nevent: message\ndata: {big}\n\n".encode()
    seen, _headers = _through_transport(stream, "text/event-stream")
    events = [block for block in seen.decode().split("\n\n") if block]
    assert events[0] == f"event: message\ndata: {small}"
    data = json.loads(events[1].split("data: ", 1)[1])
    assert strip_marks(data["result"]["content"][0]["text"]) == ("w" * 1000, 49_000)


def test_a_compressed_answer_is_passed_on_unchanged():
    body = gzip.compress(json.dumps(_answer("g" * 5000)).encode())
    seen, _headers = _through_transport(body, "application/json", encoding="gzip")
    assert json.loads(seen)["result"]["content"][0]["text"] == "g" * 5000


def test_a_cut_tool_description_reaches_the_model_without_its_mark():
    from mcp.types import Tool

    from glmdesk.chat.mcp.status import tool_of

    listed = {"tools": [{"name": "t", "description": "d" * 5000, "inputSchema": {"type": "object"}}]}
    cut_list = json.loads(shrink_json(json.dumps(listed).encode(), 1000, 1000))
    tool = tool_of("s", Tool.model_validate(cut_list["tools"][0]))
    assert tool.description == "d" * 1000 and tool.name == "t"


def test_many_strings_just_under_the_limit_are_cut_short_once_the_budget_is_spent():
    from glmdesk.chat.mcp.shrink import BUDGET_LIMITS, SHORT_CHARS

    parts = [{"type": "text", "text": chr(ord("a") + n % 26) * 9_000} for n in range(60)]
    raw = json.dumps({"result": {"content": parts}}).encode()  # 540 kB, no string over 10,000
    out = json.loads(shrink_json(raw, 10_000, 1000))["result"]["content"]
    kept = [strip_marks(p["text"]) for p in out]
    whole = sum(1 for text, left_out in kept if not left_out)
    assert whole == BUDGET_LIMITS * 10_000 // 9_000 + 1  # until the kept bytes pass the budget
    assert all(len(text) == SHORT_CHARS and len(text) + left_out == 9_000 for text, left_out in kept[whole:])
    assert sum(len(text) + left_out for text, left_out in kept) == 60 * 9_000
