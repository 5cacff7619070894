"""The chosen MCP servers' tools offered to the model beside the built-in ones, and one
approval hook and runner for every call of an answer (:class:`~glmdesk.chat.answer.Tools`).

A server's tool is offered under its own name when no other offered tool has it, else
as ``server__tool`` (cut to 64 characters); the model's call is sent back to the server
under the tool's own name. The prompt shows each tool as an OpenAI function definition
(``name``, ``description``, ``parameters`` = the tool's ``inputSchema``), in every GLM
format and as OpenAI ``tools`` to a remote server.

Every MCP call and every interpreter run goes through ``ask`` unless the user kept an
answer (:class:`~glmdesk.chat.mcp.approvals.McpApprovals`); other functions (whose
result the user types) go to the front end's own hook.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace

from glmdesk.chat.events import ToolResult
from glmdesk.chat.mcp.approvals import Decision, McpApprovals
from glmdesk.chat.mcp.hub import McpHub, McpTool
from glmdesk.chat.tools import ALLOW, Approval, ApprovalHook, ToolRunner, decide
from glmdesk.core.tools import RESERVED_NAMES, FunctionSpec, ToolCall, ToolSet

#: ``ask(call, tool)``: the user's answer to a call that waits (``tool`` is ``None`` for
#: interpreter code). May block; returns a :class:`Decision`.
AskFn = Callable[[ToolCall, "McpTool | None"], Decision]

_BAD = re.compile(r"[^A-Za-z0-9_-]")


def offered_name(tool: McpTool, taken: set[str]) -> str:
    """The name the model calls ``tool`` by (see the module docstring)."""
    name = _BAD.sub("_", tool.name)[:64] or "tool"
    if name in taken or name.lower() in RESERVED_NAMES:
        name = _BAD.sub("_", f"{tool.server}__{tool.name}")[:64]
    n = 2
    base = name
    while name in taken:
        name = f"{base[:60]}_{n}"
        n += 1
    return name


def function_of(tool: McpTool, name: str) -> FunctionSpec:
    """``tool`` as the function definition the prompt shows."""
    parameters = dict(tool.input_schema) or {"type": "object", "properties": {}}
    description = tool.description or tool.title
    return FunctionSpec(
        name, description, parameters, {"name": name, "description": description, "parameters": parameters}
    )


class McpToolSource:
    """The tools of the chosen servers, as offered to one conversation.

    Args:
        hub: The running servers.
        servers: The chosen servers' names (each is started when :meth:`refresh` runs).
        approvals: The kept answers.
        enabled: ``enabled(tool) -> bool``: a per-chat choice of tools (default: all).
    """

    def __init__(
        self,
        hub: McpHub,
        servers: Sequence[str],
        approvals: McpApprovals,
        enabled: Callable[[McpTool], bool] | None = None,
    ) -> None:
        self.hub = hub
        self.servers = tuple(servers)
        self.approvals = approvals
        self._enabled = enabled or (lambda _tool: True)
        self._by_name: dict[str, McpTool] = {}
        self._functions: tuple[FunctionSpec, ...] = ()
        self.problems: list[str] = []

    def refresh(self, taken: Iterable[str] = ()) -> tuple[FunctionSpec, ...]:
        """Start the chosen servers (if needed), list their tools and return them as
        functions; names in ``taken`` (the built-in or custom functions) are avoided.
        A server that cannot start is left out with a sentence in :attr:`problems`."""
        names = set(taken)
        self._by_name, functions, self.problems = {}, [], []
        for server in self.servers:
            status = self.hub.ensure(server)
            if status.state != "ready":
                self.problems.append(f"The MCP server {server} is not available: {status.summary()}.")
                continue
            for tool in status.tools:
                if not self._enabled(tool):
                    continue
                name = offered_name(tool, names)
                names.add(name)
                self._by_name[name] = tool
                functions.append(function_of(tool, name))
        self._functions = tuple(functions)
        return self._functions

    def functions(self) -> tuple[FunctionSpec, ...]:
        """The functions of the last :meth:`refresh`."""
        return self._functions

    def with_tools(self, toolset: ToolSet) -> ToolSet:
        """``toolset`` with the MCP functions added after its own."""
        own = {f.name for f in toolset.functions}
        added = tuple(f for f in self._functions if f.name not in own)
        return replace(toolset, functions=(*toolset.functions, *added))

    def offered_as(self, server: str, tool: str) -> str | None:
        """The name the model calls ``tool`` of ``server`` by, or ``None``."""
        return next((n for n, t in self._by_name.items() if (t.server, t.name) == (server, tool)), None)

    def tool(self, call: ToolCall) -> McpTool | None:
        """The MCP tool ``call`` calls, or ``None`` (a built-in or custom function)."""
        return self._by_name.get(call.name) if call.kind == "function" else None

    def run(self, call: ToolCall, stop: threading.Event | None = None) -> ToolResult:
        """Send ``call`` to its server (see :meth:`McpHub.call`).

        Raises:
            KeyError: ``call`` is not an MCP tool's (use :meth:`tool` first).
        """
        tool = self._by_name[call.name]
        return self.hub.call(tool.server, tool.name, call.arguments, stop=stop)


def approval_hook(
    source: McpToolSource | None,
    approvals: McpApprovals,
    ask: AskFn,
    other: ApprovalHook | None = None,
) -> ApprovalHook:
    """The approval hook of an answer with MCP tools: an MCP call or interpreter code is
    allowed when a kept answer allows it, else waits for ``ask`` (an Always allow is
    kept); any other call goes to ``other`` (default: allowed)."""

    def approve(call: ToolCall) -> Approval:
        tool = source.tool(call) if source is not None else None
        if tool is None and call.kind != "interpreter":
            return decide(other, call) if other is not None else ALLOW
        if tool is not None and not approvals.needs_asking(tool.server, tool.name, tool.read_only):
            return ALLOW
        decision = ask(call, tool)
        if decision.always and decision.approval.allowed and tool is not None:
            approvals.allow_always(tool.server, tool.name)
        return decision.approval

    return approve


def runner(
    source: McpToolSource | None, other: ToolRunner, stop: threading.Event | None = None
) -> ToolRunner:
    """A runner that sends MCP calls to their server and every other call to ``other``."""

    def run(call: ToolCall) -> ToolResult:
        if source is not None and source.tool(call) is not None:
            return source.run(call, stop)
        return other(call)

    return run


#: The share of the context window the tool list may take before the user is told.
TOOLS_SHARE_NOTE = 0.25


def tool_list_tokens(
    functions: Sequence[FunctionSpec], count: Callable[[str], int | None] | None = None
) -> int:
    """Tokens the functions' definitions take in the prompt: ``count(text)`` of their JSON
    when the engine can count, else about 4 characters a token."""
    import json

    text = "\n".join(json.dumps(f.definition(), ensure_ascii=False) for f in functions)
    counted = count(text) if count is not None else None
    return counted if counted is not None else (len(text) + 3) // 4


def tools_context_note(tokens: int, context_tokens: int) -> str | None:
    """A sentence when the tool list takes more than :data:`TOOLS_SHARE_NOTE` of the
    context window (``None`` otherwise, or when the window is unknown: 0)."""
    if context_tokens <= 0 or tokens <= TOOLS_SHARE_NOTE * context_tokens:
        return None
    return (
        f"The tools' descriptions take about {tokens:,} tokens, {tokens / context_tokens:.0%} of the "
        f"{context_tokens:,}-token context; turn off servers or tools this chat does not need."
    )
