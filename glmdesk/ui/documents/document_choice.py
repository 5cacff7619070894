"""Which documents and library folders are on, kept with each conversation in the history
(its per-chat setting ``documents``: ``{"files": [paths], "folders": [folders on]}``) and
put back when the conversation is opened again, after the window was closed too."""

from __future__ import annotations

from PySide6.QtCore import QObject, Slot

from glmdesk.ui.documents.document_library import DocumentLibrary

#: The per-chat setting's key (:meth:`glmdesk.core.history.History.set_chat_setting`).
SETTING_KEY = "documents"


class DocumentChoice(QObject):
    """Keeps ``library``'s choice with the conversation on screen.

    Args:
        library: The window's :class:`DocumentLibrary`.
        history_controller: The window's
            :class:`~glmdesk.ui.history.history_controller.HistoryController`.

    The choice is written (on the history's writer thread) when the user changes it and
    with each round stored (a new chat is stored with its first round, so what was
    attached before its first question is kept with it); it is read when a conversation
    is opened. A conversation never given a choice keeps what the window had for it.
    """

    def __init__(self, library: DocumentLibrary, history_controller, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.library = library
        self.controller = history_controller
        library.choice_changed.connect(self.save)
        history_controller.recorder.round_begun.connect(self.save)
        history_controller.conversation_opened.connect(self._on_opened)

    @Slot()
    def save(self) -> None:
        """Write the choice into the conversation on screen (nothing before it is stored)."""
        conv, choice = self.controller.conversation, self.library.choice()

        def write(history) -> None:
            if conv.id is None:  # known once the first round is stored (the writes run in order)
                return
            try:
                history.set_chat_setting(conv.id, SETTING_KEY, choice)
            except KeyError:  # the conversation was deleted meanwhile: nothing to keep it with
                pass

        self.controller.write(write)

    @Slot(int)
    def _on_opened(self, conversation_id: int) -> None:
        ok, settings = self.controller.read(lambda: self.controller.history.chat_settings(conversation_id))
        if ok and isinstance(settings, dict) and SETTING_KEY in settings:
            self.library.restore(settings[SETTING_KEY])
