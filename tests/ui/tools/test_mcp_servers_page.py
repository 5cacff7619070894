"""The Tools page's MCP servers: listed from mcp.json, imported from another app's file
(secrets to the keyring), started only after the command was agreed, their state and
stderr shown, stopped, always-allowed tools revoked, the read-only rule kept."""

from __future__ import annotations

import json

import pytest
from PySide6.QtWidgets import QMessageBox

from glmdesk.chat.mcp.approvals import McpApprovals
from glmdesk.chat.mcp.config import McpConfig, McpServerConfig, MemorySecrets, load_config
from glmdesk.chat.mcp.hub import McpHub
from glmdesk.ui.tools.mcp_servers_page import McpServersPage
from tests.chat.mcp.conftest import FAULTS, MISSING


@pytest.fixture
def page(qtbot, tmp_path):
    secrets = MemorySecrets()
    path = tmp_path / "mcp.json"
    McpConfig((FAULTS, MISSING)).save(path, secrets)
    approvals = McpApprovals(tmp_path / "approvals.json")
    hub = McpHub(load_config(path, secrets), consent=approvals.agreed)
    page = McpServersPage(hub, approvals, path, secrets)
    qtbot.addWidget(page)
    yield page
    hub.close()


def test_servers_are_listed_stopped(page):
    assert page.state_of("faults") == "stopped" and page.state_of("missing") == "stopped"
    assert "mcp_test_server.py" in page.table.item(0, 1).text() and page.table.item(0, 2).text() == "3 s"


def test_a_server_starts_only_after_its_command_is_agreed(page, qtbot, monkeypatch):
    asked = []
    monkeypatch.setattr(
        QMessageBox, "question", lambda *a: asked.append(a[2]) or QMessageBox.StandardButton.No
    )
    page.select("faults")
    page.start_button.click()
    assert "mcp_test_server.py" in asked[0] and page.state_of("faults") == "stopped"
    monkeypatch.setattr(
        QMessageBox, "question", lambda *a: asked.append(a[2]) or QMessageBox.StandardButton.Yes
    )
    page.start_button.click()
    qtbot.waitUntil(lambda: page.state_of("faults").startswith("ready"), timeout=20000)
    assert page.state_of("faults") == "ready, 10 tool(s)" and "echo" in page.details.text()
    readies = []
    page.hub.add_listener(lambda st: st.state == "ready" and readies.append(st))
    page.start_button.click()  # restart; agreed before: no question
    assert len(asked) == 2
    qtbot.waitUntil(lambda: len(readies) == 1, timeout=20000)
    page.stop_button.click()
    qtbot.waitUntil(lambda: page.state_of("faults") == "stopped", timeout=20000)


def test_a_server_that_fails_shows_why(page, qtbot, monkeypatch):
    monkeypatch.setattr(QMessageBox, "question", lambda *a: QMessageBox.StandardButton.Yes)
    page.select("missing")
    page.start_button.click()
    qtbot.waitUntil(lambda: page.state_of("missing").startswith("failed"), timeout=20000)
    assert "was not found" in page.state_of("missing")


def test_import_another_apps_file_keeps_secrets_out_of_mcp_json(page, tmp_path):
    other = tmp_path / "claude_desktop_config.json"
    other.write_text(
        json.dumps({"mcpServers": {"gh": {"command": "docker", "env": {"GITHUB_TOKEN": "ghp_x"}}}})
    )
    assert page.import_file(other) == []
    assert page.state_of("gh") == "stopped"
    assert "ghp_x" not in page.path.read_text() and page.secrets.get("gh/env/GITHUB_TOKEN") == "ghp_x"


def test_turn_off_and_remove_are_saved(page):
    page.select("missing")
    page.toggle_button.click()
    assert (
        page.state_of("missing") == "turned off"
        and load_config(page.path, page.secrets).server("missing").disabled
    )
    page.select("missing")
    page.remove_button.click()
    assert page.state_of("missing") == "" and load_config(page.path, page.secrets).server("missing") is None


def test_always_allowed_tools_are_revoked_and_the_read_only_rule_kept(page, tmp_path):
    page.approvals.allow_always("faults", "echo")
    page._fill()
    assert page.always_list.item(0).text() == "faults / echo"
    page.always_list.setCurrentRow(0)
    page.revoke_button.click()
    assert page.always_list.count() == 0 and not McpApprovals(tmp_path / "approvals.json").always_allowed(
        "faults", "echo"
    )
    page.read_only_box.setChecked(True)
    assert McpApprovals(tmp_path / "approvals.json").read_only_auto


def test_a_bad_entry_in_the_dialog_is_told_not_saved(qtbot):
    from glmdesk.ui.tools.mcp_servers_page import ServerDialog

    dialog = ServerDialog(McpServerConfig("x", command="run-me"))
    qtbot.addWidget(dialog)
    dialog.entry.setPlainText('{"command": "a", "url": "http://b"}')
    dialog._check()
    assert dialog.server is None and "either a command or a url" in dialog.error.text()
    dialog.entry.setPlainText("{oops")
    dialog._check()
    assert "not valid JSON" in dialog.error.text()


def test_start_with_glmdesk_is_asked_once_kept_and_starts_only_agreed_servers(page, qtbot, monkeypatch):
    asked = []
    monkeypatch.setattr(
        QMessageBox, "question", lambda *a: asked.append(a[2]) or QMessageBox.StandardButton.No
    )
    page.select("faults")
    page.auto_start_box.click()  # refused: not kept, not started
    assert len(asked) == 1 and not page.auto_start_box.isChecked()
    assert not load_config(page.path, page.secrets).server("faults").auto_start
    monkeypatch.setattr(
        QMessageBox, "question", lambda *a: asked.append(a[2]) or QMessageBox.StandardButton.Yes
    )
    page.auto_start_box.click()
    assert load_config(page.path, page.secrets).server("faults").auto_start
    assert "autoStart" in page.path.read_text() and page.state_of("faults") == "stopped"
    # the next start of glmdesk: a new hub on the saved file starts it by itself
    hub = McpHub(load_config(page.path, page.secrets), consent=page.approvals.agreed)
    try:
        hub.start_auto()
        qtbot.waitUntil(lambda: hub.status("faults").state == "ready", timeout=20000)
        assert hub.status("missing").state == "stopped"
    finally:
        hub.close()


def test_an_auto_start_server_never_agreed_is_not_started(tmp_path, qtbot):
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"faults": {**FAULTS.to_json()[0], "autoStart": True}}}))
    approvals = McpApprovals(tmp_path / "approvals.json")
    hub = McpHub(load_config(path, MemorySecrets()), consent=approvals.agreed)
    states = []
    hub.add_listener(states.append)
    try:
        hub.start_auto()
        qtbot.waitUntil(lambda: bool(states), timeout=20000)
        assert hub.status("faults").state == "stopped" and "was not allowed" in states[0].error
    finally:
        hub.close()


def test_the_time_limit_is_shown_and_changed_per_server(page):
    page.select("faults")
    assert page.timeout_box.value() == 3
    page.timeout_box.setValue(45)
    page.timeout_box.editingFinished.emit()
    assert load_config(page.path, page.secrets).server("faults").timeout_s == 45.0
    assert page.table.item(0, 2).text() == "45 s"


def test_a_ready_servers_resources_are_listed_and_attached(page, qtbot, monkeypatch):
    monkeypatch.setattr(QMessageBox, "question", lambda *a: QMessageBox.StandardButton.Yes)
    page.select("faults")
    page.start_button.click()
    qtbot.waitUntil(lambda: page.resources_list.count() == 3, timeout=20000)
    assert page.resources_list.item(0).text() == "Read me (note://readme)"
    with qtbot.waitSignal(page.resource_attached, timeout=20000) as attached:
        page.attach_button.click()
    assert attached.args == [
        "Read me (note://readme)",
        "The test server's read-me: it has tools, prompts and resources.",
    ]
    page.select("missing")
    assert page.resources_list.count() == 0


def test_import_is_one_click_and_merges_with_what_is_there(page, tmp_path, monkeypatch):
    from PySide6.QtWidgets import QFileDialog

    cursor = tmp_path / "cursor-mcp.json"
    cursor.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "faults": {"command": "npx", "args": ["-y", "some-server"]},
                    "docs": {"url": "https://example.org/mcp", "headers": {"Authorization": "Bearer s3"}},
                    "old": {"type": "sse", "url": "https://example.org/sse"},
                }
            }
        )
    )
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *a, **k: (str(cursor), ""))
    page.import_button.click()
    names = [s.name for s in load_config(page.path, page.secrets).servers]
    assert names == ["faults", "missing", "faults-2", "docs"]  # merged; a taken name numbered
    assert (
        "Bearer s3" not in page.path.read_text()
        and page.secrets.get("docs/headers/Authorization") == "Bearer s3"
    )
    assert "uses the transport 'sse'" in page.details.text()  # the entry left out, in a sentence


def test_the_window_starts_agreed_auto_start_servers_when_it_opens(tmp_path, qtbot):
    from dataclasses import replace

    from glmdesk.ui.tools.mcp_choice import ChatMcp

    approvals = McpApprovals(tmp_path / "approvals.json")
    auto = replace(FAULTS, auto_start=True)
    approvals.agree(auto)
    never = replace(MISSING, auto_start=True)  # asked for, never agreed
    mcp = ChatMcp(McpConfig((auto, never)), approvals)
    try:
        mcp.start_auto()
        hub = mcp.hub()
        qtbot.waitUntil(lambda: hub.status("faults").state == "ready", timeout=20000)
        qtbot.waitUntil(lambda: "was not allowed" in hub.status("missing").error, timeout=20000)
        assert hub.status("missing").state == "stopped"
    finally:
        mcp.close()
    idle = ChatMcp(McpConfig((FAULTS,)), approvals)
    idle.start_auto()
    assert not idle.started()  # no server to start with glmdesk: no hub made
