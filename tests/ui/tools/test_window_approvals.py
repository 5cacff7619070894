"""Tool calls of window answers go through the one tool loop: a scripted GLM-4.5 engine
calls a tool, the call waits in its card for Allow once, Always allow (kept in the
approvals store, so a new window asks no more), Deny with a reason (the engine's next
request carries it) or Stop (nothing runs); interpreter code waits in the same card."""

from __future__ import annotations

import pytest

from glmdesk.chat.mcp.approvals import McpApprovals
from glmdesk.chat.mcp.config import McpConfig
from glmdesk.chat.mcp.hub import McpHub
from glmdesk.chat.tools import DECLINED
from glmdesk.core.settings import CacheSettings, LoadSettings, ParamsBox, SamplingParams
from glmdesk.core.tools import ToolCall, ToolSet, ToolSettings
from glmdesk.ui.session.answer_tools import AnswerTools
from glmdesk.ui.session.chat_session import ChatSession
from glmdesk.ui.tools.mcp_choice import ChatMcp, McpChoice
from tests.chat.mcp.conftest import FAULTS
from tests.helpers.fake_backend import ScriptedBackend, call_chunk, text_reply

MS = 20_000
ECHO = ToolCall("echo", {"text": "héllo wörld " * 20})
CODE = ToolCall("python", {"code": "print(6 * 7)"}, kind="interpreter")


@pytest.fixture(scope="module")
def hub():
    hub = McpHub(McpConfig((FAULTS,)), consent=lambda _s: True)
    yield hub
    hub.close()


@pytest.fixture
def make_session(qtbot, tmp_path, monkeypatch, hub):
    monkeypatch.setenv("GLMDESK_HOME", str(tmp_path / "home"))
    sessions: list[ChatSession] = []

    def make(backend, store, servers=("faults",)) -> ChatSession:
        approvals = McpApprovals(store)
        mcp = ChatMcp(McpConfig((FAULTS,)), approvals, hub=hub)
        mcp.set_choice(McpChoice(tuple(servers)))
        tools = AnswerTools(approvals, mcp)
        session = ChatSession(ParamsBox(SamplingParams(temperature=0.0)), backend, tools=tools)
        sessions.append(session)
        with qtbot.waitSignal(session.loader.model_ready, timeout=MS):
            session.loader.start(LoadSettings())
        return session

    yield make
    for session in sessions:
        session.shutdown()


def _ask(qtbot, session, text="echo"):
    """Send ``text``; the approval card the call waits in."""
    with qtbot.waitSignal(session.tools.gate.card_shown, timeout=MS) as shown:
        assert session.send(text, "", CacheSettings())
    card = shown.args[0]
    qtbot.addWidget(card)
    assert session.is_streaming()  # the answer waits for the user
    return card


def _observation(request) -> str:
    return next(m.content for m in request if m.role == "observation")


def test_allow_once_runs_the_mcp_call_and_asks_again_next_time(qtbot, make_session, tmp_path):
    backend = ScriptedBackend([call_chunk(ECHO)], text_reply("Done."))
    session = make_session(backend, tmp_path / "a.json")
    card = _ask(qtbot, session)
    assert card.arguments.toPlainText().count("héllo wörld") == 20  # in full
    assert "echo" in [f.name for f in backend.requests[0][0].tools.functions]  # offered in the prompt
    with qtbot.waitSignal(session.answer_ended, timeout=MS):
        card.allow_button.click()
    assert _observation(backend.requests[1]) == "echo: " + "héllo wörld " * 20
    assert [m.role for m in session.state.messages] == ["user", "assistant", "observation", "assistant"]
    assert session.state.messages[-1].content == "Done."
    backend.replies = [[call_chunk(ECHO)], text_reply("Again.")]
    _ask(qtbot, session, "echo again")  # once: the next call asks again
    session.stop_answer()


def test_always_allow_is_kept_for_a_new_window_and_revocable(qtbot, make_session, tmp_path):
    store = tmp_path / "a.json"
    first = make_session(ScriptedBackend([call_chunk(ECHO)], text_reply("Done.")), store)
    card = _ask(qtbot, first)
    with qtbot.waitSignal(first.answer_ended, timeout=MS):
        card.always_button.click()
    backend = ScriptedBackend([call_chunk(ECHO)], text_reply("Done."))
    second = make_session(backend, store)  # as after a restart: the same store
    shown = []
    second.tools.gate.card_shown.connect(shown.append)
    with qtbot.waitSignal(second.answer_ended, timeout=MS):
        second.send("echo", "", CacheSettings())
    assert shown == [] and _observation(backend.requests[1]).startswith("echo: ")
    McpApprovals(store).revoke("faults", "echo")  # the Tools page's Revoke
    third = make_session(ScriptedBackend([call_chunk(ECHO)], text_reply("Done.")), store)
    _ask(qtbot, third)
    third.stop_answer()


def test_deny_with_a_reason_reaches_the_engines_next_request(qtbot, make_session, tmp_path):
    backend = ScriptedBackend([call_chunk(ECHO)], text_reply("Understood."))
    session = make_session(backend, tmp_path / "a.json")
    card = _ask(qtbot, session)
    card.reason.setText("not on my machine")
    answered = []
    session.tool_answered.connect(lambda call, result: answered.append(result))
    with qtbot.waitSignal(session.answer_ended, timeout=MS):
        card.deny_button.click()
    assert _observation(backend.requests[1]) == f"{DECLINED} not on my machine"
    assert answered[0].declined and card.state_label.text() == "Denied"


def test_stop_while_a_call_waits_ends_the_answer_and_nothing_runs(qtbot, make_session, tmp_path):
    backend = ScriptedBackend([call_chunk(ECHO)], text_reply("Done."))
    session = make_session(backend, tmp_path / "a.json")
    card = _ask(qtbot, session)
    ran = []
    session.tools.gate.call_started.connect(ran.append)
    with qtbot.waitSignal(session.answer_ended, timeout=MS):
        session.stop_answer()
    qtbot.waitUntil(lambda: card.state_label.text() == "Stopped: not run", timeout=MS)
    assert not session.is_streaming() and len(backend.requests) == 1 and ran == []
    assert [m.role for m in session.state.messages] == ["user", "assistant"]  # no observation
    card.allow_button.click()  # too late: disabled
    assert ran == [] and len(backend.requests) == 1
    with qtbot.waitSignal(session.answer_ended, timeout=MS):  # the window answers the next message
        backend.replies = [text_reply("Hi.")]
        assert session.send("hello", "", CacheSettings())


def test_interpreter_code_waits_in_the_same_approval(qtbot, make_session, tmp_path):
    backend = ScriptedBackend([call_chunk(CODE)], text_reply("It is 42."))
    session = make_session(backend, tmp_path / "a.json", servers=())
    session.tools.set_tools(ToolSet(interpreter=True), ToolSettings(timeout_s=60))
    card = _ask(qtbot, session, "6*7?")
    assert card.title.text() == "Run this code?" and not card.always_button.isVisibleTo(card)
    assert session.tools.interpreter is None  # nothing ran before the click
    with qtbot.waitSignal(session.answer_ended, timeout=60_000):
        card.allow_button.click()
    assert _observation(backend.requests[1]).strip() == "42"
    assert session.state.messages[-1].content == "It is 42."
