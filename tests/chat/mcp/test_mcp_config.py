"""mcp.json: the shape other apps use, secrets in the keyring, import, kept approvals."""

from __future__ import annotations

import json
import sys

import pytest

from glmdesk.chat.mcp.approvals import ALLOW_ALWAYS, ALLOW_ONCE, McpApprovals, deny
from glmdesk.chat.mcp.config import IN_KEYRING, McpConfig, McpServerConfig, MemorySecrets, load_config
from glmdesk.chat.mcp.hub import McpTool
from glmdesk.chat.mcp.source import approval_hook
from glmdesk.core.tools import ToolCall

CLAUDE_FILE = {
    "mcpServers": {
        "filesystem": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]},
        "github": {
            "command": "docker",
            "args": ["run", "ghcr.io/github/github-mcp-server"],
            "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_secret", "LOG": "info"},
        },
        "docs": {
            "url": "https://example.org/mcp",
            "headers": {"Authorization": "Bearer abc"},
            "note": "kept",
        },
    }
}


def test_another_apps_file_is_read_and_secrets_go_to_the_keyring_not_the_file(tmp_path):
    secrets = MemorySecrets()
    config, problems = McpConfig().imported(json.dumps(CLAUDE_FILE), secrets)
    assert problems == [] and [s.name for s in config.servers] == ["filesystem", "github", "docs"]
    path = tmp_path / "mcp.json"
    assert config.save(path, secrets) == []
    text = path.read_text()
    assert "ghp_secret" not in text and "Bearer abc" not in text
    saved = json.loads(text)["mcpServers"]
    assert saved["github"]["env"] == {"GITHUB_PERSONAL_ACCESS_TOKEN": IN_KEYRING, "LOG": "info"}
    assert saved["docs"]["headers"] == {"Authorization": IN_KEYRING} and saved["docs"]["note"] == "kept"
    again = load_config(path, secrets)
    assert again.server("github").env["GITHUB_PERSONAL_ACCESS_TOKEN"] == "ghp_secret"
    assert again.server("docs").headers["Authorization"] == "Bearer abc"


def test_a_secret_no_keyring_takes_is_not_written(tmp_path):
    class NoKeyring(MemorySecrets):
        def set(self, user, value):
            return False

    server = McpServerConfig("s", command="x", env={"API_KEY": "k"})
    lost = McpConfig((server,)).save(tmp_path / "mcp.json", NoKeyring())
    assert lost == ["s: env API_KEY"] and '"k"' not in (tmp_path / "mcp.json").read_text()


def test_importing_a_taken_name_adds_a_number():
    first, _ = McpConfig().imported(json.dumps(CLAUDE_FILE), MemorySecrets())
    both, _ = first.imported(json.dumps({"mcpServers": {"docs": {"url": "http://x/mcp"}}}), MemorySecrets())
    assert [s.name for s in both.servers][-1] == "docs-2"


def test_bad_entries_are_told_and_the_others_kept(tmp_path):
    path = tmp_path / "mcp.json"
    path.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "ok": {"command": "x"},
                    "both": {"command": "x", "url": "http://y"},
                    "sse": {"type": "sse", "url": "http://z"},
                }
            }
        )
    )
    config = load_config(path, MemorySecrets())
    assert [s.name for s in config.servers] == ["ok"]
    assert any("either a command or a url" in p for p in config.problems)
    assert any("stdio and streamable HTTP" in p for p in config.problems)
    path.write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        load_config(path, MemorySecrets())


def test_the_default_file_is_in_glmdesks_config_folder():
    from glmdesk.chat.mcp.config import default_path
    from glmdesk.core import paths

    assert default_path() == paths.config_dir() / "mcp.json"
    assert load_config().servers == ()


TOOL = McpTool("files", "write_file")
READER = McpTool("files", "read_file", read_only=True)


class Source:
    def __init__(self, *tools):
        self.by_name = {t.name: t for t in tools}

    def tool(self, call):
        return self.by_name.get(call.name)


def test_always_allow_is_kept_after_a_restart_and_revocable(tmp_path):
    asked = []
    approvals = McpApprovals(tmp_path / "a.json")
    hook = approval_hook(Source(TOOL), approvals, lambda call, tool: asked.append(call.name) or ALLOW_ALWAYS)
    call = ToolCall("write_file", {"path": "a"})
    assert hook(call).allowed and hook(call).allowed
    assert asked == ["write_file"]
    restarted = McpApprovals(tmp_path / "a.json")
    assert restarted.kept() == (("files", "write_file"),)
    hook = approval_hook(Source(TOOL), restarted, lambda call, tool: asked.append(call.name) or deny("no"))
    assert hook(call).allowed and asked == ["write_file"]
    restarted.revoke("files", "write_file")
    refused = hook(call)
    assert not refused.allowed and refused.reason == "no" and asked == ["write_file", "write_file"]


def test_allow_once_asks_again_and_read_only_tools_run_when_the_user_said_so(tmp_path):
    asked = []
    approvals = McpApprovals(tmp_path / "a.json")
    hook = approval_hook(
        Source(TOOL, READER), approvals, lambda call, tool: asked.append(call.name) or ALLOW_ONCE
    )
    hook(ToolCall("write_file", {})), hook(ToolCall("write_file", {})), hook(ToolCall("read_file", {}))
    assert asked == ["write_file", "write_file", "read_file"]
    approvals.set_read_only_auto(True)
    assert hook(ToolCall("read_file", {})).allowed and asked[-1] == "read_file" and len(asked) == 3
    assert McpApprovals(tmp_path / "a.json").read_only_auto


def test_interpreter_code_waits_for_the_same_approval_and_other_functions_do_not(tmp_path):
    asked = []
    hook = approval_hook(
        Source(), McpApprovals(tmp_path / "a.json"), lambda call, tool: asked.append(tool) or deny()
    )
    assert not hook(ToolCall("interpreter", {"code": "1"}, kind="interpreter")).allowed
    assert hook(ToolCall("custom", {})).allowed
    assert asked == [None]


def test_a_command_is_agreed_once_and_asked_again_when_it_changes(tmp_path):
    approvals = McpApprovals(tmp_path / "a.json")
    asked = []
    consent = approvals.consent(lambda s: asked.append(s.command_line()) or True)
    server = McpServerConfig("t", command=sys.executable, args=("-m", "x"))
    assert consent(server) and consent(server) and len(asked) == 1
    assert McpApprovals(tmp_path / "a.json").agreed(server)
    assert consent(McpServerConfig("t", command=sys.executable, args=("-m", "y"))) and len(asked) == 2


def test_a_tool_list_that_takes_much_of_the_context_is_told():
    from glmdesk.chat.mcp.source import function_of, tool_list_tokens, tools_context_note

    functions = [function_of(McpTool("s", f"t{k}", "d" * 400), f"t{k}") for k in range(10)]
    tokens = tool_list_tokens(functions)
    assert 1000 < tokens < 1300 and tool_list_tokens(functions, lambda text: 7) == 7
    assert tools_context_note(tokens, 100_000) is None and tools_context_note(tokens, 0) is None
    note = tools_context_note(tokens, 2048)
    assert (
        note.startswith(f"The tools' descriptions take about {tokens:,} tokens")
        and "2,048-token context" in note
    )
