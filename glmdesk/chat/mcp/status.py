"""What the window and the CLI are told about MCP servers: a server's state and the
tools it offers (plain frozen values, made on the hub's thread, read anywhere)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from glmdesk.chat.mcp.shrink import strip_marks

STATES = ("stopped", "starting", "ready", "failed")


@dataclass(frozen=True)
class McpTool:
    """One tool a server offers.

    Attributes:
        server: The server's name.
        name: The tool's name on that server.
        description: What it does (may be empty).
        input_schema: JSON Schema object of its arguments.
        read_only: The server marks it read-only (``annotations.readOnlyHint``).
        title: A display name (may be empty).
    """

    server: str
    name: str
    description: str = ""
    input_schema: Mapping[str, Any] = field(default_factory=dict)
    read_only: bool = False
    title: str = ""


@dataclass(frozen=True)
class ServerStatus:
    """Where one server stands.

    Attributes:
        name: The server's name.
        state: One of :data:`STATES`.
        tools: Its tools while ``ready``.
        error: Why it failed (a sentence), else empty.
        stderr_tail: Its last lines on stderr (stdio servers).
    """

    name: str
    state: str = "stopped"
    tools: tuple[McpTool, ...] = ()
    error: str = ""
    stderr_tail: tuple[str, ...] = ()

    def summary(self) -> str:
        """One line: ``ready, 2 tools`` / ``failed: ...``."""
        if self.state == "ready":
            return f"ready, {len(self.tools)} tool{'s' if len(self.tools) != 1 else ''}"
        if self.error:
            return f"{self.state}: {self.error}"
        return self.state


def tool_of(server: str, tool: Any) -> McpTool:
    """An SDK ``Tool`` of ``server`` as an :class:`McpTool`."""
    annotations = getattr(tool, "annotations", None)
    schema = getattr(tool, "input_schema", None) or {"type": "object", "properties": {}}
    return McpTool(
        server=server,
        name=tool.name,
        description=strip_marks(tool.description or "")[0],  # a huge one was cut
        input_schema=dict(schema),
        read_only=bool(getattr(annotations, "read_only_hint", False)),
        title=getattr(tool, "title", None) or "",
    )
