"""The Tools section of a conversation: none, the code interpreter, or custom functions."""

from __future__ import annotations

from PySide6.QtCore import QMimeData, Signal, Slot
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QGroupBox,
    QLabel,
    QPlainTextEdit,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from glmdesk.core.tools import MAX_FUNCTIONS_CHARS, ConversationTools, ToolSet, ToolSettings, parse_functions
from glmdesk.ui.tools.mcp_choice import McpChoiceList

#: Modes of the section, in the order of the combo box.
MODES = ("none", "interpreter", "functions")


class FunctionsEdit(QPlainTextEdit):
    """The custom functions' JSON. A paste that would take the text over
    :data:`~glmdesk.core.tools.MAX_FUNCTIONS_CHARS` is refused whole (a 2 MB one-line
    paste would stall the window for seconds, and could never fit a prompt).

    Signals:
        paste_refused(int): The length the text would have had, in characters.
    """

    paste_refused = Signal(int)

    def insertFromMimeData(self, source: QMimeData) -> None:  # noqa: N802 (Qt override)
        if source.hasText():
            selected = len(self.textCursor().selectedText())
            length = self.document().characterCount() - 1 - selected + len(source.text())
            if length > MAX_FUNCTIONS_CHARS:
                self.paste_refused.emit(length)
                return
        super().insertFromMimeData(source)


class ToolsPanel(QGroupBox):
    """Choose the tools the model may call in this conversation.

    Signals:
        tools_changed(ToolSet, ToolSettings): The tools offered (empty while the
            functions do not validate) and how they run (rounds per message, the
            interpreter's time limit, whether its code runs without asking).
    """

    tools_changed = Signal(object, object)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(self.tr("Tools"), parent)
        self.mode = QComboBox()
        self.mode.addItems([self.tr("None"), self.tr("Code interpreter"), self.tr("Custom functions")])
        self.functions_edit = FunctionsEdit()
        self.functions_edit.setPlaceholderText(
            self.tr("A JSON list of function definitions, each with a name, a description and parameters.")
        )
        self.functions_edit.setFixedHeight(110)
        self.problems_label = QLabel()
        self.problems_label.setWordWrap(True)
        self.problems_label.setObjectName("tool_problems")
        self.always_run = QCheckBox(self.tr("Always run code in this conversation"))
        defaults = ToolSettings()
        self.max_rounds = QSpinBox()
        self.max_rounds.setRange(1, 50)
        self.max_rounds.setValue(defaults.max_rounds)
        self.timeout = QSpinBox()
        self.timeout.setRange(1, 3600)
        self.timeout.setSuffix(" s")
        self.timeout.setValue(int(defaults.timeout_s))
        limits = QFormLayout()
        limits.addRow(self.tr("Tool calls per message"), self.max_rounds)
        limits.addRow(self.tr("Code time limit"), self.timeout)
        self.reason_label = QLabel()
        self.reason_label.setWordWrap(True)
        self.note_label = QLabel()  # what the chosen tools do with this model (set_note)
        self.note_label.setObjectName("tools_note")
        self.note_label.setWordWrap(True)
        self.note_label.hide()
        self.mcp_label = QLabel(self.tr("MCP servers in this chat"))
        self.mcp_label.hide()
        self.mcp_list: McpChoiceList | None = None  # placed by add_mcp_list
        column = QVBoxLayout(self)
        self._column = column
        for widget in (
            self.reason_label,
            self.mode,
            self.note_label,
            self.functions_edit,
            self.problems_label,
            self.always_run,
        ):
            column.addWidget(widget)
        self.mode.currentIndexChanged.connect(self._on_edited)
        self.functions_edit.textChanged.connect(self._on_edited)
        self.functions_edit.paste_refused.connect(self._on_paste_refused)
        self.always_run.toggled.connect(self._on_edited)
        self.max_rounds.valueChanged.connect(self._on_edited)
        self.timeout.valueChanged.connect(self._on_edited)
        self._problems: list[str] = []
        self._update()

    def add_mcp_list(self, widget: McpChoiceList) -> None:
        """Show the chat's MCP servers and tools under the mode, with its title, while
        ``widget`` has servers to show."""
        self.mcp_list = widget
        at = self._column.indexOf(self.note_label) + 1
        self._column.insertWidget(at, self.mcp_label)
        self._column.insertWidget(at + 1, widget)
        self.mcp_label.setVisible(not widget.isHidden())

    def show_mcp_list(self, shown: bool) -> None:
        """Show or hide the chat's MCP servers with their title (hidden: none configured)."""
        if self.mcp_list is not None:
            self.mcp_list.setVisible(shown)
        self.mcp_label.setVisible(shown)

    def add_servers_button(self, button: QWidget) -> None:
        """Put ``button`` (it opens the MCP servers' page) at the end of the section."""
        self._column.addWidget(button)

    def set_available(self, available: bool, reason: str = "") -> None:
        """Grey the section out with ``reason`` for a model without a tool format."""
        widgets = [self.mode, self.functions_edit, self.always_run, self.max_rounds, self.timeout]
        for widget in (*widgets, *([self.mcp_list] if self.mcp_list is not None else [])):
            widget.setEnabled(available)
        self.reason_label.setText("" if available else reason)
        self.reason_label.setVisible(not available and bool(reason))

    def set_note(self, text: str) -> None:
        """A sentence under the mode about the chosen tools and this model; empty hides it."""
        self.note_label.setText(text)
        self.note_label.setVisible(bool(text))

    def current_mode(self) -> str:
        """``none``, ``interpreter`` or ``functions``."""
        return MODES[self.mode.currentIndex()]

    def set_mode(self, mode: str, functions_json: str = "") -> None:
        """Show ``mode`` (and the custom functions' JSON)."""
        self.functions_edit.setPlainText(functions_json)
        self.mode.setCurrentIndex(MODES.index(mode))

    def problems(self) -> list[str]:
        """One sentence per problem of the custom functions (empty when they are fine)."""
        return list(self._problems)

    def toolset(self) -> ToolSet:
        """The tools offered now (none while the custom functions have problems)."""
        mode = self.current_mode()
        if mode == "interpreter":
            return ToolSet(interpreter=True)
        if mode == "functions":
            functions, problems = parse_functions(self.functions_edit.toPlainText())
            return ToolSet(functions) if not problems else ToolSet()
        return ToolSet()

    def tool_settings(self) -> ToolSettings:
        """Rounds per message, the code time limit and the always-run switch as set now."""
        return ToolSettings(
            max_rounds=self.max_rounds.value(),
            timeout_s=float(self.timeout.value()),
            always_run=self.always_run.isChecked(),
        )

    def choice(self) -> ConversationTools:
        """What the section is set to, as stored with the conversation (no always-run)."""
        return ConversationTools(
            self.current_mode(),
            self.functions_edit.toPlainText(),
            self.max_rounds.value(),
            float(self.timeout.value()),
        )

    def set_choice(self, choice: ConversationTools) -> None:
        """Show a conversation's stored section; "always run code" is switched off (it
        is never restored: a reopened conversation runs no code without a click).
        ``tools_changed`` is emitted once, with the whole new state."""
        widgets = (self.mode, self.functions_edit, self.always_run, self.max_rounds, self.timeout)
        for widget in widgets:
            widget.blockSignals(True)
        try:
            self.functions_edit.setPlainText(choice.functions_json)
            self.mode.setCurrentIndex(MODES.index(choice.mode))
            self.always_run.setChecked(False)
            self.max_rounds.setValue(choice.max_rounds)
            self.timeout.setValue(round(choice.timeout_s))
        finally:
            for widget in widgets:
                widget.blockSignals(False)
        self._on_edited()

    @Slot(int)
    def _on_paste_refused(self, length: int) -> None:
        self.problems_label.setText(
            self.tr(
                "The pasted text was not added: the definitions would be {length} characters, and they "
                "go into every prompt, so at most {limit} are taken."
            ).format(length=f"{length:,}", limit=f"{MAX_FUNCTIONS_CHARS:,}")
        )
        self.problems_label.setVisible(True)

    @Slot()
    def _on_edited(self) -> None:
        self._update()
        self.tools_changed.emit(self.toolset(), self.tool_settings())

    def _update(self) -> None:
        mode = self.current_mode()
        self.functions_edit.setVisible(mode == "functions")
        self.always_run.setVisible(mode == "interpreter")
        self._problems = parse_functions(self.functions_edit.toPlainText())[1] if mode == "functions" else []
        self.problems_label.setText("\n".join(self._problems))
        self.problems_label.setVisible(bool(self._problems))
