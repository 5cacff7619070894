"""Which MCP servers and tools a chat offers the model, in the window's Tools section.

- :class:`McpChoice`: one chat's choice (the servers on, the tools turned off), kept
  with the conversation as its ``mcp`` setting
  (:meth:`~glmdesk.core.history.History.set_chat_setting`) in the JSON shape
  ``{"servers": [name, ...], "off": ["server/tool", ...]}``.
- :class:`ChatMcp` (no widgets): the window's configured servers (``mcp.json``), their
  hub (started on first use, stopped with the window) and the open chat's choice; its
  :meth:`ChatMcp.source` gives an answer its MCP tools
  (:class:`~glmdesk.chat.mcp.source.McpToolSource`).
- :class:`McpChoiceList`: the checkable list of servers (and, once a server is ready, its
  tools) under the Tools section's mode.

A server is offered only after the user agreed to run its command (asked once, when it
is first ticked, and kept in :class:`~glmdesk.chat.mcp.approvals.McpApprovals`); the hub
never asks from an answer's thread. A chat without a stored choice offers the servers
that are on in ``mcp.json`` and whose command the user agreed to.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QCoreApplication, QObject, Qt, Signal, Slot
from PySide6.QtWidgets import QMessageBox, QTreeWidget, QTreeWidgetItem, QWidget

from glmdesk.chat.mcp.approvals import McpApprovals
from glmdesk.chat.mcp.config import McpConfig, McpServerConfig
from glmdesk.chat.mcp.hub import McpHub, ServerStatus
from glmdesk.chat.mcp.source import McpToolSource

#: The per-chat setting's key.
SETTING_KEY = "mcp"


@dataclass(frozen=True)
class McpChoice:
    """One chat's MCP servers and tools.

    Attributes:
        servers: The servers whose tools are offered, by name.
        off: Tools of those servers not offered, as ``server/tool``.
    """

    servers: tuple[str, ...] = ()
    off: tuple[str, ...] = ()

    def to_json(self) -> dict[str, list[str]]:
        """The stored shape (see the module docstring)."""
        return {"servers": list(self.servers), "off": list(self.off)}

    @classmethod
    def from_json(cls, value: Any) -> McpChoice | None:
        """A stored value as a choice; ``None`` when the chat has none (or it is damaged)."""
        if not isinstance(value, dict):
            return None
        servers, off = value.get("servers", []), value.get("off", [])
        if not isinstance(servers, list) or not isinstance(off, list):
            return None
        return cls(tuple(str(s) for s in servers), tuple(str(t) for t in off))

    def is_on(self, server: str, tool: str) -> bool:
        """Whether ``tool`` of ``server`` is offered."""
        return server in self.servers and f"{server}/{tool}" not in self.off


class ChatMcp:
    """The window's MCP servers and the open chat's choice (thread-safe: the choice is read
    on the worker thread when an answer starts).

    Args:
        config: The configured servers.
        approvals: The kept approvals and agreed commands (shared with the approval cards).
        hub: The running servers (default: made on first use from ``config``; it starts
            only servers whose command was agreed).
    """

    def __init__(self, config: McpConfig, approvals: McpApprovals, hub: McpHub | None = None) -> None:
        self.config, self.approvals = config, approvals
        self._hub, self._owns_hub = hub, hub is None
        self._lock = threading.Lock()
        self._choice = self.default_choice()

    @classmethod
    def from_files(cls, approvals: McpApprovals) -> ChatMcp:
        """The servers of ``mcp.json`` in the config folder (none when it does not exist)."""
        from glmdesk.chat.mcp.config import load_config

        return cls(load_config(), approvals)

    def hub(self) -> McpHub:
        """The running servers (made at the first call)."""
        with self._lock:
            if self._hub is None:
                self._hub = McpHub(self.config, self.approvals.consent(lambda _server: False))
            return self._hub

    def start_auto(self) -> None:
        """Start, in the background, the servers the user said start with glmdesk
        (``autoStart``) whose command was agreed; makes the hub only when there is one."""
        if any(s.auto_start and not s.disabled for s in self.config.servers):
            self.hub().start_auto()

    def set_config(self, config: McpConfig) -> None:
        """Use ``config`` (the user saved ``mcp.json`` in the window) from the next answer
        on; the hub, if made, was given it by the page that saved it."""
        with self._lock:
            self.config = config

    def started(self) -> bool:
        """Whether the hub was made (a server may run)."""
        with self._lock:
            return self._hub is not None

    def servers(self) -> tuple[McpServerConfig, ...]:
        """The configured servers that are on, in the file's order."""
        return tuple(s for s in self.config.servers if not s.disabled)

    def default_choice(self) -> McpChoice:
        """A chat's choice before the user made one: the servers on whose command was agreed."""
        return McpChoice(tuple(s.name for s in self.servers() if self.approvals.agreed(s)))

    def choice(self) -> McpChoice:
        """The open chat's choice."""
        with self._lock:
            return self._choice

    def set_choice(self, choice: McpChoice) -> None:
        """The open chat's choice, from the next answer on."""
        with self._lock:
            self._choice = choice

    def source(self) -> McpToolSource | None:
        """The open chat's MCP tools for an answer (``None`` when no server is on); its
        servers start when the answer's worker refreshes it."""
        choice = self.choice()
        names = [s.name for s in self.servers() if s.name in choice.servers]
        if not names:
            return None
        return McpToolSource(self.hub(), names, self.approvals, lambda t: choice.is_on(t.server, t.name))

    def close(self) -> None:
        """Stop the servers this object started (their whole process trees)."""
        with self._lock:
            hub, self._hub = (self._hub, None) if self._owns_hub else (None, self._hub)
        if hub is not None:
            hub.close()


def agree_to_start(parent: QWidget, approvals: McpApprovals, server: McpServerConfig) -> bool:
    """Ask once (over ``parent``) whether ``server``'s command may run, showing the command;
    a yes is kept in ``approvals``. True when agreed, now or before."""
    if approvals.agreed(server):
        return True
    answer = QMessageBox.question(
        parent,
        QCoreApplication.translate("McpServersPage", "Start an MCP server?"),
        QCoreApplication.translate(
            "McpServersPage",
            "glmdesk will run this command for the MCP server {name}:\n\n{command}\n\nRun it?",
        ).format(name=server.name, command=server.command_line()),
    )
    if answer != QMessageBox.StandardButton.Yes:
        return False
    approvals.agree(server)
    return True


class HubStatusRelay(QObject):
    """Carries the MCP hub's status changes (told on the hub's thread) to the GUI thread:
    connect ``status_changed`` queued and give the hub ``status_changed.emit``."""

    status_changed = Signal(object)


class McpChoiceList(QTreeWidget):
    """The open chat's MCP servers (checkable) and, under a ready server, its tools.

    Args:
        mcp: The window's servers and the open chat's choice.
        parent: Parent widget.

    Signals:
        choice_changed(McpChoice): The user ticked or unticked a server or a tool.
    """

    choice_changed = Signal(object)

    def __init__(self, mcp: ChatMcp, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.mcp = mcp
        self.setObjectName("mcp_choice")
        self.setHeaderHidden(True)
        self.setRootIsDecorated(True)
        self._filling = False
        self._relay = HubStatusRelay(self)
        self._relay.status_changed.connect(self._on_status, Qt.ConnectionType.QueuedConnection)
        self._listening = False
        self.itemChanged.connect(self._on_item_changed)
        self.setVisible(bool(mcp.servers()))
        self.show_choice(mcp.choice())

    def show_choice(self, choice: McpChoice) -> None:
        """Show ``choice`` (a chat opened, or a new one) and use it from the next answer."""
        self.mcp.set_choice(choice)
        self._filling = True
        try:
            self.clear()
            for server in self.mcp.servers():
                item = QTreeWidgetItem([server.name])
                item.setData(0, Qt.ItemDataRole.UserRole, server.name)
                item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
                on = server.name in choice.servers
                item.setCheckState(0, Qt.CheckState.Checked if on else Qt.CheckState.Unchecked)
                self.addTopLevelItem(item)
                if self.mcp.started():  # tools are known once the server runs
                    self._add_tools(item, self.mcp.hub().status(server.name), choice)
        finally:
            self._filling = False

    def _add_tools(self, item: QTreeWidgetItem, status: ServerStatus, choice: McpChoice) -> None:
        item.takeChildren()
        for tool in status.tools:
            child = QTreeWidgetItem([tool.title or tool.name])
            child.setData(0, Qt.ItemDataRole.UserRole, tool.name)
            child.setToolTip(0, tool.description)
            child.setFlags(child.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            on = f"{status.name}/{tool.name}" not in choice.off
            child.setCheckState(0, Qt.CheckState.Checked if on else Qt.CheckState.Unchecked)
            item.addChild(child)

    def listen(self) -> None:
        """Show each server's tools once it is ready (the hub tells its changes)."""
        if not self._listening:
            self._listening = True
            self.mcp.hub().add_listener(self._relay.status_changed.emit)
            self.show_choice(self.mcp.choice())  # the servers that started before

    @Slot(object)
    def _on_status(self, status: ServerStatus) -> None:
        for row in range(self.topLevelItemCount()):
            item = self.topLevelItem(row)
            if item is not None and item.data(0, Qt.ItemDataRole.UserRole) == status.name:
                self._filling = True
                try:
                    self._add_tools(item, status, self.mcp.choice())
                finally:
                    self._filling = False

    def current(self) -> McpChoice:
        """The choice the list shows (a server whose tools are not listed yet keeps the
        tools turned off before)."""
        before = self.mcp.choice().off
        servers: list[str] = []
        off: list[str] = []
        for row in range(self.topLevelItemCount()):
            item = self.topLevelItem(row)
            if item is None:
                continue
            name = item.data(0, Qt.ItemDataRole.UserRole)
            if item.checkState(0) == Qt.CheckState.Checked:
                servers.append(name)
            if item.childCount() == 0:
                off.extend(t for t in before if t.split("/", 1)[0] == name)
            for k in range(item.childCount()):
                child = item.child(k)
                if child is not None and child.checkState(0) != Qt.CheckState.Checked:
                    off.append(f"{name}/{child.data(0, Qt.ItemDataRole.UserRole)}")
        return McpChoice(tuple(servers), tuple(off))

    @Slot(object, int)
    def _on_item_changed(self, item: QTreeWidgetItem, _column: int) -> None:
        if self._filling:
            return
        if item.parent() is None and item.checkState(0) == Qt.CheckState.Checked:
            server = self.mcp.config.server(item.data(0, Qt.ItemDataRole.UserRole))
            if server is not None and not self._agreed(server):
                self._filling = True
                item.setCheckState(0, Qt.CheckState.Unchecked)
                self._filling = False
                return
        choice = self.current()
        self.mcp.set_choice(choice)
        self.choice_changed.emit(choice)

    def _agreed(self, server: McpServerConfig) -> bool:
        """Whether the user agrees to run ``server``'s command (asked once, then kept)."""
        return agree_to_start(self, self.mcp.approvals, server)
        answer = QMessageBox.question(
            self,
            self.tr("Start an MCP server?"),
            self.tr(
                "glmdesk will run this command for the MCP server {name}:\n\n{command}\n\nRun it?"
            ).format(name=server.name, command=server.command_line()),
        )
        if answer != QMessageBox.StandardButton.Yes:
            return False
        self.mcp.approvals.agree(server)
        return True


def choice_of(settings: dict[str, Any], mcp: ChatMcp) -> McpChoice:
    """A chat's stored choice (its settings' ``mcp``), or the default for one without."""
    stored = McpChoice.from_json(settings.get(SETTING_KEY))
    return stored if stored is not None else mcp.default_choice()
