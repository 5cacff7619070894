"""MCP in the terminal: ``glmdesk mcp list``, ``glmdesk mcp call SERVER TOOL JSON``, and
``glmdesk chat --mcp NAME --approve ask|always|never``.

Approval (``--approve``): ``ask`` (default) prints each MCP call or interpreter run as a
card with its arguments in full and reads ``y`` (once), ``a`` (always allow this tool,
kept), or anything else (deny; the text after ``n`` is told to the model as the reason);
``always`` runs every call; ``never`` runs none (the model is told each was denied).
A server's command is shown and agreed once before it first starts (kept); ``--approve
always`` agrees for this run without asking.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from glmdesk.chat.mcp.source import McpToolSource

APPROVE_MODES = ("ask", "always", "never")


def add_mcp_arguments(p: argparse.ArgumentParser) -> None:
    """``--mcp NAME`` (repeatable), ``--approve MODE``, ``--mcp-config FILE``."""
    p.add_argument(
        "--mcp",
        action="append",
        metavar="NAME",
        help="offer the tools of this MCP server of mcp.json (repeat for several)",
    )
    p.add_argument(
        "--approve",
        choices=APPROVE_MODES,
        default="ask",
        help="tool calls of MCP servers and the interpreter: ask on the terminal (default), "
        "always run, or never run",
    )
    p.add_argument(
        "--mcp-config",
        metavar="FILE",
        help="the MCP servers' file (default: mcp.json in glmdesk's config folder)",
    )


def mcp_parser(sub) -> None:
    """Register ``glmdesk mcp list`` and ``glmdesk mcp call``."""
    p = sub.add_parser("mcp", help="list or call the tools of MCP servers (mcp.json)")
    verbs = p.add_subparsers(dest="mcp_command", required=True)
    listing = verbs.add_parser("list", help="each configured server's state and tools")
    listing.add_argument("names", nargs="*", metavar="NAME", help="only these servers")
    call = verbs.add_parser("call", help="call one tool (approval applies unless --approve always)")
    call.add_argument("server")
    call.add_argument("tool")
    call.add_argument("arguments", nargs="?", default="{}", help="the arguments as a JSON object")
    for q in (listing, call):
        q.add_argument("--approve", choices=APPROVE_MODES, default="ask", help="as in glmdesk chat")
        q.add_argument("--mcp-config", metavar="FILE", help="the MCP servers' file")


def _line(ask: Callable[[str], str], prompt: str) -> str:
    try:
        return ask(prompt)
    except EOFError:
        return ""


class TerminalMcp:
    """The MCP servers of one ``glmdesk`` command: config, hub, kept approvals and the
    terminal's questions.

    Args:
        mode: ``ask``, ``always`` or ``never``.
        config_path: ``mcp.json`` (default: the config folder's).
        ask: Reads one line after a prompt (``input``); EOF is a no.
        out: Where cards are printed.

    Raises:
        ValueError: an ``mcp.json`` that cannot be read.
    """

    def __init__(
        self, mode: str = "ask", config_path=None, ask: Callable[[str], str] = input, out=None
    ) -> None:
        from pathlib import Path

        from glmdesk.chat.mcp.approvals import McpApprovals
        from glmdesk.chat.mcp.config import load_config
        from glmdesk.chat.mcp.hub import McpHub

        self.mode, self.ask = mode, ask
        self.out = out or sys.stdout
        self.config = load_config(Path(config_path) if config_path else None)
        for problem in self.config.problems:
            print(f"glmdesk: mcp.json: {problem}", file=sys.stderr)
        self.approvals = McpApprovals()
        self.hub = McpHub(self.config, self._consent)
        self._source: McpToolSource | None = None

    @property
    def source(self) -> McpToolSource:
        """The tools of the servers :meth:`open` started.

        Raises:
            RuntimeError: before :meth:`open`.
        """
        if self._source is None:
            raise RuntimeError("TerminalMcp.open() lists the servers' tools first.")
        return self._source

    def _consent(self, server) -> bool:
        if self.approvals.agreed(server):
            return True
        if self.mode == "always":
            return True
        print(f"The MCP server {server.name} runs: {server.command_line()}", file=self.out, flush=True)
        if _line(self.ask, "Start it? [y/N] ").strip().lower() in ("y", "yes"):
            self.approvals.agree(server)
            return True
        return False

    def open(self, names) -> list[str]:
        """Start the servers ``names`` and list their tools (:attr:`source`); returns a
        sentence per server that is missing or could not start."""
        from glmdesk.chat.mcp.source import McpToolSource

        problems = [
            f"no MCP server called {n} is in mcp.json." for n in names if self.config.server(n) is None
        ]
        source = McpToolSource(
            self.hub, [n for n in names if self.config.server(n) is not None], self.approvals
        )
        self._source = source
        source.refresh()
        return problems + source.problems

    def decide(self, call, tool):
        """The terminal's answer to a call that waits (see the module docstring)."""
        from glmdesk.chat.mcp.approvals import ALLOW_ALWAYS, ALLOW_ONCE, deny

        if self.mode == "always":
            return ALLOW_ONCE
        if self.mode == "never":
            return deny("Tool calls are turned off (--approve never).")
        title = "code interpreter" if tool is None else f"MCP tool {tool.server} / {tool.name}"
        body = call.code if call.kind == "interpreter" else call.arguments_json(indent=2)
        card = [f"┌─ {title}"] + [f"│ {line}" for line in body.splitlines()] + ["└─"]
        print("\n".join(card), file=self.out, flush=True)
        answer = _line(self.ask, "Run it? [y]es once / [a]lways / [N]o (a reason may follow): ").strip()
        first = answer[:1].lower()
        if first == "y":
            return ALLOW_ONCE
        if first == "a" and tool is not None:
            return ALLOW_ALWAYS
        reason = answer[1:].strip(" :,-") if first == "n" else ""
        print("(denied)", file=self.out)
        return deny(reason)

    def hook(self, other=None):
        """The approval hook of an answer (MCP calls and interpreter code; ``other``
        answers the rest)."""
        from glmdesk.chat.mcp.source import approval_hook

        return approval_hook(self._source, self.approvals, self.decide, other)

    def close(self) -> None:
        """Stop the servers (their process trees)."""
        self.hub.close()


def mcp_main(args) -> int:
    """Run ``glmdesk mcp list|call``. Returns 0, 1 when a call failed or was denied, 2
    for a bad file, server or argument."""
    try:
        terminal = TerminalMcp(args.approve, args.mcp_config)
    except ValueError as exc:
        print(f"glmdesk mcp: {exc}", file=sys.stderr)
        return 2
    try:
        if args.mcp_command == "list":
            return _list(terminal, args.names)
        return _call(terminal, args.server, args.tool, args.arguments)
    finally:
        terminal.close()


def _list(terminal: TerminalMcp, names) -> int:
    servers = [s for s in terminal.config.servers if not names or s.name in names]
    if not servers:
        print("No MCP servers are configured (mcp.json in glmdesk's config folder).")
        return 0 if not names else 2
    for server in servers:
        status = terminal.hub.ensure(server.name) if not server.disabled else None
        state = "turned off" if status is None else status.summary()
        print(f"{server.name}  ({server.command_line()})  {state}")
        for tool in status.tools if status is not None else ():
            mark = "  [read-only]" if tool.read_only else ""
            always = "  [always allowed]" if terminal.approvals.always_allowed(server.name, tool.name) else ""
            print(
                f"  {tool.name}{mark}{always}  {tool.description.splitlines()[0] if tool.description else ''}".rstrip()
            )
        for line in status.stderr_tail[-5:] if status is not None and status.state == "failed" else ():
            print(f"  | {line}")
    return 0


def _call(terminal: TerminalMcp, server: str, tool: str, arguments: str) -> int:
    from glmdesk.chat.tools import decide
    from glmdesk.core.tools import ToolCall

    try:
        values = json.loads(arguments)
    except json.JSONDecodeError as exc:
        print(f"glmdesk mcp: the arguments are not JSON ({exc.msg}).", file=sys.stderr)
        return 2
    if not isinstance(values, dict):
        print("glmdesk mcp: the arguments must be a JSON object.", file=sys.stderr)
        return 2
    problems = terminal.open([server])
    if problems:
        print(f"glmdesk mcp: {problems[0]}", file=sys.stderr)
        return 2
    offered = terminal.source.offered_as(server, tool)
    if offered is None:
        print(f"glmdesk mcp: {server} has no tool called {tool}.", file=sys.stderr)
        return 2
    call = ToolCall(offered, values)
    if not decide(terminal.hook(), call).allowed:
        return 1
    result = terminal.source.run(call, threading.Event())
    print(result.content)
    if result.images:
        print(f"({len(result.images)} image(s) not shown here)")
    return 1 if result.content.startswith("The tool could not be run:") else 0
