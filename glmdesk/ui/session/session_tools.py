"""The tool-call half of :class:`~glmdesk.ui.session.chat_session.ChatSession`.

A model with a tool format (ChatGLM3, GLM-4) may end an answer with a call
(``finish_reason`` ``tool_calls``); the session then holds it as ``pending_call``
until the user types its result, declines it, or runs the interpreter's code
(on the worker thread, in :class:`~glmdesk.engine.tools.interpreter.CodeInterpreter`'s
kernel). The result goes into the conversation as an ``observation`` message and the
answer continues from it. These methods live here to keep the session's answer and
load life readable; they use the session's state, signals and worker.
"""

from __future__ import annotations

from PySide6.QtCore import Slot

from glmdesk.chat.answer import call_messages
from glmdesk.core.errors import ErrorInfo
from glmdesk.core.messages import ChatMessage
from glmdesk.core.tools import ToolSet, ToolSettings


class ToolFlow:
    """Tool calls of the open conversation (mixed into ``ChatSession``, a QObject)."""

    def offered_tools(self) -> ToolSet | None:
        """The conversation's tools when the model has a tool format, else ``None``."""
        caps = self.loader.capabilities
        if not self.tools or caps is None or not caps.tool_calls:
            return None
        return self.tools

    def set_tools(self, tools: ToolSet, settings: ToolSettings | None = None) -> None:
        """Offer ``tools`` from the next answer on (the Tools section; per conversation)."""
        self.tools = tools
        if settings is not None:
            self.tool_settings = settings

    def submit_tool_result(self, content: str, images: tuple[bytes, ...] = ()) -> bool:
        """Answer the waiting call with ``content`` (the observation) and continue the
        answer from it; False when no call waits or the model is busy."""
        call = self.pending_call
        if call is None or self._current is not None or not self.is_ready():
            return False
        self.pending_call = None
        message = ChatMessage("observation", content, name=call.name, images=tuple(images))
        index = self.state.add(message)
        self.message_added.emit(index, message, None)
        if images:
            self.tool_images_added.emit(list(images), call.name)
        if self._queued_calls:  # the answer's next call first; the model reads all results at once
            self._ask_next_call()
        else:
            self._start_answer(*self._last_request)
        return True

    def _add_calls(self, calls, text: str, reasoning: str, record) -> None:
        """The answer's calls as assistant messages (:func:`~glmdesk.chat.answer.call_messages`,
        the same the answer run feeds back), the record on the first."""
        for k, message in enumerate(call_messages(calls, text, reasoning)):
            index = self.state.add(message, record if k == 0 else None)
            self.message_added.emit(index, self.state.messages[index], record if k == 0 else None)

    def _ask_next_call(self) -> None:
        """Hold the next queued call as ``pending_call`` and ask for its result (calls of
        one answer are answered in the order written; the answer goes on after the last)."""
        call = self._queued_calls.pop(0)
        self.pending_call = call
        self.tool_call_requested.emit(call)
        if call.kind == "interpreter" and self.tool_settings.always_run:
            self.run_tool_code()

    def decline_tool_call(self) -> bool:
        """Tell the model the user declined the waiting call; the answer continues."""
        from glmdesk.chat.tools import DECLINED

        return self.submit_tool_result(DECLINED)

    def run_tool_code(self) -> bool:
        """Run the waiting interpreter call on the worker thread; False when none waits."""
        call = self.pending_call
        if call is None or call.kind != "interpreter" or self._running_code is not None:
            return False
        if self.interpreter is None:
            from glmdesk.core import paths
            from glmdesk.engine.tools.interpreter import CodeInterpreter, new_workdir

            workdir = new_workdir(paths.interpreter_root(), f"session-{id(self)}-{self._request_id}")
            self.interpreter = CodeInterpreter(
                workdir, self.tool_settings.timeout_s, self.tool_settings.memory_mib
            )
        self._code_run += 1
        self._running_code = self._code_run
        self.code_started.emit()
        self._code_requested.emit(self._code_run, self.interpreter, call.code, self.tool_settings.timeout_s)
        return True

    def is_running_code(self) -> bool:
        """True while interpreter code runs."""
        return self._running_code is not None

    @Slot()
    def kill_code(self) -> None:
        """Kill the running interpreter code now (never blocks; the kernel restarts next time)."""
        if self.interpreter is not None and self._running_code is not None:
            self.interpreter.kill()

    @Slot(int, object)
    def _on_code_finished(self, run_id: int, result) -> None:
        if run_id != self._running_code:
            return
        self._running_code = None
        self.code_finished.emit(result)
        if isinstance(result, ErrorInfo):
            self.error_occurred.emit(result)
            return
        from glmdesk.engine.families import loaded_tool_dialect
        from glmdesk.engine.formats.chatglm_tools import interpreter_observation

        info = self.loader.model_info
        dialect = (loaded_tool_dialect(info) if info else None) or "glm4"
        self.submit_tool_result(interpreter_observation(dialect, result.observation()), result.images)

    def _close_interpreter(self) -> None:
        interpreter, self.interpreter = self.interpreter, None
        self.pending_call = None
        self._queued_calls = []
        if interpreter is not None:
            interpreter.kill()
            self.loader.release(interpreter)  # closed on the worker thread
