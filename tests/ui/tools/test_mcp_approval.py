"""Approval cards in the window: an answer run on its own thread calls an MCP tool of the
SDK-built test server; its card waits for Allow once, Always allow (kept after a
restart), Deny with a reason (the model's next prompt carries it), or Stop (nothing runs)."""

from __future__ import annotations

import threading

import pytest

from glmdesk.chat.answer import Tools, run_answer
from glmdesk.chat.events import AnswerDone
from glmdesk.chat.mcp.approvals import McpApprovals
from glmdesk.chat.mcp.config import McpConfig
from glmdesk.chat.mcp.hub import McpHub
from glmdesk.chat.mcp.source import McpToolSource, approval_hook, runner
from glmdesk.core.messages import ChatMessage
from glmdesk.core.parts import TextPart, ToolCallPart
from glmdesk.core.settings import ParamsBox, SamplingParams
from glmdesk.core.tools import ToolCall, ToolSet
from glmdesk.engine.chunk import GenerationChunk
from glmdesk.ui.tools.approval_card import ApprovalCard
from glmdesk.ui.tools.approval_gate import ApprovalGate
from tests.chat.mcp.conftest import FAULTS

ECHO = ToolCall("echo", {"text": "héllo wörld " * 20})


class Script:
    """A stream that first calls ``echo``, then answers text; keeps each request."""

    def __init__(self) -> None:
        self.requests: list[list[ChatMessage]] = []

    def __call__(self, messages, params, cache, stop):
        self.requests.append(list(messages))
        if len(self.requests) == 1:
            part = ToolCallPart("echo", ECHO.arguments_json(), done=True)
            yield GenerationChunk(
                finish_reason="tool_calls", tool_call=ECHO, tool_calls=(ECHO,), parts=(part,)
            )
        else:
            yield GenerationChunk(finish_reason="stop", parts=(TextPart("Done."),))


@pytest.fixture(scope="module")
def hub():
    hub = McpHub(McpConfig((FAULTS,)), consent=lambda _s: True)
    yield hub
    hub.close()


class Answer:
    """One answer run on a Python thread, its tool calls approved through a gate."""

    def __init__(self, hub, approvals: McpApprovals) -> None:
        self.stop = threading.Event()
        self.gate = ApprovalGate(self.stop)
        self.source = McpToolSource(hub, ["faults"], approvals)
        self.source.refresh()
        self.ran: list[str] = []
        send = runner(self.source, lambda c: None)

        def run(call):
            self.ran.append(call.name)
            return send(call)

        self.tools = Tools(approval_hook(self.source, approvals, self.gate.ask), run)
        self.script = Script()
        self.events: list = []
        self.finished = threading.Event()

    def start(self) -> None:
        messages = [
            ChatMessage("system", "", tools=ToolSet(self.source.functions())),
            ChatMessage("user", "echo"),
        ]
        params = ParamsBox(SamplingParams(temperature=0.0, max_new_tokens=20))

        def work():
            self.events = list(run_answer(self.script, messages, params, None, self.stop, self.tools))
            self.finished.set()

        threading.Thread(target=work, daemon=True).start()

    def observation(self) -> str:
        return next(m.content for m in self.script.requests[1] if m.role == "observation")


def _card(qtbot, answer: Answer) -> ApprovalCard:
    with qtbot.waitSignal(answer.gate.card_shown, timeout=10000) as shown:
        answer.start()
    card = shown.args[0]
    qtbot.addWidget(card)
    return card


def test_allow_once_runs_the_call_with_the_arguments_shown_in_full(qtbot, hub, tmp_path):
    answer = Answer(hub, McpApprovals(tmp_path / "a.json"))
    card = _card(qtbot, answer)
    assert card.arguments.toPlainText().count("héllo wörld") == 20  # in full, not cut
    assert card.always_button.isVisibleTo(card) and card.read_only_label.isVisibleTo(card)
    card.allow_button.click()
    qtbot.waitUntil(answer.finished.is_set, timeout=20000)
    assert answer.observation() == "echo: " + "héllo wörld " * 20
    assert isinstance(answer.events[-1], AnswerDone) and answer.events[-1].finish_reason == "stop"
    assert not card.allow_button.isEnabled() and card.state_label.text() == "Allowed"


def test_always_allow_is_kept_after_a_restart_and_asks_no_more(qtbot, hub, tmp_path):
    answer = Answer(hub, McpApprovals(tmp_path / "a.json"))
    _card(qtbot, answer).always_button.click()
    qtbot.waitUntil(answer.finished.is_set, timeout=20000)
    again = Answer(hub, McpApprovals(tmp_path / "a.json"))  # as after a restart
    shown = []
    again.gate.card_shown.connect(shown.append)
    again.start()
    qtbot.waitUntil(again.finished.is_set, timeout=20000)
    assert shown == [] and again.observation().startswith("echo: ")


def test_deny_with_a_reason_reaches_the_models_next_prompt(qtbot, hub, tmp_path):
    answer = Answer(hub, McpApprovals(tmp_path / "a.json"))
    card = _card(qtbot, answer)
    card.reason.setText("not on my machine")
    card.deny_button.click()
    qtbot.waitUntil(answer.finished.is_set, timeout=20000)
    assert answer.ran == []
    assert answer.observation() == "The user declined to run this tool call. not on my machine"


def test_stop_while_waiting_ends_the_answer_and_runs_nothing(qtbot, hub, tmp_path):
    answer = Answer(hub, McpApprovals(tmp_path / "a.json"))
    card = _card(qtbot, answer)
    answer.stop.set()
    qtbot.waitUntil(answer.finished.is_set, timeout=10000)
    qtbot.waitUntil(lambda: card.state_label.text() == "Stopped: not run", timeout=5000)
    assert answer.ran == [] and len(answer.script.requests) == 1
    card.allow_button.click()  # too late: disabled, nothing runs
    assert answer.ran == []


def test_interpreter_code_waits_in_the_same_card_without_always(qtbot):
    card = ApprovalCard(ToolCall("interpreter", {"code": "print(6 * 7)"}, kind="interpreter"), None)
    qtbot.addWidget(card)
    assert card.arguments.toPlainText() == "print(6 * 7)"
    assert not card.always_button.isVisibleTo(card) and card.title.text() == "Run this code?"
    with qtbot.waitSignal(card.decided, timeout=1000) as decided:
        card.deny_button.click()
    assert not decided.args[0].approval.allowed
