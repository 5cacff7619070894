"""Each conversation's "Keep earlier thinking" choice, kept with the conversation in the
history, and the loaded model's default shown in the sidebar.

Where: the conversation's settings in the history (``History.set_chat_setting(cid,
"keep_thinking", bool)``; ``None`` removes it: the model's default), so that the choice
is deleted, moved to the bin, restored and copied with its conversation. A new chat
starts on the model's default; a choice made before its first message is stored with
that message (the first round gives the conversation its id).

What the model does when not told is its chat template's (``ModelInfo.keeps_thinking``:
GLM-5.3 keeps, GLM-4.7 and GLM-5.2 drop); a model whose template does not read
``clear_thinking`` greys the choice with the reason. A remote server's template is not
known here: the choice is offered, sent as ``chat_template_kwargs.clear_thinking``.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Slot

#: The key of the choice in the conversation's settings.
KEY = "keep_thinking"


class KeepThinkingMemory(QObject):
    """Stores the sidebar's earlier-thinking choice per conversation and shows it again.

    Args:
        choice: The sidebar's :class:`~glmdesk.ui.sidebar.keep_thinking_choice.KeepThinkingChoice`.
        loader: The :class:`~glmdesk.ui.session.model_loader.ModelLoader` (the model's default).
        session: The :class:`~glmdesk.ui.session.chat_session.ChatSession`.
        controller: The :class:`~glmdesk.ui.history.history_controller.HistoryController`
            (the open conversation, reads and writes), or ``None`` without a history:
            then the choice lasts until the next chat.
        parent: The owning QObject (the window).
    """

    def __init__(self, choice, loader, session, controller=None, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.choice, self.controller = choice, controller
        self._saved: tuple[int, bool | None] | None = None  # what the file holds, for which id
        loader.model_ready.connect(self._on_model_ready)
        choice.chosen.connect(self._on_chosen)
        session.conversation_cleared.connect(self._on_cleared)
        # After the recorder's slot: a new conversation's first round is queued before ours.
        session.message_added.connect(self._on_message_added)
        if controller is not None:
            controller.conversation_opened.connect(self._on_opened)

    @Slot(object)
    def _on_model_ready(self, info) -> None:
        remote = getattr(info, "engine", "") == "remote"
        reason = self.tr(
            "{model}'s chat template has no choice about earlier thinking (GLM-4.7 and the GLM-5 line have one)."
        ).format(model=info.name)
        self.choice.set_model(
            remote or bool(getattr(info, "clear_thinking", False)),
            bool(getattr(info, "keeps_thinking", False)),
            reason,
            server=remote,
        )

    @Slot(int)
    def _on_opened(self, conversation_id: int) -> None:
        assert self.controller is not None
        history = self.controller.history
        ok, settings = self.controller.read(lambda: history.chat_settings(conversation_id))
        if not ok:
            return
        stored = settings.get(KEY)
        keep = stored if isinstance(stored, bool) else None  # a damaged value: the default
        self._saved = (conversation_id, keep)
        self.choice.show_choice(keep)

    @Slot()
    def _on_cleared(self) -> None:
        self._saved = None
        self.choice.show_choice(None)  # a new chat starts on the model's default

    @Slot(object)
    def _on_chosen(self, _keep) -> None:
        self._save()

    @Slot(int, object, object)
    def _on_message_added(self, _index: int, message, _record) -> None:
        if message.role == "user":  # the first round gives a new conversation its id
            self._save()

    def _save(self) -> None:
        if self.controller is None:
            return
        conv = self.controller.conversation  # a new one gets its id with its first round's write
        keep = self.choice.choice()
        if conv.id is None and keep is None:
            return  # nothing to store for a new chat on the default
        if conv.id is not None and self._saved == (conv.id, keep):
            return

        def save(history) -> int | None:  # on the writer thread, after the writes before it
            if conv.id is None:
                return None
            history.set_chat_setting(conv.id, KEY, keep)
            return conv.id

        def stored(cid: int | None) -> None:
            if cid is not None:
                self._saved = (cid, keep)

        self.controller.write(save, then=stored)
