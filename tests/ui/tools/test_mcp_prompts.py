"""A chosen MCP server's prompts appear on the welcome screen as example prompts: the
button shows the prompt's title and a click sends the prompt's text."""

from __future__ import annotations

from PySide6.QtCore import Qt

from glmdesk.chat.mcp import catalog
from glmdesk.chat.mcp.config import McpConfig
from glmdesk.chat.mcp.hub import McpHub
from glmdesk.ui.chat.welcome import WelcomeWidget
from tests.chat.mcp.conftest import FAULTS, TIME


def test_server_prompts_are_example_prompts_on_the_welcome_screen(qtbot):
    hub = McpHub(McpConfig((TIME, FAULTS)), consent=lambda _s: True)
    try:
        prompts = catalog.example_prompts(hub, ["time", "faults"])
    finally:
        hub.close()
    welcome = WelcomeWidget()
    qtbot.addWidget(welcome)
    welcome.set_server_prompts(prompts)
    (button,) = welcome.server_prompt_buttons
    assert button.text() == "Greet the world" and "Say hello in three languages." in button.toolTip()
    assert not button.isEnabled()  # no model yet, like the other examples
    button.setEnabled(True)
    with qtbot.waitSignal(welcome.prompt_chosen, timeout=2000) as chosen:
        qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
    assert chosen.args == ["Say hello in three languages."]
    welcome.set_server_prompts([])
    assert welcome.server_prompt_buttons == []
