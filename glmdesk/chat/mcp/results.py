"""An MCP ``CallToolResult`` as the model reads it.

- text content: as written;
- images: kept as PNG for the card and a vision model (other formats converted with
  Pillow); the text says ``[image N]`` where each was;
- embedded resources: their text (a binary one: its URI, type and size);
  resource links: their URI and name;
- structured content: as JSON, when the text parts do not already carry it;
- ``isError``: the text is told as the tool's error.

The text is cut to :data:`MAX_RESULT_CHARS` with a note saying how much was left out, so
a server that returns 50 MB cannot flood the prompt or the window. Strings the HTTP
transport cut before parsing (:mod:`glmdesk.chat.mcp.shrink`) carry a mark of their full
length, which the note counts. Structured content is written as JSON with each string cut
first, so no call here runs long on a huge result.
"""

from __future__ import annotations

import base64
import io
import json
from typing import Any

from glmdesk.chat.events import ToolResult
from glmdesk.chat.mcp.shrink import strip_marks

#: The most characters of one result the model reads (about 25k tokens).
MAX_RESULT_CHARS = 100_000
#: The most images kept of one result.
MAX_IMAGES = 4
#: The largest image kept, in bytes (decoded).
MAX_IMAGE_BYTES = 8 * 1024 * 1024


def cut(text: str, limit: int = MAX_RESULT_CHARS, left_out: int = 0) -> str:
    """``text``, or its first ``limit`` characters and a note of what was left out
    (``left_out``: characters cut before, counted in the note)."""
    if len(text) <= limit and not left_out:
        return text
    total = len(text) + left_out
    kept = text[:limit]
    return kept + f"\n\n[The result was cut: {total - len(kept):,} of {total:,} characters were left out.]"


def _unmarked(value: Any, limit: int | None = None) -> Any:
    """``value`` (structured content) with the cut marks taken out of its strings, and
    strings longer than ``limit`` cut (with "..."), walking lists and objects."""
    if isinstance(value, str):
        value = strip_marks(value)[0]
        return value if limit is None or len(value) <= limit else value[:limit] + "..."
    if isinstance(value, dict):
        return {k: _unmarked(v, limit) for k, v in value.items()}
    if isinstance(value, list):
        return [_unmarked(v, limit) for v in value]
    return value


def as_png(data: bytes, mime_type: str) -> bytes | None:
    """Image bytes as PNG (``None`` when they cannot be read as an image)."""
    if mime_type == "image/png" and data.startswith(b"\x89PNG"):
        return data
    try:
        from PIL import Image

        with Image.open(io.BytesIO(data)) as image:
            out = io.BytesIO()
            image.save(out, format="PNG")
            return out.getvalue()
    except Exception:
        return None


def _resource_text(resource: Any) -> str:
    uri = str(getattr(resource, "uri", ""))
    text = getattr(resource, "text", None)
    if text is not None:
        return f"[resource {uri}]\n{text}"
    blob = getattr(resource, "blob", "") or ""
    size = len(blob) * 3 // 4
    return f"[resource {uri}: {getattr(resource, 'mime_type', None) or 'binary'}, about {size:,} bytes, not shown]"


def tool_result(result: Any, limit: int = MAX_RESULT_CHARS) -> ToolResult:
    """A ``CallToolResult`` (``mcp.types``) as a :class:`~glmdesk.chat.events.ToolResult`
    (see the module docstring)."""
    texts: list[str] = []
    images: list[bytes] = []
    left_out = 0
    for item in result.content or []:
        kind = getattr(item, "type", "")
        if kind == "text":
            text, missing = strip_marks(item.text)
            texts.append(text)
            left_out += missing
        elif kind == "image":
            png = None
            try:
                data = base64.b64decode(item.data, validate=False)
                png = as_png(data, item.mime_type) if len(data) <= MAX_IMAGE_BYTES else None
            except (ValueError, TypeError):
                pass
            if png is not None and len(images) < MAX_IMAGES:
                images.append(png)
                texts.append(f"[image {len(images)}]")
            else:
                texts.append(f"[an image ({item.mime_type}) that could not be shown]")
        elif kind == "audio":
            texts.append(f"[audio ({item.mime_type}), not supported]")
        elif kind == "resource":
            text, missing = strip_marks(_resource_text(item.resource))
            texts.append(text)
            left_out += missing
        elif kind == "resource_link":
            texts.append(f"[resource link {item.uri}: {item.name}]")
    structured = getattr(result, "structured_content", None)
    if structured is not None:
        structured = _unmarked(structured)
        if not any(_same_json(t, structured) for t in texts):
            texts.append(json.dumps(_unmarked(structured, limit), ensure_ascii=False))
    text = "\n".join(texts) if texts else "(the tool returned nothing)"
    if getattr(result, "is_error", False):
        text = f"The tool reported an error: {text}"
    return ToolResult(cut(text, limit, left_out), tuple(images))


def _same_json(text: str, value: Any) -> bool:
    """Whether ``text`` already says ``value`` (the same JSON; or, for the
    ``{"result": value}`` wrapping the SDK gives a plain return, that value)."""
    if isinstance(value, dict) and len(value) == 1:
        (inner,) = value.values()
        if inner == text or (not isinstance(inner, str) and _same_json(text, inner)):
            return True
    if len(text) > MAX_RESULT_CHARS:
        return False
    try:
        return json.loads(text) == value
    except ValueError:
        return False


def error_result(sentence: str) -> ToolResult:
    """The result the model reads when a call failed (no server, a timeout, a crash)."""
    return ToolResult(f"The tool could not be run: {sentence}")
