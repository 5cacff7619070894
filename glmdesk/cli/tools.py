"""Tools in ``glmdesk chat``: custom functions from a JSON file and/or the code
interpreter, a call printed as a card, the user's result typed in (or the code run
after a y/N), up to ``--tool-rounds`` calls per message (the window's "Tool calls per
message", default 5)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from glmdesk.core.messages import ChatMessage
from glmdesk.core.tools import ToolCall, ToolSet, ToolSettings, parse_functions


def add_tool_arguments(p: argparse.ArgumentParser) -> None:
    """``--tools FILE``, ``--interpreter``, ``--tool-choice NAME``, ``--tool-rounds N``,
    ``--interpreter-timeout S``."""
    defaults = ToolSettings()
    p.add_argument(
        "--tools",
        metavar="FILE",
        help="offer the custom functions of this JSON file (a list of OpenAI-style function "
        "definitions); you type each call's result",
    )
    p.add_argument(
        "--interpreter",
        action="store_true",
        help="offer the code interpreter (code runs only after you confirm it, in its own process and folder)",
    )
    p.add_argument(
        "--tool-choice",
        metavar="NAME",
        help="make the first answer to each message call the function NAME of --tools (the "
        "model writes only its arguments; later answers choose freely)",
    )
    p.add_argument(
        "--tool-rounds",
        type=int,
        default=defaults.max_rounds,
        metavar="N",
        help="tool calls answered per message, at most (default: %(default)s)",
    )
    p.add_argument(
        "--interpreter-timeout",
        type=float,
        default=defaults.timeout_s,
        metavar="S",
        help="time limit of one interpreter run, in s (default: %(default)s)",
    )


def tool_options(args) -> tuple[ToolSet, ToolSettings]:
    """The tools and limits the flags ask for.

    Raises:
        ValueError: one sentence per problem of the functions file, a ``--tool-choice``
            that names no function of it, or a limit out of range.
    """
    settings = ToolSettings(max_rounds=args.tool_rounds, timeout_s=args.interpreter_timeout)
    functions: tuple = ()
    if args.tools:
        try:
            text = Path(args.tools).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ValueError(f"the functions file {args.tools} cannot be read ({exc}).") from None
        functions, problems = parse_functions(text)
        if problems:
            raise ValueError(f"the functions file {args.tools} has problems:\n  " + "\n  ".join(problems))
        if not functions:
            raise ValueError(f"the functions file {args.tools} lists no functions.")
    forced = getattr(args, "tool_choice", None)
    if forced is not None and not args.tools:
        raise ValueError("--tool-choice needs --tools FILE: it names one of that file's functions.")
    if forced is not None and not any(f.name == forced for f in functions):
        raise ValueError(
            f"--tool-choice names {forced!r}, which the functions file {args.tools} does not list."
        )
    return ToolSet(functions, interpreter=bool(args.interpreter), forced=forced), settings


def tool_family(info) -> str | None:
    """The tool dialect of a loaded model: its family's (:mod:`glmdesk.engine.families`),
    or for a remote server's model the one its id names (``glm4`` when it names none);
    ``None`` for a local model whose family has no tool calls."""
    from glmdesk.engine.families import loaded_tool_dialect

    return loaded_tool_dialect(info)


def card(call: ToolCall) -> str:
    """A call as a card-like block of text (the tool's name, then its arguments
    pretty-printed, or the code)."""
    title = "code interpreter" if call.kind == "interpreter" else f"tool call: {call.name}"
    body = call.code if call.kind == "interpreter" else call.arguments_json(indent=2)
    lines = [f"┌─ {title}"] + [f"│ {line}" for line in body.splitlines()] + ["└─"]
    return "\n".join(lines)


class TerminalTools:
    """Answers the model's calls in the terminal (blocking on ``ask``, as ``input``): the
    approval hook and the runner of :func:`~glmdesk.chat.answer.run_answer`.

    A call is printed as a card. Interpreter code runs only after a y/N
    (:class:`~glmdesk.chat.tools.InterpreterTool`); a custom function's result is typed
    by the user (an empty line declines).

    Args:
        family: The model's tool format (``chatglm3`` or ``glm4``: how the interpreter's
            result is worded).
        settings: Limits (rounds, interpreter time limit and memory).
        ask: Reads one line after a prompt (``input``); EOF declines.
        out: Where cards and results are printed (the terminal).
        mcp: The MCP servers of ``--mcp`` (:class:`~glmdesk.cli.mcp.TerminalMcp`): their
            calls, and interpreter code, wait for its approval (``--approve``).
    """

    def __init__(
        self, family: str, settings: ToolSettings, ask: Callable[[str], str] = input, out=None, mcp=None
    ) -> None:
        from glmdesk.chat.tools import InterpreterTool

        self.family, self.settings, self.ask = family, settings, ask
        self.mcp = mcp  # a glmdesk.cli.mcp.TerminalMcp: MCP calls and interpreter runs ask there
        self.out = out or sys.stdout
        self.interpreter = InterpreterTool(self._workdir, settings, family)

    def _workdir(self) -> Path:
        from glmdesk.core import paths
        from glmdesk.engine.tools.interpreter import new_workdir

        return new_workdir(paths.interpreter_root(), f"terminal-{id(self)}")

    def tools(self):
        """The :class:`~glmdesk.chat.answer.Tools` of an answer run."""
        from glmdesk.chat.answer import Tools

        mcp = self.mcp
        if mcp is None:
            return Tools(self.approve, self.run, self.settings.max_rounds)
        from glmdesk.chat.mcp.source import runner

        send = runner(mcp.source, self.run)

        def run(call: ToolCall):
            result = send(call)
            if mcp.source.tool(call) is not None:
                self._show(result)
            return result

        return Tools(mcp.hook(self.approve), run, self.settings.max_rounds)

    def _line(self, prompt: str) -> str:
        try:
            return self.ask(prompt)
        except EOFError:
            return ""

    def approve(self, call: ToolCall):
        """Print the call's card; interpreter code needs a yes, a function is allowed
        (its result is typed next)."""
        from glmdesk.chat.tools import ALLOW, DENY

        print(card(call), file=self.out, flush=True)
        if call.kind != "interpreter":
            return ALLOW
        if self._line("Run this code? [y/N] ").strip().lower() in ("y", "yes"):
            return ALLOW
        print("(declined)", file=self.out)
        return DENY

    def run(self, call: ToolCall):
        """The result of an allowed call: the code's output, or the line the user types."""
        from glmdesk.chat.events import ToolResult
        from glmdesk.chat.tools import declined

        if call.kind == "interpreter":
            return self._run(call)
        text = self._line(f"Result of {call.name} (an empty line declines): ")
        if not text.strip():
            print("(declined)", file=self.out)
            return declined()
        return ToolResult(text)

    def _run(self, call: ToolCall):
        result = self.interpreter(call)
        self._show(result)
        return result

    def _show(self, result) -> None:
        shown = result.content + (
            f"\n({len(result.images)} image(s) not shown here)" if result.images else ""
        )
        print("\n".join(["┌─ result"] + [f"│ {line}" for line in shown.splitlines()] + ["└─"]), file=self.out)

    def close(self) -> None:
        """Stop the interpreter's kernel, if it started."""
        self.interpreter.close()


def with_tools(system: list[ChatMessage], tools: ToolSet) -> list[ChatMessage]:
    """The system messages with ``tools`` offered on the first (one is added if none)."""
    if not tools:
        return system
    first = system[0] if system else ChatMessage("system", "")
    return [ChatMessage("system", first.content, tools=tools), *system[1:]]
