"""Tools -> MCP servers... in the window: the page opens from the menu and from the Tools
section, a server added there is offered in the chat's list at once, its prompts appear on
the welcome once it runs and the chat has it on, and "Attach to message" writes a
resource into the message box."""

from __future__ import annotations

import json

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox

from glmdesk.chat.mcp.config import default_path
from glmdesk.core.history import History
from glmdesk.ui.app.main_window import MainWindow
from tests.chat.mcp.conftest import FAULTS
from tests.helpers.fake_backend import ScriptedBackend, text_reply

MS = 30_000


@pytest.fixture
def window(qtbot, tmp_path):
    window = MainWindow(
        backend=ScriptedBackend(text_reply("Hello.")),
        options=lambda: {},
        history=History(tmp_path / "h.sqlite3"),
    )
    qtbot.addWidget(window)
    window.show()
    with qtbot.waitSignal(window.loader.model_ready, timeout=MS):
        window.start()
    yield window
    window.close()


def _page_with_faults(window, tmp_path, monkeypatch):
    """The page, opened, with the test server (tools, prompts, resources) imported from
    another app's file and started (its command agreed)."""
    servers = window.mcp_servers
    assert servers is not None
    servers.show()
    page = servers.page
    other = tmp_path / "claude_desktop_config.json"
    entry = {"command": FAULTS.command, "args": list(FAULTS.args)}
    other.write_text(json.dumps({"mcpServers": {"faults": entry}}), encoding="utf-8")
    assert page is not None and page.import_file(other) == []
    monkeypatch.setattr(QMessageBox, "question", lambda *a: QMessageBox.StandardButton.Yes)
    page.select("faults")
    page.start_button.click()
    return page


def test_the_page_opens_from_the_tools_menu_and_the_tools_section(window, qtbot):
    servers = window.mcp_servers
    assert servers is not None and window.menus.tools_menu is not None
    assert servers.action in window.menus.tools_menu.actions()
    titles = [a.text() for a in window.menuBar().actions()]
    assert titles.index("&Tools") < titles.index("&Server") < titles.index("&View")
    assert servers.dialog is None  # made when first asked for
    assert window.sidebar.tools_panel.mcp_label.isHidden()  # no server configured yet
    qtbot.mouseClick(servers.button, Qt.MouseButton.LeftButton)
    assert servers.dialog is not None and servers.dialog.isVisible()
    assert servers.page is not None and servers.page.table.rowCount() == 0
    servers.dialog.hide()
    servers.action.trigger()  # the same dialog again
    assert servers.dialog.isVisible() and servers.dialog.findChild(type(servers.page)) is servers.page


def test_a_server_added_on_the_page_is_offered_in_the_chat_and_kept(window, qtbot, tmp_path, monkeypatch):
    page = _page_with_faults(window, tmp_path, monkeypatch)
    panel, tools_list = window.sidebar.tools_panel, window.tools.mcp_list
    assert tools_list is not None and not panel.mcp_label.isHidden() and not tools_list.isHidden()
    assert [tools_list.topLevelItem(i).text(0) for i in range(tools_list.topLevelItemCount())] == ["faults"]
    assert json.loads(default_path().read_text(encoding="utf-8"))["mcpServers"]["faults"]["command"]
    assert [s.name for s in window.session.tools.mcp.config.servers] == ["faults"]
    # Started from the page, then turned on in this chat: its prompt is an example on the welcome.
    qtbot.waitUntil(lambda: page.state_of("faults").startswith("ready"), timeout=MS)
    welcome = window.chat_area.welcome
    assert welcome.server_prompt_buttons == []  # the chat does not have it on yet
    tools_list.topLevelItem(0).setCheckState(0, Qt.CheckState.Checked)
    qtbot.waitUntil(lambda: len(welcome.server_prompt_buttons) == 1, timeout=MS)
    assert welcome.server_prompt_buttons[0].text() == "Greet the world"
    with qtbot.waitSignal(welcome.prompt_chosen, timeout=MS) as chosen:
        welcome.server_prompt_buttons[0].click()
    assert chosen.args == ["Say hello in three languages."]
    # Removing it takes it out of the chat's list.
    page.select("faults")
    page.remove_button.click()
    assert panel.mcp_label.isHidden() and tools_list.topLevelItemCount() == 0
    qtbot.waitUntil(lambda: welcome.server_prompt_buttons == [], timeout=MS)


def test_attach_to_message_writes_the_resource_into_the_message_box(window, qtbot, tmp_path, monkeypatch):
    window.input_box.set_text("Summarise this:")
    page = _page_with_faults(window, tmp_path, monkeypatch)
    qtbot.waitUntil(lambda: page.resources_list.count() == 3, timeout=MS)
    with qtbot.waitSignal(page.resource_attached, timeout=MS):
        page.attach_button.click()
    assert window.input_box.text() == (
        "Summarise this:\nRead me (note://readme):\n"
        "The test server's read-me: it has tools, prompts and resources.\n"
    )
    assert "Read me (note://readme) is in the message box" in window.notice.text()


def test_a_resource_that_cannot_be_read_is_said_in_the_window(window):
    servers = window.mcp_servers
    assert servers is not None
    servers.show()
    page = servers.page
    assert page is not None
    page.resource_failed.emit("The MCP server faults did not answer in 3 s.")
    assert window.notice.text() == "The MCP server faults did not answer in 3 s."
