"""Per-message actions and branches in the chat view: copy, edit and resend, continue,
regenerate, delete, and the "‹ 2/3 ›" switch between versions.

A GUI-thread QObject beside the window. It gives every message widget a
:class:`~glmdesk.ui.chat.message_footer.MessageFooter`, fills in the figures (from the
history when the conversation is saved, else from the session's records) and turns
footer clicks into session and history calls: an edit or a regeneration rewinds the
session to that message and sends again, which the history controller saves as a
sibling (a new branch of the same conversation).
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QCoreApplication, QObject, Slot
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QWidget

from glmdesk.ui.chat.edit_dialog import EditDialog
from glmdesk.ui.chat.message_footer import MessageFooter


def footer_text(
    reason: str | None, n_tokens, tokens_per_s, ttft_s, settings: dict | None, answer_ttft_s=None
) -> str:
    """The quiet figures line of an answer: tokens, tokens/s, TTFT and the settings used.

    Args:
        reason: Finish reason (``length`` and ``cancelled`` are named).
        n_tokens: Tokens generated, or ``None``.
        tokens_per_s: Decode speed in tokens/s, or ``None``.
        ttft_s: Time to first token in s, or ``None``.
        settings: Sampling settings as saved (``temperature``, ``top_p``...), or ``None``.
        answer_ttft_s: For an answer that thought first: time to its first answer token
            in s (``ttft_s`` is then the first reasoning token's), or ``None``/0.
    """
    parts = []
    if n_tokens:
        parts.append(QCoreApplication.translate("BranchActions", "{tokens} tokens").format(tokens=n_tokens))
    if tokens_per_s:
        parts.append(
            QCoreApplication.translate("BranchActions", "{rate} tokens/s").format(rate=f"{tokens_per_s:.1f}")
        )
    if ttft_s and answer_ttft_s:
        parts.append(
            QCoreApplication.translate("BranchActions", "TTFT {ttft} s thinking, {answer} s answer").format(
                ttft=f"{ttft_s:.2f}", answer=f"{answer_ttft_s:.2f}"
            )
        )
    elif ttft_s:
        parts.append(
            QCoreApplication.translate("BranchActions", "TTFT {ttft} s").format(ttft=f"{ttft_s:.2f}")
        )
    if settings:
        shown = []
        if "temperature" in settings:
            shown.append(
                QCoreApplication.translate("BranchActions", "temperature {value}").format(
                    value=settings["temperature"]
                )
            )
        if settings.get("top_p") is not None:
            shown.append(f"top-p {settings['top_p']}")
        if settings.get("top_k"):
            shown.append(f"top-k {settings['top_k']}")
        if settings.get("max_new_tokens"):
            shown.append(
                QCoreApplication.translate("BranchActions", "max {tokens} new tokens").format(
                    tokens=settings["max_new_tokens"]
                )
            )
        parts.append(", ".join(shown))
    reasons = {
        "length": QCoreApplication.translate("BranchActions", "cut at the token limit"),
        "cancelled": QCoreApplication.translate("BranchActions", "stopped"),
        "error": QCoreApplication.translate("BranchActions", "failed"),
    }
    if reason in reasons:
        parts.append(reasons[reason])
    return " · ".join(p for p in parts if p)


class BranchActions(QObject):
    """Wires message footers in the chat view to the session and the history.

    Args:
        session: The :class:`~glmdesk.ui.session.chat_session.ChatSession`.
        chat_view: The :class:`~glmdesk.ui.chat.chat_view.ChatView` whose messages get footers.
        sidebar: The :class:`~glmdesk.ui.sidebar.sidebar.Sidebar` (system prompt and KV cache
            settings of a regenerated or continued answer).
        input_box: The :class:`~glmdesk.ui.chat.input_box.InputBox` (an edited message's images).
        status: The :class:`~glmdesk.ui.app.status_bar.StatusBar` ("copied" messages).
        send: ``send(text) -> bool``, the window's Send (an edited message goes as the user's).
        controller: The :class:`HistoryController`, or ``None`` without a history
            (then edits and regenerations still work, but versions are not kept).
        parent: The window (dialogs open over it).
    """

    def __init__(
        self,
        session,
        chat_view,
        sidebar,
        input_box,
        status,
        send: Callable[[str], bool],
        controller=None,
        parent=None,
    ) -> None:
        super().__init__(parent)
        self.session, self.chat_view, self.sidebar = session, chat_view, sidebar
        self.input_box, self.status, self._send = input_box, status, send
        self.controller = controller
        if controller is not None:  # versions and figures are read once their writes are stored
            controller.writes_stored.connect(self.decorate)
            controller.conversation_opened.connect(self.decorate)  # a reopened one's stored figures
        for signal in (
            session.message_added,
            session.answer_started,
            session.answer_finished,
            session.conversation_replaced,
            session.conversation_rewound,
        ):
            signal.connect(self.decorate)

    def footers(self) -> list[MessageFooter]:
        """The footers of the messages on screen, in order (tests)."""
        return [self._footer(w) for w in self.chat_view.messages()]

    def _footer(self, widget) -> MessageFooter:
        footer = widget.findChild(MessageFooter, "message_footer")
        if footer is None:
            footer = MessageFooter(widget.role)
            footer.attach(widget)
            footer.action_requested.connect(self._on_action)
            footer.sibling_requested.connect(self._on_sibling)
        return footer

    def decorate(self, *_args) -> None:
        """Give every message its footer, figures and version switch; lock actions while streaming."""
        widgets = self.chat_view.messages()
        streaming = self.session.is_streaming()
        stored = self.controller.shown_messages() if self.controller is not None else []
        records = self.session.state.records
        continuable = not streaming and self.session.can_continue() and len(widgets) == len(records)
        for index, widget in enumerate(widgets):
            footer = self._footer(widget)
            footer.set_continuable(continuable and index == len(widgets) - 1 and not widget.is_streaming())
            if index < len(stored) and stored[index][0].text == widget.text():
                message, siblings = stored[index]
                footer.set_siblings(siblings.index(message.id) + 1, len(siblings))
                stats = message.stats
                footer.set_stats(
                    footer_text(
                        message.finish_reason,
                        stats.n_tokens,
                        stats.tokens_per_s,
                        stats.ttft_s,
                        message.settings,
                        stats.answer_ttft_s,
                    )
                    if message.role == "assistant"
                    else ""
                )
                if widget.reasoning() and stats.answer_ttft_s and not widget.is_streaming():
                    widget.reasoning_block.set_done(
                        stats.answer_ttft_s - (stats.ttft_s or 0.0), stats.reasoning_tokens
                    )
            elif index < len(records) and records[index] is not None:
                record = records[index]
                settings = None if record.params is None else vars(record.params)
                footer.set_siblings(1, 1)
                footer.set_stats(
                    footer_text(
                        record.finish_reason,
                        record.n_tokens,
                        record.tokens_per_s,
                        record.ttft_s,
                        settings,
                        record.answer_ttft_s,
                    )
                )
            footer.set_actions_enabled(not streaming and not widget.is_streaming())

    # Actions ----------------------------------------------------------------------
    def _index_of(self, footer) -> int:
        for index, widget in enumerate(self.chat_view.messages()):
            if widget.findChild(MessageFooter, "message_footer") is footer:
                return index
        return -1

    @Slot(str)
    def _on_action(self, action: str) -> None:
        index = self._index_of(self.sender())
        if index < 0:
            return
        widget = self.chat_view.messages()[index]
        if action == "copy_markdown":
            QGuiApplication.clipboard().setText(widget.text())
            self.status.showMessage(self.tr("Message copied as Markdown."), 3000)
        elif action == "copy_text":
            QGuiApplication.clipboard().setText(widget.view.toPlainText())
            self.status.showMessage(self.tr("Message copied as plain text."), 3000)
        elif action == "edit":
            window = self.parent()  # the window, or None in a bare test
            dialog = EditDialog(widget.text(), window if isinstance(window, QWidget) else None)
            if dialog.exec() == EditDialog.DialogCode.Accepted:
                self.edit_message(index, dialog.text())
        elif action == "continue":
            self.continue_at(index)
        elif action == "regenerate":
            self.regenerate_at(index)
        elif action == "delete":
            self.delete_at(index)

    @Slot(int)
    def _on_sibling(self, step: int) -> None:
        index = self._index_of(self.sender())
        if index >= 0 and self.controller is not None:
            self.controller.switch_sibling(index, step)

    def edit_message(self, index: int, text: str) -> bool:
        """Send ``text`` in place of the user message at ``index``: a new version of it."""
        session = self.session
        if not text.strip() or not session.is_ready() or session.is_streaming():
            return False
        images = session.state.messages[index].attachments  # the new version keeps them
        if not session.rewind(index):
            return False
        self.input_box.add_images(list(images))
        return self._send(text)

    def regenerate_at(self, index: int) -> bool:
        """Write the answer at ``index`` again: a new version of it."""
        if not self.session.is_ready() or not self.session.rewind(index):
            return False
        self.session.regenerate(self.sidebar.system_prompt(), self.sidebar.cache_settings())
        return self.session.is_streaming()

    def continue_at(self, index: int) -> bool:
        """Continue the answer at ``index`` (the last one, cut by the length limit) in place."""
        if index != len(self.session.state) - 1:
            return False
        return self.session.continue_answer(self.sidebar.system_prompt(), self.sidebar.cache_settings())

    def delete_at(self, index: int) -> bool:
        """Delete the message at ``index`` (saved conversations: its replies stay)."""
        if self.controller is not None and self.controller.conversation_id is not None:
            return self.controller.delete_at(index)
        return False
