"""The chat column's upper part: the welcome while the conversation is empty, else the messages."""

from __future__ import annotations

from PySide6.QtWidgets import QStackedWidget, QWidget

from glmdesk.ui.chat.welcome import WelcomeWidget


class ChatArea(QStackedWidget):
    """Shows :class:`WelcomeWidget` for an empty conversation and the chat view otherwise.

    Args:
        chat_view: The window's chat view.
        session: The :class:`~glmdesk.ui.session.chat_session.ChatSession` whose conversation and
            model it follows (its loader's ``model_ready`` names the model on the welcome).
        parent: Parent widget.
    """

    def __init__(self, chat_view: QWidget, session, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("chat_area")
        self.chat_view = chat_view
        self.welcome = WelcomeWidget()
        self.addWidget(self.welcome)
        self.addWidget(chat_view)
        self._session = session
        for signal in (
            session.message_added,
            session.answer_started,
            session.answer_finished,
            session.conversation_cleared,
            session.conversation_replaced,
            session.conversation_rewound,
        ):
            signal.connect(self.refresh)
        session.loader.model_ready.connect(self.welcome.set_model)
        self.refresh()

    def showing_welcome(self) -> bool:
        """True while the welcome is shown."""
        return self.currentWidget() is self.welcome

    def refresh(self, *_args) -> None:
        """Show the welcome exactly when the conversation is empty and nothing is being written."""
        session = self._session
        empty = len(session.state) == 0 and not session.is_streaming()
        self.setCurrentWidget(self.welcome if empty else self.chat_view)
