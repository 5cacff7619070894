"""The card a tool call waits in until the user decides: Allow once, Always allow this
tool, or Deny (with an optional reason), the arguments shown in full
(:mod:`glmdesk.chat.mcp.approvals` keeps an Always allow)."""

from __future__ import annotations

import json

from PySide6.QtCore import Signal, Slot
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from glmdesk.chat.mcp.approvals import ALLOW_ALWAYS, ALLOW_ONCE, Decision, deny
from glmdesk.chat.mcp.hub import McpTool
from glmdesk.core.tools import ToolCall


class ApprovalCard(QFrame):
    """One call waiting for the user.

    Args:
        call: The call (its arguments are shown whole, pretty-printed; code as written).
        tool: The MCP tool it calls, or ``None`` for interpreter code (no Always allow).

    Signals:
        decided(Decision): The user clicked; the card's buttons are then disabled.
    """

    decided = Signal(object)

    def __init__(self, call: ToolCall, tool: McpTool | None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("approval_card")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.call, self.tool = call, tool
        if tool is None:
            title = self.tr("Run this code?")
        else:
            title = self.tr("Run {tool} of the MCP server {server}?").format(
                tool=tool.name, server=tool.server
            )
        self.title = QLabel(title)
        self.read_only_label = QLabel(self.tr("The server marks this tool read-only."))
        self.read_only_label.setVisible(bool(tool is not None and tool.read_only))
        self.arguments = QPlainTextEdit()
        self.arguments.setReadOnly(True)
        self.arguments.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        text = (
            call.code
            if call.kind == "interpreter"
            else json.dumps(dict(call.arguments), ensure_ascii=False, indent=2)
        )
        self.arguments.setPlainText(text)
        self.reason = QLineEdit()
        self.reason.setPlaceholderText(self.tr("Reason for denying (optional; the model reads it)"))
        self.allow_button = QPushButton(self.tr("Allow once"))
        self.always_button = QPushButton(self.tr("Always allow this tool"))
        self.always_button.setVisible(tool is not None)
        self.deny_button = QPushButton(self.tr("Deny"))
        self.state_label = QLabel(self.tr("Waiting for you"))
        buttons = QHBoxLayout()
        for button in (self.allow_button, self.always_button, self.deny_button):
            buttons.addWidget(button)
        buttons.addStretch(1)
        buttons.addWidget(self.state_label)
        column = QVBoxLayout(self)
        column.addWidget(self.title)
        column.addWidget(self.read_only_label)
        column.addWidget(self.arguments)
        column.addWidget(self.reason)
        column.addLayout(buttons)
        self.allow_button.clicked.connect(lambda: self._decide(ALLOW_ONCE))
        self.always_button.clicked.connect(lambda: self._decide(ALLOW_ALWAYS))
        self.deny_button.clicked.connect(lambda: self._decide(deny(self.reason.text())))
        self.decision: Decision | None = None

    def _decide(self, decision: Decision) -> None:
        if self.decision is not None:
            return
        self.decision = decision
        self._close(self.tr("Allowed") if decision.approval.allowed else self.tr("Denied"))
        self.decided.emit(decision)

    @Slot()
    def cancel(self) -> None:
        """The answer was stopped while waiting: nothing runs."""
        if self.decision is None:
            self._close(self.tr("Stopped: not run"))

    def _close(self, state: str) -> None:
        self.state_label.setText(state)
        for widget in (self.allow_button, self.always_button, self.deny_button, self.reason):
            widget.setEnabled(False)
