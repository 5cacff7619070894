"""What the user allowed, kept between starts: ``mcp_approvals.json`` in glmdesk's config
folder.

- ``always``: tools allowed without asking, per server and tool (``server/tool``), until
  the user revokes them (the Tools page, or :meth:`McpApprovals.revoke`);
- ``readOnlyAuto``: tools the server marks read-only (``readOnlyHint``) are allowed
  without asking (off by default: the hint is the server's word, not a guarantee);
- ``commands``: the server commands the user agreed to run (a changed command, args or
  environment names is asked again).

:func:`approval_hook` makes from it the approval hook of an answer run
(:mod:`glmdesk.chat.tools`): kept answers first, then the front end's ``ask``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from glmdesk.chat.mcp.config import McpServerConfig
from glmdesk.chat.tools import ALLOW, Approval

#: The file's name in glmdesk's config folder.
FILE_NAME = "mcp_approvals.json"


@dataclass(frozen=True)
class Decision:
    """The user's answer to one call: an :class:`~glmdesk.chat.tools.Approval`, and
    whether to keep allowing this tool (Always allow)."""

    approval: Approval
    always: bool = False


ALLOW_ONCE = Decision(ALLOW)
ALLOW_ALWAYS = Decision(ALLOW, always=True)


def deny(reason: str = "") -> Decision:
    """Deny, telling the model ``reason`` (may be empty)."""
    return Decision(Approval(False, reason.strip()))


class McpApprovals:
    """The kept approvals (see the module docstring); thread-safe, saved at each change.

    Args:
        path: The file (default: ``mcp_approvals.json`` in the config folder, found when
            the object is made). A missing or damaged file allows nothing without asking.
    """

    def __init__(self, path: Path | None = None) -> None:
        if path is None:
            from glmdesk.core import paths

            path = paths.config_dir() / FILE_NAME
        self.path = path
        self._lock = threading.Lock()
        self._always: set[str] = set()
        self._commands: dict[str, str] = {}
        self._read_only_auto = False
        self._read()

    def _read(self) -> None:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return  # none yet, or damaged: nothing is allowed without asking
        if not isinstance(data, dict):
            return
        self._always = {str(x) for x in data.get("always", []) if isinstance(x, str)}
        commands = data.get("commands", {})
        self._commands = {str(k): str(v) for k, v in commands.items()} if isinstance(commands, dict) else {}
        self._read_only_auto = data.get("readOnlyAuto") is True

    def _write(self) -> None:
        data = {
            "always": sorted(self._always),
            "readOnlyAuto": self._read_only_auto,
            "commands": self._commands,
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(data, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
        tmp.replace(self.path)

    # --- tools ------------------------------------------------------------------
    def always_allowed(self, server: str, tool: str) -> bool:
        """Whether the user chose Always allow for ``tool`` of ``server``."""
        with self._lock:
            return f"{server}/{tool}" in self._always

    def allow_always(self, server: str, tool: str) -> None:
        """Keep allowing ``tool`` of ``server`` without asking."""
        with self._lock:
            self._always.add(f"{server}/{tool}")
            self._write()

    def revoke(self, server: str, tool: str) -> None:
        """Ask again for ``tool`` of ``server``."""
        with self._lock:
            self._always.discard(f"{server}/{tool}")
            self._write()

    def kept(self) -> tuple[tuple[str, str], ...]:
        """The always-allowed tools as ``(server, tool)``, sorted."""
        with self._lock:
            return tuple(tuple(x.split("/", 1)) for x in sorted(self._always))  # type: ignore[misc]

    @property
    def read_only_auto(self) -> bool:
        """Whether tools marked read-only run without asking."""
        return self._read_only_auto

    def set_read_only_auto(self, on: bool) -> None:
        """Turn the read-only rule on or off."""
        with self._lock:
            self._read_only_auto = bool(on)
            self._write()

    # --- commands ---------------------------------------------------------------
    def agreed(self, server: McpServerConfig) -> bool:
        """Whether the user agreed to run ``server``'s command as it is now."""
        with self._lock:
            return self._commands.get(server.name) == server.command_line()

    def agree(self, server: McpServerConfig) -> None:
        """Remember that the user agreed to run ``server``'s command."""
        with self._lock:
            self._commands[server.name] = server.command_line()
            self._write()

    def consent(self, ask: Callable[[McpServerConfig], bool]) -> Callable[[McpServerConfig], bool]:
        """A hub's ``consent``: yes when agreed before, else ``ask(server)`` (a yes is kept)."""

        def consent(server: McpServerConfig) -> bool:
            if self.agreed(server):
                return True
            if ask(server):
                self.agree(server)
                return True
            return False

        return consent

    def needs_asking(self, server: str, tool: str, read_only: bool) -> bool:
        """Whether a call of ``tool`` must wait for the user."""
        return not (self.always_allowed(server, tool) or (read_only and self.read_only_auto))
