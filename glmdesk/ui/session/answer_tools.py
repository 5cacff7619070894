"""The tools of the window's answers: what is offered, and how a run answers calls.

:class:`AnswerTools` (GUI thread) keeps the open conversation's Tools section (the
built-in interpreter or custom functions, with their settings), the conversation's
interpreter kernel, the MCP servers chosen for the chat, and the
:class:`~glmdesk.ui.tools.approval_gate.ApprovalGate` where calls wait for the user. For
each answer it makes a :class:`RunTools` (:meth:`AnswerTools.for_run`), the one tool loop's
:class:`~glmdesk.chat.answer.Tools` (approval hook and runner) plus what runs on the
worker thread before the first reply (the chosen MCP servers started and their tools
added to the prompt's tool list).

Approval (:func:`glmdesk.chat.mcp.source.approval_hook`): an MCP call and interpreter
code wait in an approval card unless the user kept an answer (Always allow, kept per
server and tool in :class:`~glmdesk.chat.mcp.approvals.McpApprovals`; the interpreter
with "Always run code in this conversation"); a custom function's result is typed by the
user in its card. Every runner runs on the worker thread.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from PySide6.QtCore import QObject

from glmdesk.chat.answer import Tools
from glmdesk.chat.events import ToolResult
from glmdesk.chat.mcp.approvals import McpApprovals
from glmdesk.chat.mcp.source import (
    McpToolSource,
    approval_hook,
    runner,
    tool_list_tokens,
    tools_context_note,
)
from glmdesk.chat.tools import ALLOW, Approval, InterpreterTool, decide
from glmdesk.core.messages import ChatMessage
from glmdesk.core.tools import ToolCall, ToolSet, ToolSettings
from glmdesk.ui.tools.approval_gate import ApprovalGate
from glmdesk.ui.tools.mcp_choice import ChatMcp


@dataclass(frozen=True)
class ToolsNote:
    """What the user is told about an answer's MCP tools (worded by the window).

    Attributes:
        tokens: Tokens the offered tools' definitions take in the prompt (the model's
            tokenizer, else about 4 characters a token).
        context_tokens: The model's context window, in tokens (0: unknown).
        unavailable: One sentence per chosen server that could not start.
    """

    tokens: int
    context_tokens: int
    unavailable: tuple[str, ...] = ()

    def too_large(self) -> bool:
        """Whether the tool list takes more than :data:`~glmdesk.chat.mcp.source.TOOLS_SHARE_NOTE`
        of the context window."""
        return tools_context_note(self.tokens, self.context_tokens) is not None


#: ``prepare(messages) -> (messages, note)`` on the worker thread before the first reply:
#: the messages with the MCP tools added, and what to tell the user (or ``None``).
PrepareFn = Callable[[Sequence[ChatMessage]], "tuple[tuple[ChatMessage, ...], ToolsNote | None]"]


@dataclass(frozen=True)
class RunTools:
    """What one answer run needs to answer calls (built on the GUI thread, used on the
    worker thread).

    Attributes:
        tools: The tool loop's approval hook, runner and round limit.
        prepare: Runs before the first reply (see :data:`PrepareFn`); ``None``: nothing to do.
    """

    tools: Tools
    prepare: PrepareFn | None = None


class AnswerTools(QObject):
    """The conversation's tools and the approvals of its calls (GUI thread).

    Args:
        approvals: The kept answers (Always allow), shared with the Tools page (default:
            ``mcp``'s, else the config folder's file).
        mcp: The window's MCP servers and the open chat's choice of them (``None``: no
            MCP tools are offered).
        parent: The owning QObject (the session).

    Attributes:
        gate: Where a call waits for the user (the tool controller shows its cards).
        mcp: As given.
    """

    def __init__(
        self,
        approvals: McpApprovals | None = None,
        mcp: ChatMcp | None = None,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        if approvals is None:
            approvals = mcp.approvals if mcp is not None else McpApprovals()
        self.approvals = approvals
        self.mcp = mcp
        self.gate = ApprovalGate(parent=self)
        self.toolset = ToolSet()
        self.settings = ToolSettings()
        self._interpreter: InterpreterTool | None = None
        self._conversation = 0  # names the interpreter's working folder

    @property
    def interpreter(self):
        """The conversation's running kernel
        (:class:`~glmdesk.engine.tools.interpreter.CodeInterpreter`), or ``None``."""
        return self._interpreter.interpreter if self._interpreter is not None else None

    def set_tools(self, toolset: ToolSet, settings: ToolSettings | None = None) -> None:
        """Offer ``toolset`` from the next answer on (the Tools section; per conversation)."""
        self.toolset = toolset
        if settings is not None:
            self.settings = settings

    def offered(self, tool_calls: bool) -> ToolSet | None:
        """The conversation's own tools when the model has a tool format (``tool_calls``)
        and any are chosen, else ``None`` (MCP tools are added on the worker thread)."""
        return self.toolset if tool_calls and self.toolset else None

    def for_run(
        self,
        stop: threading.Event,
        dialect: str,
        tool_calls: bool,
        count: Callable[[str], int | None] | None = None,
        context_tokens: int = 0,
    ) -> RunTools | None:
        """How the next answer answers its calls; ``None`` when the model has no tool
        format (``tool_calls`` False) or nothing is offered.

        Args:
            stop: The answer's Stop (ends a wait for the user).
            dialect: How the model reads interpreter output (``glm4``, ``chatglm3``).
            tool_calls: Whether the model has a tool-call format.
            count: ``count(text) -> tokens`` with the model's tokenizer (``None``: estimated).
            context_tokens: The model's context window, in tokens (0: unknown).
        """
        if not tool_calls:
            return None
        source = self.mcp.source() if self.mcp is not None else None
        if not self.toolset and source is None:
            return None
        if self.toolset.interpreter:
            self._interpreter_tool(dialect)
        settings = self.settings

        def ask(call: ToolCall, tool):
            return self.gate.ask(call, tool, stop)

        kept = approval_hook(source, self.approvals, ask)

        def approve(call: ToolCall) -> Approval:
            if call.kind == "interpreter" and settings.always_run:
                return ALLOW
            return decide(kept, call)

        own = self._own_runner(stop)
        send = runner(source, own, stop)

        def run(call: ToolCall) -> ToolResult:
            self.gate.call_started.emit(call)
            return send(call)

        prepare = _prepare(source, count, context_tokens) if source is not None else None
        return RunTools(Tools(approve, run, settings.max_rounds), prepare)

    def _own_runner(self, stop: threading.Event) -> Callable[[ToolCall], ToolResult]:
        interpreter = self._interpreter

        def run(call: ToolCall) -> ToolResult:
            if call.kind == "interpreter":
                if interpreter is None:  # not offered in this answer
                    return ToolResult("The code interpreter is not offered in this conversation.")
                return interpreter(call)
            return self.gate.typed_result(call, stop)  # a custom function: the user types it

        return run

    def _interpreter_tool(self, dialect: str) -> InterpreterTool:
        settings = dataclasses.replace(self.settings, always_run=False)
        if self._interpreter is None:
            from glmdesk.core import paths
            from glmdesk.engine.tools.interpreter import new_workdir

            key = f"session-{id(self)}-{self._conversation}"
            self._interpreter = InterpreterTool(
                lambda: new_workdir(paths.interpreter_root(), key), settings, dialect
            )
        else:
            self._interpreter.configure(settings, dialect)
        return self._interpreter

    def kill_code(self) -> None:
        """Kill the running interpreter code now (never blocks; the kernel restarts next time)."""
        if self._interpreter is not None:
            self._interpreter.kill()

    def close_interpreter(self, release: Callable[[object], None]) -> None:
        """A new conversation: kill the kernel's code and hand the kernel to ``release``
        (closed on the worker thread, after a run still ending there)."""
        tool, self._interpreter = self._interpreter, None
        self._conversation += 1
        if tool is not None:
            tool.kill()
            release(tool)

    def close(self) -> None:
        """Stop the kernel, if it started, and the MCP servers (the worker thread has ended)."""
        tool, self._interpreter = self._interpreter, None
        if tool is not None:
            tool.close()
        if self.mcp is not None:
            self.mcp.close()


def _prepare(source: McpToolSource, count, context_tokens: int) -> PrepareFn:
    """Start the chosen servers and add their tools to the tool list the prompt carries
    (the system message's :class:`~glmdesk.core.tools.ToolSet`, added when none leads);
    the note counts the tool list against the context window."""

    def prepare(messages: Sequence[ChatMessage]) -> tuple[tuple[ChatMessage, ...], ToolsNote | None]:
        head = messages[0] if messages and messages[0].role == "system" else None
        own = head.tools if head is not None and head.tools is not None else ToolSet()
        source.refresh({f.name for f in own.functions})
        tools = source.with_tools(own)
        note = ToolsNote(tool_list_tokens(tools.functions, count), context_tokens, tuple(source.problems))
        if not tools:
            return tuple(messages), note
        if head is not None:
            return (dataclasses.replace(head, tools=tools), *messages[1:]), note
        return (ChatMessage("system", "", tools=tools), *messages), note

    return prepare
