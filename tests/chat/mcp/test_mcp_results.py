"""Every kind of MCP result content as the model reads it and the card shows it: text,
images (PNG kept, JPEG converted, unreadable ones told), audio, embedded text and binary
resources, resource links, structured content (once), errors, nothing."""

from __future__ import annotations

import base64
import io

from mcp.types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)
from PIL import Image

from glmdesk.chat.mcp.results import MAX_IMAGES, tool_result


def _picture(fmt: str) -> str:
    out = io.BytesIO()
    Image.new("RGB", (3, 2), (0, 128, 255)).save(out, format=fmt)
    return base64.b64encode(out.getvalue()).decode()


def _read(*content, **more):
    return tool_result(CallToolResult(content=list(content), **more))


def test_images_are_kept_as_png_where_they_stood_in_the_text():
    read = _read(
        TextContent(type="text", text="before"),
        ImageContent(type="image", data=_picture("JPEG"), mime_type="image/jpeg"),
        ImageContent(type="image", data=_picture("PNG"), mime_type="image/png"),
        ImageContent(type="image", data=base64.b64encode(b"not a picture").decode(), mime_type="image/gif"),
    )
    assert read.content == "before\n[image 1]\n[image 2]\n[an image (image/gif) that could not be shown]"
    assert len(read.images) == 2 and all(png.startswith(b"\x89PNG") for png in read.images)
    assert Image.open(io.BytesIO(read.images[0])).size == (3, 2)


def test_at_most_four_images_are_kept():
    many = [ImageContent(type="image", data=_picture("PNG"), mime_type="image/png")] * (MAX_IMAGES + 1)
    read = _read(*many)
    assert len(read.images) == MAX_IMAGES and read.content.endswith("that could not be shown]")


def test_resources_links_and_audio_are_told_as_text():
    read = _read(
        EmbeddedResource(
            type="resource", resource=TextResourceContents(uri="file:///a.txt", text="A's text")
        ),
        EmbeddedResource(
            type="resource",
            resource=BlobResourceContents(
                uri="file:///b.bin", blob=base64.b64encode(bytes(300)).decode(), mime_type="application/zip"
            ),
        ),
        ResourceLink(type="resource_link", uri="file:///c.md", name="c.md"),
        AudioContent(type="audio", data="AAAA", mime_type="audio/wav"),
    )
    assert read.content.splitlines() == [
        "[resource file:///a.txt]",
        "A's text",
        "[resource file:///b.bin: application/zip, about 300 bytes, not shown]",
        "[resource link file:///c.md: c.md]",
        "[audio (audio/wav), not supported]",
    ]


def test_structured_content_is_json_once():
    said = _read(TextContent(type="text", text='{"sum": 42}'), structured_content={"sum": 42})
    assert said.content == '{"sum": 42}'
    wrapped = _read(TextContent(type="text", text="42"), structured_content={"result": 42})
    assert wrapped.content == "42"
    extra = _read(TextContent(type="text", text="done"), structured_content={"rows": ["a", "é"]})
    assert extra.content == 'done\n{"rows": ["a", "é"]}'


def test_errors_and_empty_results_are_told():
    assert _read(TextContent(type="text", text="no such city"), is_error=True).content == (
        "The tool reported an error: no such city"
    )
    assert _read().content == "(the tool returned nothing)"
