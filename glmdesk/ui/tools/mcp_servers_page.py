"""The Tools page's MCP part: the servers of ``mcp.json`` with their state (add, edit,
remove, turn on and off, import another app's file, start/restart, stop, start with
glmdesk, time limit), the selected server's resources (attached to a message), the
tools the user always allows (revocable) and the read-only rule.

A server's command is shown and agreed once before glmdesk first starts it
(:meth:`McpServersPage.agree`), also before "Start with glmdesk" is ticked (the app then
starts it with :meth:`~glmdesk.chat.mcp.hub.McpHub.start_auto`, which starts only agreed
servers); starting, stopping, restarting and reading resources run off the GUI thread
(:class:`~glmdesk.ui.session.background.Background`), so the window never waits for a
server; states come back through the hub's listener as queued signals.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMessageBox,
    QPlainTextEdit,
    QPushButton,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from glmdesk.chat.mcp import catalog
from glmdesk.chat.mcp.approvals import McpApprovals
from glmdesk.chat.mcp.config import McpConfig, McpServerConfig, SecretStore, server_from_json
from glmdesk.chat.mcp.hub import McpHub, ServerStatus
from glmdesk.ui.session.background import Background
from glmdesk.ui.tools.mcp_choice import HubStatusRelay, agree_to_start


class ServerDialog(QDialog):
    """Add or edit one server: its name and its entry as JSON, in the file's shape."""

    def __init__(self, server: McpServerConfig | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(self.tr("MCP server"))
        self.name = QLineEdit(server.name if server else "")
        self.entry = QPlainTextEdit()
        entry = server.to_json(None)[0] if server else {"command": "", "args": []}
        self.entry.setPlainText(json.dumps(entry, ensure_ascii=False, indent=2))
        self.error = QLabel()
        self.error.setWordWrap(True)
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        buttons.accepted.connect(self._check)
        buttons.rejected.connect(self.reject)
        form = QFormLayout(self)
        form.addRow(self.tr("Name"), self.name)
        form.addRow(self.tr("Settings (JSON)"), self.entry)
        form.addRow(self.error)
        form.addRow(buttons)
        self.server: McpServerConfig | None = None

    def _check(self) -> None:
        try:
            data = json.loads(self.entry.toPlainText())
            self.server = server_from_json(self.name.text().strip(), data)
        except json.JSONDecodeError as exc:
            self.error.setText(self.tr("The settings are not valid JSON: {detail}").format(detail=exc.msg))
            return
        except ValueError as exc:
            self.error.setText(str(exc))
            return
        self.accept()


class McpServersPage(QWidget):
    """The servers, their state and the kept approvals.

    Args:
        hub: The app's running servers (its config is the page's).
        approvals: The kept approvals and agreed commands.
        path: ``mcp.json`` (saved at every change).
        secrets: Where secrets go (the keyring).

    Signals:
        config_changed(McpConfig): Saved after an edit.
        resource_attached(str, str): A resource's label and text, to attach to the next
            message ("Attach to message").
        resource_failed(str): Why a resource could not be read (a sentence).
    """

    config_changed = Signal(object)
    resource_attached = Signal(str, str)
    resource_failed = Signal(str)

    def __init__(
        self,
        hub: McpHub,
        approvals: McpApprovals,
        path: Path,
        secrets: SecretStore,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.hub, self.approvals, self.path, self.secrets = hub, approvals, path, secrets
        self._background = Background("glmdesk-mcp-servers", self)  # start, restart, stop
        self._relay = HubStatusRelay(self)
        self._relay.status_changed.connect(self._on_status, Qt.ConnectionType.QueuedConnection)
        hub.add_listener(self._relay.status_changed.emit)
        self._resources_of = ""  # the server whose resources are listed (or asked for)
        self.table = QTableWidget(0, 4)
        self.table.setHorizontalHeaderLabels(
            [self.tr("Server"), self.tr("Command or URL"), self.tr("Time limit"), self.tr("State")]
        )
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.details = QLabel()
        self.details.setWordWrap(True)
        self.details.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.add_button = QPushButton(self.tr("Add..."))
        self.edit_button = QPushButton(self.tr("Edit..."))
        self.remove_button = QPushButton(self.tr("Remove"))
        self.toggle_button = QPushButton(self.tr("Turn off"))
        self.import_button = QPushButton(self.tr("Import..."))
        self.start_button = QPushButton(self.tr("Start / restart"))
        self.stop_button = QPushButton(self.tr("Stop"))
        self.auto_start_box = QCheckBox(self.tr("Start with glmdesk"))
        self.timeout_box = QSpinBox()
        self.timeout_box.setRange(1, 3600)
        self.timeout_box.setSuffix(self.tr(" s"))
        self.timeout_box.setToolTip(self.tr("The longest a call of this server's tools may take"))
        self.resources_list = QListWidget()
        self.attach_button = QPushButton(self.tr("Attach to message"))
        self.always_list = QListWidget()
        self.revoke_button = QPushButton(self.tr("Revoke"))
        self.read_only_box = QCheckBox(self.tr("Run tools the server marks read-only without asking"))
        self.read_only_box.setChecked(approvals.read_only_auto)
        row = QHBoxLayout()
        for b in (
            self.add_button,
            self.edit_button,
            self.remove_button,
            self.toggle_button,
            self.import_button,
        ):
            row.addWidget(b)
        row.addStretch(1)
        row.addWidget(self.start_button)
        row.addWidget(self.stop_button)
        column = QVBoxLayout(self)
        column.addWidget(QLabel(self.tr("MCP servers")))
        column.addWidget(self.table)
        column.addLayout(row)
        settings = QHBoxLayout()
        settings.addWidget(self.auto_start_box)
        settings.addStretch(1)
        settings.addWidget(QLabel(self.tr("Time limit")))
        settings.addWidget(self.timeout_box)
        column.addLayout(settings)
        column.addWidget(self.details)
        column.addWidget(QLabel(self.tr("Resources")))
        column.addWidget(self.resources_list)
        column.addWidget(self.attach_button)
        column.addWidget(QLabel(self.tr("Tools always allowed")))
        column.addWidget(self.always_list)
        column.addWidget(self.revoke_button)
        column.addWidget(self.read_only_box)
        self.add_button.clicked.connect(self._add)
        self.edit_button.clicked.connect(self._edit)
        self.remove_button.clicked.connect(self._remove)
        self.toggle_button.clicked.connect(self._toggle)
        self.import_button.clicked.connect(self._import)
        self.start_button.clicked.connect(self._start)
        self.stop_button.clicked.connect(self._stop)
        self.revoke_button.clicked.connect(self._revoke)
        self.auto_start_box.clicked.connect(self._set_auto_start)
        self.timeout_box.editingFinished.connect(self._set_timeout)
        self.attach_button.clicked.connect(self._attach)
        self.read_only_box.toggled.connect(self.approvals.set_read_only_auto)
        self.table.itemSelectionChanged.connect(self._show_details)
        self._fill()

    # --- showing ----------------------------------------------------------------
    def _fill(self) -> None:
        servers = self.hub.config.servers
        self.table.setRowCount(len(servers))
        for row, s in enumerate(servers):
            values = (s.name, s.command_line(), f"{s.timeout_s:g} s", self._state_text(s))
            for col, value in enumerate(values):
                self.table.setItem(row, col, QTableWidgetItem(value))
        self.always_list.clear()
        for server, tool in self.approvals.kept():
            self.always_list.addItem(f"{server} / {tool}")
        self._show_details()

    def _state_text(self, server: McpServerConfig) -> str:
        if server.disabled:
            return self.tr("turned off")
        status = self.hub.status(server.name)
        if status.state == "ready":
            return self.tr("ready, %n tool(s)", "", len(status.tools))
        if status.state == "failed":
            return self.tr("failed: {error}").format(error=status.error)
        return {"starting": self.tr("starting"), "stopped": self.tr("stopped")}.get(
            status.state, status.state
        )

    def state_of(self, name: str) -> str:
        """The State column's text for ``name`` (``""`` when not listed)."""
        for row in range(self.table.rowCount()):
            server, state = self.table.item(row, 0), self.table.item(row, 3)
            if server is not None and state is not None and server.text() == name:
                return state.text()
        return ""

    @Slot(object)
    def _on_status(self, _status: ServerStatus) -> None:
        self._fill()

    def selected(self) -> McpServerConfig | None:
        """The selected server, or ``None``."""
        rows = self.table.selectionModel().selectedRows()
        return self.hub.config.servers[rows[0].row()] if rows else None

    def select(self, name: str) -> None:
        """Select ``name``'s row."""
        for row, s in enumerate(self.hub.config.servers):
            if s.name == name:
                self.table.selectRow(row)

    def _show_details(self) -> None:
        server = self.selected()
        for widget in (self.auto_start_box, self.timeout_box):
            widget.setEnabled(server is not None)
        if server is None:
            self.details.clear()
            self._list_resources("")
            return
        self.toggle_button.setText(self.tr("Turn on") if server.disabled else self.tr("Turn off"))
        self.auto_start_box.setChecked(server.auto_start)
        if not self.timeout_box.hasFocus():
            self.timeout_box.setValue(round(server.timeout_s))
        status = self.hub.status(server.name)
        lines = [", ".join(t.name for t in status.tools)] if status.tools else []
        if status.stderr_tail:
            lines.append(self.tr("Its last output:"))
            lines += list(status.stderr_tail[-10:])
        self.details.setText("\n".join(lines))
        self._list_resources(server.name if status.state == "ready" else "")

    # --- resources --------------------------------------------------------------
    def _list_resources(self, server: str) -> None:
        """List ``server``'s resources (on a worker thread); ``""`` empties the list."""
        if server == self._resources_of:
            return
        self._resources_of = server
        self.resources_list.clear()
        self.attach_button.setEnabled(False)
        if server:
            self._background.run(
                lambda _cancel: catalog.resources(self.hub, server),
                done=lambda found: self._on_resources(server, found),
            )

    def _on_resources(self, server: str, found: tuple[catalog.McpResource, ...]) -> None:
        if server != self._resources_of:
            return  # the selection moved on
        for resource in found:
            item = QListWidgetItem(resource.label)
            item.setData(Qt.ItemDataRole.UserRole, resource)
            self.resources_list.addItem(item)
        self.attach_button.setEnabled(bool(found))
        if found:
            self.resources_list.setCurrentRow(0)

    def _attach(self) -> None:
        item = self.resources_list.currentItem()
        if item is None:
            return
        resource = item.data(Qt.ItemDataRole.UserRole)
        self.attach_button.setEnabled(False)

        def read(_cancel) -> tuple[str, str]:
            try:
                return resource.label, catalog.resource_text(self.hub, resource)
            except catalog.McpUnavailable as exc:
                return "", str(exc)

        self._background.run(read, done=lambda answer: self._on_resource_read(*answer))

    def _on_resource_read(self, label: str, text: str) -> None:
        self.attach_button.setEnabled(self.resources_list.count() > 0)
        if label:
            self.resource_attached.emit(label, text)
        else:
            self.resource_failed.emit(text)
            self.details.setText(text)

    # --- editing ----------------------------------------------------------------
    def _save(self, config: McpConfig) -> None:
        lost = config.save(self.path, self.secrets)
        self.hub.reconfigure(config)
        self._fill()
        if lost:
            QMessageBox.warning(
                self,
                self.tr("Secrets not kept"),
                self.tr("No keyring took these secrets, so they were not saved: {names}").format(
                    names=", ".join(lost)
                ),
            )
        self.config_changed.emit(config)

    def _add(self) -> None:
        dialog = ServerDialog(parent=self)
        if dialog.exec() == QDialog.DialogCode.Accepted and dialog.server is not None:
            self._save(self.hub.config.with_server(dialog.server))

    def _edit(self) -> None:
        server = self.selected()
        if server is None:
            return
        dialog = ServerDialog(server, self)
        if dialog.exec() == QDialog.DialogCode.Accepted and dialog.server is not None:
            self._save(self.hub.config.without(server.name).with_server(dialog.server))

    def _remove(self) -> None:
        server = self.selected()
        if server is not None:
            self._save(self.hub.config.without(server.name))

    def _toggle(self) -> None:
        server = self.selected()
        if server is not None:
            self._save(self.hub.config.with_server(replace(server, disabled=not server.disabled)))
            self.select(server.name)

    def _set_auto_start(self, on: bool) -> None:
        """Keep "Start with glmdesk" in mcp.json (``autoStart``); turning it on first shows
        the command and asks, as a first start does."""
        server = self.selected()
        if server is None:
            return
        if on and not self.agree(server):
            self.auto_start_box.setChecked(False)
            return
        self._save(self.hub.config.with_server(replace(server, auto_start=on)))
        self.select(server.name)

    def _set_timeout(self) -> None:
        server = self.selected()
        seconds = float(self.timeout_box.value())
        if server is not None and seconds != server.timeout_s:
            self._save(self.hub.config.with_server(replace(server, timeout_s=seconds)))
            self.select(server.name)

    def _import(self) -> None:
        name, _ = QFileDialog.getOpenFileName(
            self, self.tr("Import MCP servers"), "", self.tr("JSON files (*.json)")
        )
        if name:
            self.import_file(Path(name))

    def import_file(self, path: Path) -> list[str]:
        """Add the servers of another app's file (Claude Desktop, Cursor...); returns the
        sentences about entries left out (also shown)."""
        try:
            config, problems = self.hub.config.imported(path.read_text(encoding="utf-8"), self.secrets)
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            problems, config = [str(exc)], None
        if config is not None:
            self._save(config)
        if problems:
            self.details.setText("\n".join(problems))
        return problems

    # --- running ----------------------------------------------------------------
    def agree(self, server: McpServerConfig) -> bool:
        """Ask once whether ``server``'s command may run (kept); True when agreed."""
        return agree_to_start(self, self.approvals, server)
        answer = QMessageBox.question(
            self,
            self.tr("Start an MCP server?"),
            self.tr(
                "glmdesk will run this command for the MCP server {name}:\n\n{command}\n\nRun it?"
            ).format(name=server.name, command=server.command_line()),
        )
        if answer != QMessageBox.StandardButton.Yes:
            return False
        self.approvals.agree(server)
        return True

    def _start(self) -> None:
        server = self.selected()
        if server is not None and not server.disabled and self.agree(server):
            self._background.run(lambda _cancel: self.hub.restart(server.name))

    def _stop(self) -> None:
        server = self.selected()
        if server is not None:
            self._background.run(lambda _cancel: self.hub.stop(server.name))

    def _revoke(self) -> None:
        item = self.always_list.currentItem()
        if item is not None:
            server, tool = item.text().split(" / ", 1)
            self.approvals.revoke(server, tool)
            self._fill()
