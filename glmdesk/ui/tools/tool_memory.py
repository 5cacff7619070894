"""Each conversation's Tools section, kept with the conversation in the history.

Where: the history database (``conversations.tools``, schema version 5), not
QSettings: the choice belongs to the conversation (it is deleted, moved to the bin
and restored with it, and a second window or a copied data folder sees the same),
and the history already handles a failed write (shown once, the window goes on).

What: the mode, the custom functions exactly as typed (also while they do not
validate), the calls per message and the code time limit
(:class:`~glmdesk.core.tools.ConversationTools`). The "always run code" switch is
never stored and is switched off whenever a conversation is opened or a new one
started: opening a conversation, or the app after a restart, never runs code the
model wrote without a click in this session.

A duplicated conversation has its source's section (the history copies it); an
imported one has the file's, and a section the file holds that cannot be used as it
is (``import_tools_invalid``) is said in the notice bar once the conversation is open.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from PySide6.QtCore import QCoreApplication, QObject, Slot

from glmdesk.core.errors import ErrorInfo
from glmdesk.core.tools import ConversationTools
from glmdesk.ui.common.messages import error_sentence
from glmdesk.ui.tools.mcp_choice import SETTING_KEY, McpChoice, choice_of

if TYPE_CHECKING:  # the types of the constructor's collaborators only
    from glmdesk.ui.history.history_controller import HistoryController
    from glmdesk.ui.session.chat_session import ChatSession
    from glmdesk.ui.tools.tools_panel import ToolsPanel


def tools_markdown_labels() -> dict[str, str]:
    """Translated labels of the Tools section in Markdown exports (keys of
    ``core.history_io_tools.TOOLS_LABELS``; ``{seconds}`` in s, ``{rounds}`` in calls)."""
    return {
        "tools": QCoreApplication.translate("ToolsMemory", "Tools"),
        "tools_interpreter": QCoreApplication.translate(
            "ToolsMemory", "Code interpreter, {seconds} s per run"
        ),
        "tools_functions": QCoreApplication.translate("ToolsMemory", "Custom functions"),
        "tools_invalid": QCoreApplication.translate(
            "ToolsMemory",
            "Custom functions, none offered (none is defined, or the definitions have problems)",
        ),
        "tools_rounds": QCoreApplication.translate("ToolsMemory", "Up to {rounds} tool calls per message."),
    }


class ToolsMemory(QObject):
    """Stores the Tools section per conversation and shows it again when reopened.

    Args:
        controller: The :class:`~glmdesk.ui.history.history_controller.HistoryController`
            (the open conversation's id, the history, failure handling).
        panel: The sidebar's :class:`~glmdesk.ui.tools.tools_panel.ToolsPanel`.
        session: The :class:`~glmdesk.ui.session.chat_session.ChatSession`.
        parent: The owning QObject.
    """

    def __init__(
        self,
        controller: HistoryController,
        panel: ToolsPanel,
        session: ChatSession,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent or controller)
        self.controller, self.panel = controller, panel
        self._restoring = False
        self._saved: tuple[int, ConversationTools] | None = None  # what the file holds, for which id
        self._import_notes: dict[int, list[ErrorInfo]] = {}  # shown once the conversation is open
        # Connected after the controller's own slots, so a new conversation has its id here.
        controller.conversation_opened.connect(self._on_opened)
        panel.tools_changed.connect(self._on_changed)
        self.mcp_list = panel.mcp_list  # the chat's MCP servers (its ``mcp`` setting), if any
        self._mcp_saved: tuple[int, McpChoice] | None = None
        if self.mcp_list is not None:
            self.mcp_list.choice_changed.connect(self._save_mcp)
        session.message_added.connect(self._on_message_added)
        session.conversation_cleared.connect(self._on_cleared)
        if controller.panel is not None:
            controller.panel.import_noted.connect(self._on_import_noted)

    @Slot(int)
    def _on_opened(self, conversation_id: int) -> None:
        if self._saved is not None and self._saved[0] == conversation_id:
            return  # the same conversation shown again (another version of a message)
        history = self.controller.history
        ok, loaded = self.controller.read(lambda: history.conversation_tools(conversation_id))
        if not ok:
            return
        self._saved = (conversation_id, loaded)
        self._open_mcp(conversation_id)
        self._restoring = True
        try:
            self.panel.set_choice(loaded)
        finally:
            self._restoring = False
        notes = self._import_notes.pop(conversation_id, [])
        if notes and self.controller.notice is not None:  # after the chat was replaced (it clears)
            self.controller.notice.show_error(" ".join(self._sentence(note) for note in notes))

    @Slot(int, object)
    def _on_import_noted(self, conversation_id: int, note: ErrorInfo) -> None:
        self._import_notes.setdefault(conversation_id, []).append(note)

    def _sentence(self, note: ErrorInfo) -> str:
        title = note.params.get("title") or self.tr("Untitled")
        return error_sentence(dataclasses.replace(note, params={**note.params, "title": title}))

    @Slot(object, object)
    def _on_changed(self, _tools, _settings) -> None:
        if not self._restoring:
            self._save()

    @Slot(int, object, object)
    def _on_message_added(self, _index: int, message, _record) -> None:
        if message.role == "user":  # the first round gives a new conversation its id
            self._save()
            self._save_mcp()

    @Slot()
    def _on_cleared(self) -> None:
        self._saved = None
        if self.mcp_list is not None:  # a new chat offers the servers on and agreed to
            self._mcp_saved = None
            self.mcp_list.show_choice(self.mcp_list.mcp.default_choice())
        self.panel.always_run.setChecked(False)  # a new conversation asks before running code

    def _save(self) -> None:
        conv = self.controller.conversation  # a new one gets its id with its first round's write
        choice = self.panel.choice()
        if conv.id is not None and self._saved == (conv.id, choice):
            return

        def save(history) -> int | None:  # on the writer thread, after the writes before it
            if conv.id is None:
                return None
            history.set_conversation_tools(conv.id, choice)
            return conv.id

        def stored(cid: int | None) -> None:
            if cid is not None:
                self._saved = (cid, choice)

        self.controller.write(save, then=stored)

    def _open_mcp(self, conversation_id: int) -> None:
        """Show the opened chat's MCP choice (its ``mcp`` setting; the default without one)."""
        if self.mcp_list is None:
            return
        history = self.controller.history
        ok, settings = self.controller.read(lambda: history.chat_settings(conversation_id))
        if not ok:
            return
        choice = choice_of(settings, self.mcp_list.mcp)
        self._mcp_saved = (conversation_id, choice)
        self.mcp_list.show_choice(choice)

    @Slot()
    def _save_mcp(self, *_args) -> None:
        """Keep the chat's MCP choice with it (``History.set_chat_setting(id, "mcp", ...)``)."""
        if self.mcp_list is None:
            return
        conv, choice = self.controller.conversation, self.mcp_list.mcp.choice()
        if conv.id is not None and self._mcp_saved == (conv.id, choice):
            return

        def save(history) -> int | None:  # on the writer thread, after the writes before it
            if conv.id is None:
                return None
            history.set_chat_setting(conv.id, SETTING_KEY, choice.to_json())
            return conv.id

        def stored(cid: int | None) -> None:
            if cid is not None:
                self._mcp_saved = (cid, choice)

        self.controller.write(save, then=stored)
