"""Tools -> MCP servers...: the window's place for the servers of ``mcp.json``.

:class:`McpServersWindow` owns the action (in the Tools menu and as a button in the
settings' Tools section) that opens :class:`~glmdesk.ui.tools.mcp_servers_page.McpServersPage`
in a dialog of its own, made once and kept (a server it starts goes on running while the
dialog is closed). What the page changes reaches the rest of the window here:

- a saved ``mcp.json`` becomes the chats' configuration (:meth:`ChatMcp.set_config`) and
  the Tools section's list of servers is filled again;
- a resource attached with "Attach to message" is written into the message box, under its
  label, for the user to send (a resource that cannot be read is said in the notice bar);
- the prompts of the chat's ready servers that need no argument appear on the welcome as
  example prompts (:func:`glmdesk.chat.mcp.catalog.example_prompts`, read off the GUI
  thread whenever a server becomes ready or the chat's choice changes).
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, Qt, Slot
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QToolButton, QVBoxLayout, QWidget

from glmdesk.chat.mcp import catalog
from glmdesk.chat.mcp.config import KeyringSecrets, McpConfig, SecretStore, default_path
from glmdesk.chat.mcp.hub import ServerStatus
from glmdesk.core.errors import ErrorInfo
from glmdesk.ui.app.notice_bar import NoticeBar
from glmdesk.ui.chat.input_box import InputBox
from glmdesk.ui.chat.welcome import WelcomeWidget
from glmdesk.ui.session.background import Background
from glmdesk.ui.tools.mcp_choice import ChatMcp, HubStatusRelay, McpChoiceList
from glmdesk.ui.tools.mcp_servers_page import McpServersPage
from glmdesk.ui.tools.tools_panel import ToolsPanel


def attached_text(label: str, text: str) -> str:
    """What "Attach to message" writes into the message box for a resource: its label on a
    line of its own, then its text (already cut to the tool-result limit by the catalog)."""
    return f"{label}:\n{text}\n"


class McpServersWindow(QObject):
    """The MCP servers dialog and what its changes do to the window.

    Args:
        mcp: The window's servers and the open chat's choice.
        mcp_list: The Tools section's list of the chat's servers.
        panel: The Tools section (it gets the "MCP servers..." button).
        input_box: Where an attached resource is written.
        welcome: Where the servers' prompts appear.
        notice: Where a resource that cannot be read is said.
        parent: The main window (the dialog's parent).
        path: ``mcp.json`` (default: in glmdesk's config folder).
        secrets: Where secrets go (default: the system keyring).

    Attributes:
        action: Tools -> "MCP servers..." (``objectName`` ``mcp_servers_action``).
        dialog: The dialog, made at the first :meth:`show`.
        page: Its :class:`McpServersPage` (``None`` until then).
    """

    def __init__(
        self,
        mcp: ChatMcp,
        mcp_list: McpChoiceList,
        panel: ToolsPanel,
        input_box: InputBox,
        welcome: WelcomeWidget,
        notice: NoticeBar,
        parent: QWidget,
        path: Path | None = None,
        secrets: SecretStore | None = None,
    ) -> None:
        super().__init__(parent)
        self.mcp, self.mcp_list, self.panel = mcp, mcp_list, panel
        self.input_box, self.welcome, self.notice = input_box, welcome, notice
        self.path = path or default_path()
        self.secrets = secrets if secrets is not None else KeyringSecrets()
        self.dialog: QDialog | None = None
        self.page: McpServersPage | None = None
        self.action = QAction(self.tr("&MCP servers..."), parent)
        self.action.setObjectName("mcp_servers_action")
        self.action.setIconText(self.tr("MCP servers"))  # the button's text: no accelerator
        self.action.setToolTip(self.tr("Add, start and stop MCP servers; the tools always allowed"))
        self.action.triggered.connect(self.show)
        self.button = QToolButton()
        self.button.setObjectName("mcp_servers_button")
        self.button.setDefaultAction(self.action)
        self.button.setAutoRaise(True)
        panel.add_servers_button(self.button)
        self._prompts = Background("glmdesk-mcp-prompts", self)
        self._prompts_asked = 0  # the newest read of the prompts; older answers are dropped
        self._relay = HubStatusRelay(self)
        self._relay.status_changed.connect(self._on_status, Qt.ConnectionType.QueuedConnection)
        self._listening = False
        mcp_list.choice_changed.connect(self._read_prompts)
        if mcp.servers():
            self._listen()

    def _listen(self) -> None:
        """Hear the hub's status changes (makes the hub; no server starts)."""
        if not self._listening:
            self._listening = True
            self.mcp.hub().add_listener(self._relay.status_changed.emit)

    @Slot()
    def show(self) -> None:
        """Open the dialog (made at the first call), in front."""
        if self.dialog is None:
            self._listen()
            self.dialog, self.page = self._make_dialog()
        self.dialog.show()
        self.dialog.raise_()
        self.dialog.activateWindow()

    def _make_dialog(self) -> tuple[QDialog, McpServersPage]:
        parent = self.parent()
        dialog = QDialog(parent if isinstance(parent, QWidget) else None)
        dialog.setObjectName("mcp_servers_dialog")
        dialog.setWindowTitle(self.tr("MCP servers"))
        page = McpServersPage(self.mcp.hub(), self.mcp.approvals, self.path, self.secrets, dialog)
        page.config_changed.connect(self._on_config_changed)
        page.resource_attached.connect(self._on_resource_attached)
        page.resource_failed.connect(self.notice.show_error)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(dialog.hide)
        column = QVBoxLayout(dialog)
        column.addWidget(page)
        column.addWidget(buttons)
        dialog.resize(760, 640)
        return dialog, page

    @Slot(object)
    def _on_config_changed(self, config: McpConfig) -> None:
        """The saved file is every chat's configuration from the next answer on."""
        self.mcp.set_config(config)
        self.mcp_list.show_choice(self.mcp_list.current())
        self.panel.show_mcp_list(bool(self.mcp.servers()))
        self._read_prompts()

    @Slot(str, str)
    def _on_resource_attached(self, label: str, text: str) -> None:
        editor = self.input_box.editor
        if editor.toPlainText() and not editor.toPlainText().endswith("\n"):
            editor.moveCursor(editor.textCursor().MoveOperation.End)
            editor.insert_verbatim("\n")
        editor.insert_verbatim(attached_text(label, text))
        self.notice.show_info(
            self.tr("{label} is in the message box; send it when ready.").format(label=label)
        )
        editor.setFocus()

    # --- the welcome's prompts ----------------------------------------------------
    @Slot(object)
    def _on_status(self, status: ServerStatus) -> None:
        if status.state in ("ready", "stopped", "failed") and status.name in self.mcp.choice().servers:
            self._read_prompts()

    @Slot()
    def _read_prompts(self, *_args) -> None:
        """Read the example prompts of the chat's servers that are ready (off the GUI
        thread); none are shown while no chosen server runs."""
        self._prompts_asked += 1
        asked = self._prompts_asked
        if not self.mcp.started():
            self.welcome.set_server_prompts([])
            return
        hub, choice = self.mcp.hub(), self.mcp.choice()
        ready = [
            s.name
            for s in self.mcp.servers()
            if s.name in choice.servers and hub.status(s.name).state == "ready"
        ]
        if not ready:
            self.welcome.set_server_prompts([])
            return
        self._prompts.run(
            lambda _cancel: catalog.example_prompts(hub, ready),
            done=lambda found: self._show_prompts(asked, found),
            failed=lambda error: self._prompts_failed(asked, error),
        )

    def _show_prompts(self, asked: int, found: list[tuple[str, str]]) -> None:
        if asked == self._prompts_asked:
            self.welcome.set_server_prompts(found)

    def _prompts_failed(self, asked: int, _error: ErrorInfo) -> None:
        """A server that cannot list its prompts offers none (its tools still work)."""
        if asked == self._prompts_asked:
            self.welcome.set_server_prompts([])

    def close(self) -> None:
        """Drop a read of the prompts still running (the window closes)."""
        self._prompts.close()
