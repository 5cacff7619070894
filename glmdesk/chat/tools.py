"""How an answer run runs the calls the model makes: an approval hook, then a runner.

The front end supplies both. ``approve(call)`` says whether a call may run
(:class:`Approval`: allowed, or denied with a reason); it may block (the terminal's
y/N, the window waiting for a click) or return an awaitable (an async front end; the
run awaits it on its own thread). ``run(call)`` returns the call's
:class:`~glmdesk.chat.events.ToolResult`: the built-in code interpreter
(:class:`InterpreterTool`), a custom function whose result the user types, or (later) an
MCP server. A denied call is not run; the model reads :func:`declined` instead.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from glmdesk.chat.events import ToolResult
from glmdesk.core.errors import ErrorInfo, GlmdeskError
from glmdesk.core.messages import ChatMessage
from glmdesk.core.tools import ToolCall, ToolSettings

#: Observation text when the user declines a call.
DECLINED = "The user declined to run this tool call."


@dataclass(frozen=True)
class Approval:
    """Whether a call may run.

    Attributes:
        allowed: True: run it.
        reason: Why not (told to the model after :data:`DECLINED`); may be empty.
    """

    allowed: bool
    reason: str = ""


#: Run the call.
ALLOW = Approval(True)
#: The user declined (no reason given).
DENY = Approval(False)

#: ``approve(call)``: an :class:`Approval`, or an awaitable of one.
ApprovalHook = Callable[[ToolCall], "Approval | Awaitable[Approval]"]
#: ``run(call)``: the result of an allowed call (may block; runs on the answer's thread).
ToolRunner = Callable[[ToolCall], ToolResult]


def allow_all(_call: ToolCall) -> Approval:
    """An approval hook that allows every call (tests, trusted tools)."""
    return ALLOW


def declined(reason: str = "") -> ToolResult:
    """The result the model reads for a call that was not run."""
    text = f"{DECLINED} {reason.strip()}" if reason.strip() else DECLINED
    return ToolResult(text, declined=True)


def decide(approve: ApprovalHook, call: ToolCall) -> Approval:
    """``approve(call)``, awaited on this thread when it is awaitable (the thread has no
    running event loop: answers run on a worker thread)."""
    answer = approve(call)
    if inspect.isawaitable(answer):

        async def wait(pending: Awaitable[Approval]) -> Approval:
            return await pending

        return asyncio.run(wait(answer))
    return answer


def rounds_exceeded(max_rounds: int) -> ErrorInfo:
    """The note that ends an answer after ``max_rounds`` tool calls."""
    return ErrorInfo(
        "tool_rounds_exceeded",
        f"The answer was ended after {max_rounds} tool calls (the limit per message); "
        "the last call was not run.",
        {"rounds": max_rounds},
    )


class InterpreterTool:
    """The built-in code interpreter as a runner: one kernel per conversation, started
    at the first call (:class:`~glmdesk.engine.tools.interpreter.CodeInterpreter`).

    Args:
        workdir: ``workdir() -> Path``: the conversation's fresh working folder (asked
            once, when the kernel first starts).
        settings: Time limit and memory limit of a run.
        dialect: How the model reads a result: ``chatglm3`` (fenced as ``result``) or
            ``glm4``.
    """

    def __init__(self, workdir: Callable[[], Path], settings: ToolSettings, dialect: str) -> None:
        self._workdir = workdir
        self.settings = settings
        self.dialect = dialect
        self.interpreter = None

    def configure(self, settings: ToolSettings, dialect: str) -> None:
        """Use ``settings`` (the time limit from the next run; the memory limit from the
        next kernel start) and ``dialect`` from the next call on."""
        self.settings = settings
        self.dialect = dialect

    def __call__(self, call: ToolCall) -> ToolResult:
        """Run ``call``'s code; a kernel that cannot start is told to the model as text."""
        from glmdesk.engine.formats.chatglm_tools import interpreter_observation

        try:
            result = self._kernel().run(call.code, self.settings.timeout_s)
        except GlmdeskError as exc:
            return ToolResult(f"The code could not run: {exc.message}")
        return ToolResult(interpreter_observation(self.dialect, result.observation()), result.images)

    def _kernel(self):
        if self.interpreter is None:
            from glmdesk.engine.tools.interpreter import CodeInterpreter

            self.interpreter = CodeInterpreter(
                self._workdir(), self.settings.timeout_s, self.settings.memory_mib
            )
        return self.interpreter

    def kill(self) -> None:
        """Kill the running code now (returns at once; the kernel restarts next time)."""
        if self.interpreter is not None:
            self.interpreter.kill()

    def close(self) -> None:
        """Stop the kernel, if it started."""
        if self.interpreter is not None:
            self.interpreter.close()
            self.interpreter = None


def unreadable_observations(notice: ErrorInfo | None) -> tuple[ChatMessage, ...]:
    """What the model is told in place of the calls of a reply that it wrote but that
    could not be read (a ``tool_call_invalid`` notice with ``unreadable`` observations,
    :func:`glmdesk.engine.decode.generate.tool_notice`): one observation per call, named
    after the tool it names, so the model can write it again. ``()`` for any other
    notice: nothing ran and nothing is told."""
    if notice is None or notice.kind != "tool_call_invalid":
        return ()
    texts = notice.params.get("unreadable") or ()
    names = notice.params.get("unreadable_names") or ()
    return tuple(
        ChatMessage("observation", text, name=name) for text, name in zip(texts, names, strict=False)
    )
