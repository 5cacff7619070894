"""A server's prompts and resources, besides its tools.

- Prompts without required arguments are offered as example prompts
  (:func:`example_prompts`): the user's messages of the prompt, as one text.
- Resources may be attached to a message (:func:`resource_text`): text contents as
  written, binary ones by URI, type and size; cut to the result size like a tool's
  result.

Every function blocks the calling thread (never the GUI's) until the server answers or
its time limit ends; a server that offers no prompts or resources gives ``()``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from glmdesk.chat.mcp.hub import McpHub, McpUnavailable
from glmdesk.chat.mcp.results import MAX_RESULT_CHARS, cut
from glmdesk.chat.mcp.shrink import strip_marks

__all__ = ["McpPrompt", "McpResource", "McpUnavailable", "example_prompts", "prompt_text", "prompts"]
__all__ += ["resource_text", "resources"]


@dataclass(frozen=True)
class McpPrompt:
    """One prompt a server offers.

    Attributes:
        server: The server's name.
        name: The prompt's name on that server.
        title: A display name (may be empty).
        description: What it is for (may be empty).
        required: The names of the arguments it needs.
    """

    server: str
    name: str
    title: str = ""
    description: str = ""
    required: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """What a button shows: the title, else the name."""
        return self.title or self.name


@dataclass(frozen=True)
class McpResource:
    """One resource a server offers.

    Attributes:
        server: The server's name.
        uri: Its URI.
        name: Its name.
        title: A display name (may be empty).
        mime_type: Its MIME type (may be empty).
        size: Its size in bytes, when the server says (else ``None``).
    """

    server: str
    uri: str
    name: str
    title: str = ""
    mime_type: str = ""
    size: int | None = None

    @property
    def label(self) -> str:
        """What a list shows: the title or name, and the URI."""
        return f"{self.title or self.name} ({self.uri})"


def _supports(hub: McpHub, server: str, what: str) -> bool:
    """Whether ``server`` (started if needed) says it has ``prompts`` or ``resources``."""
    if hub.ensure(server).state != "ready":
        return False

    async def capabilities(client: Any) -> Any:
        return client.server_capabilities

    try:
        found = hub.request(server, capabilities)
    except McpUnavailable:
        return False
    return found is None or getattr(found, what, None) is not None


def prompts(hub: McpHub, server: str) -> tuple[McpPrompt, ...]:
    """``server``'s prompts (``()`` when it has none or cannot be reached)."""
    if not _supports(hub, server, "prompts"):
        return ()
    try:
        listed = hub.request(server, lambda client: client.list_prompts())
    except McpUnavailable:
        return ()
    return tuple(
        McpPrompt(
            server,
            p.name,
            p.title or "",
            p.description or "",
            tuple(a.name for a in (p.arguments or []) if a.required),
        )
        for p in listed.prompts
    )


def prompt_text(hub: McpHub, prompt: McpPrompt, arguments: dict[str, str] | None = None) -> str:
    """The text of ``prompt``'s user messages, one paragraph each (images and other
    content left out).

    Raises:
        McpUnavailable: the server did not give the prompt.
    """
    got = hub.request(prompt.server, lambda client: client.get_prompt(prompt.name, arguments or None))
    texts = [
        strip_marks(m.content.text)[0]
        for m in got.messages
        if m.role == "user" and getattr(m.content, "type", "") == "text"
    ]
    return "\n\n".join(texts)


def example_prompts(hub: McpHub, servers: Iterable[str], most: int = 3) -> list[tuple[str, str]]:
    """Up to ``most`` example prompts of ``servers`` as ``(label, text)``: the prompts
    that need no argument, in the servers' order."""
    found: list[tuple[str, str]] = []
    for server in servers:
        for prompt in prompts(hub, server):
            if len(found) >= most:
                return found
            if prompt.required:
                continue
            try:
                text = prompt_text(hub, prompt)
            except McpUnavailable:
                continue
            if text.strip():
                found.append((prompt.label, text))
    return found


def resources(hub: McpHub, server: str) -> tuple[McpResource, ...]:
    """``server``'s resources (``()`` when it has none or cannot be reached)."""
    if not _supports(hub, server, "resources"):
        return ()
    try:
        listed = hub.request(server, lambda client: client.list_resources())
    except McpUnavailable:
        return ()
    return tuple(
        McpResource(server, str(r.uri), r.name, r.title or "", r.mime_type or "", r.size)
        for r in listed.resources
    )


def resource_text(hub: McpHub, resource: McpResource, limit: int = MAX_RESULT_CHARS) -> str:
    """``resource``'s contents as text (binary parts by URI, type and size), cut to
    ``limit`` characters with a note.

    Raises:
        McpUnavailable: the server did not give the resource.
    """
    got = hub.request(resource.server, lambda client: client.read_resource(resource.uri))
    parts: list[str] = []
    left_out = 0
    for content in got.contents:
        text = getattr(content, "text", None)
        if text is not None:
            text, missing = strip_marks(text)  # cut before parsing (huge resources)
            parts.append(text)
            left_out += missing
        else:
            size = len(getattr(content, "blob", "") or "") * 3 // 4
            kind = content.mime_type or "binary"
            parts.append(f"[{content.uri}: {kind}, about {size:,} bytes, not shown]")
    return cut("\n".join(parts), limit, left_out)
