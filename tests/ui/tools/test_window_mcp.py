"""MCP tools in window answers: the real ``mcp-server-time`` (stdio) offered beside the
built-in tools, called by a scripted GLM-4.5 engine, its result shown under the call's
card; the chat's choice of servers and tools kept with the conversation; a tool list that
takes much of the context is told; a remote engine gets the tools as OpenAI tools."""

from __future__ import annotations

import json
import threading

import pytest

from glmdesk.chat.mcp.approvals import McpApprovals
from glmdesk.chat.mcp.config import McpConfig, default_path, load_config
from glmdesk.chat.mcp.hub import McpHub
from glmdesk.core.history import History
from glmdesk.core.messages import ChatMessage
from glmdesk.core.tools import ToolCall
from glmdesk.engine.tools.openai_tools import messages_to_openai
from glmdesk.ui.app.main_window import MainWindow
from glmdesk.ui.session.answer_tools import AnswerTools
from glmdesk.ui.tools.mcp_choice import ChatMcp, McpChoice
from tests.chat.mcp.conftest import TIME
from tests.helpers.fake_backend import ScriptedBackend, call_chunk, text_reply

MS = 30_000
TOKYO = ToolCall("get_current_time", {"timezone": "Asia/Tokyo"})


def _configured() -> None:
    """``mcp.json`` with the time server, whose command the user agreed to run once."""
    server = {"command": TIME.command, "args": list(TIME.args)}
    default_path().parent.mkdir(parents=True, exist_ok=True)
    default_path().write_text(json.dumps({"mcpServers": {"time": server}}), encoding="utf-8")
    McpApprovals().agree(load_config().servers[0])


@pytest.fixture
def open_window(qtbot, tmp_path):
    windows = []

    def open_(backend) -> MainWindow:
        window = MainWindow(backend=backend, options=lambda: {}, history=History(tmp_path / "h.sqlite3"))
        windows.append(window)
        qtbot.addWidget(window)
        window.show()
        with qtbot.waitSignal(window.loader.model_ready, timeout=MS):
            window.start()
        return window

    yield open_
    for window in windows:
        window.close()


def _tools_offered(request) -> list[str]:
    return [f.name for f in request[0].tools.functions]


def test_a_time_server_tool_is_called_from_a_window_answer_and_its_result_shown(qtbot, open_window):
    _configured()
    backend = ScriptedBackend([call_chunk(TOKYO)], text_reply("It is evening in Tokyo."))
    window = open_window(backend)
    tools_list = window.tools.mcp_list
    assert tools_list is not None and not window.sidebar.tools_panel.mcp_label.isHidden()
    with qtbot.waitSignal(window.session.tools.gate.card_shown, timeout=MS) as shown:
        assert window.send_message("What time is it in Tokyo?")
    approval = shown.args[0]
    assert approval.title.text() == "Run get_current_time of the MCP server time?"
    assert set(_tools_offered(backend.requests[0])) == {"get_current_time", "convert_time"}
    with qtbot.waitSignal(window.session.answer_ended, timeout=MS):
        approval.allow_button.click()
    observation = next(m for m in backend.requests[1] if m.role == "observation")
    assert json.loads(observation.content)["timezone"] == "Asia/Tokyo"
    widgets = window.chat_view.messages()
    assert [w.role for w in widgets] == ["user", "assistant", "observation", "assistant"]
    (card,) = widgets[1].call_cards
    assert approval in card.findChildren(type(approval)) and card.kill_button.isHidden()
    assert "Asia/Tokyo" in widgets[2].text() and widgets[-1].text() == "It is evening in Tokyo."
    # The server's tools are listed once it runs; one turned off is not offered next time.
    qtbot.waitUntil(lambda: tools_list.topLevelItem(0).childCount() == 2, timeout=MS)
    server = tools_list.topLevelItem(0)
    convert = next(server.child(k) for k in range(2) if server.child(k).text(0) == "convert_time")
    from PySide6.QtCore import Qt

    convert.setCheckState(0, Qt.CheckState.Unchecked)
    assert window.session.tools.mcp.choice() == McpChoice(("time",), ("time/convert_time",))
    backend.replies = [text_reply("Fine.")]
    with qtbot.waitSignal(window.session.answer_ended, timeout=MS):
        window.send_message("thanks")
    assert _tools_offered(backend.requests[-1]) == ["get_current_time"]
    # Kept with the chat: a new chat offers every tool again, the first one its own choice.
    first = window.history_controller.conversation_id
    assert window.history_controller.flush(10)
    window.new_chat()
    assert window.session.tools.mcp.choice() == McpChoice(("time",))
    with qtbot.waitSignal(window.history_controller.conversation_opened, timeout=MS):
        window.history_controller.open_conversation(first)
    assert window.session.tools.mcp.choice() == McpChoice(("time",), ("time/convert_time",))
    assert window.history_controller.history.chat_settings(first)["mcp"] == {
        "servers": ["time"],
        "off": ["time/convert_time"],
    }


def test_a_tool_list_that_takes_much_of_the_context_is_told(qtbot, open_window):
    _configured()
    backend = ScriptedBackend(text_reply("Hello."), context_length=600)
    window = open_window(backend)
    with qtbot.waitSignal(window.session.answer_ended, timeout=MS):
        window.send_message("hi")
    qtbot.waitUntil(lambda: "tools' descriptions take about" in window.notice.text(), timeout=MS)
    assert "of the 600-token context" in window.notice.text()


def test_a_remote_engine_gets_the_mcp_tools_as_openai_tools(tmp_path):
    hub = McpHub(McpConfig((TIME,)), consent=lambda _s: True)
    try:
        approvals = McpApprovals(tmp_path / "a.json")
        mcp = ChatMcp(McpConfig((TIME,)), approvals, hub=hub)
        mcp.set_choice(McpChoice(("time",)))
        run = AnswerTools(approvals, mcp).for_run(threading.Event(), "glm4", True)
        assert run is not None and run.prepare is not None
        messages, note = run.prepare((ChatMessage("user", "time?"),))
        _wire, tools = messages_to_openai(messages)  # what the remote backend sends
        by_name = {t["function"]["name"]: t["function"] for t in tools}
        assert set(by_name) == {"get_current_time", "convert_time"}
        assert "timezone" in by_name["get_current_time"]["parameters"]["properties"]
        assert note is not None and note.tokens > 0 and note.unavailable == ()
    finally:
        hub.close()


def test_no_mcp_json_shows_no_server_list(qtbot, open_window):
    window = open_window(ScriptedBackend(text_reply("Hi.")))
    assert window.sidebar.tools_panel.mcp_label.isHidden() and window.tools.mcp_list.isHidden()
    assert window.session.tools.mcp.source() is None
