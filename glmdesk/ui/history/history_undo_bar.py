"""The bar under the history list that offers to undo the last deletion for a while.

Deleting moves a conversation to the bin (:meth:`~glmdesk.ui.history.history_panel.HistoryPanel.delete_conversation`);
this bar names it and offers Undo for :data:`UNDO_MS` ms. Its words keep the panel's
translation context (``HistoryPanel``).
"""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication, QTimer, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QWidget

#: Milliseconds a deletion can be undone.
UNDO_MS = 10_000


class UndoBar(QWidget):
    """Names the conversation deleted last and offers Undo (one at a time); hidden otherwise.

    Args:
        parent: Parent widget (the panel).

    Attributes:
        label: What was deleted; ``button``: Undo; ``timer``: when the offer expires.

    Signals:
        undo_requested(): The user pressed Undo.
        expired(): The offer ran out (the deletion becomes final).
    """

    undo_requested = Signal()
    expired = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._pending: int | None = None
        self.label = QLabel()
        self.button = QPushButton(QCoreApplication.translate("HistoryPanel", "Undo"))
        self.timer = QTimer(self, singleShot=True, interval=UNDO_MS)
        bar = QHBoxLayout(self)
        bar.setContentsMargins(0, 0, 0, 0)
        bar.addWidget(self.label, 1)
        bar.addWidget(self.button)
        self.hide()
        self.button.clicked.connect(self.undo_requested)
        self.timer.timeout.connect(self.expired)

    def offer(self, conversation_id: int, title: str) -> None:
        """Offer to undo the deletion of ``conversation_id`` (named by ``title``) for
        :data:`UNDO_MS` ms, in place of any earlier offer."""
        self._pending = conversation_id
        self.label.setText(
            QCoreApplication.translate("HistoryPanel", "Deleted “{title}”.").format(title=title)
        )
        self.show()
        self.timer.start()

    def take(self) -> int | None:
        """End the offer (the bar hides); the id it was for, or ``None`` when none was shown."""
        cid, self._pending = self._pending, None
        self.timer.stop()
        self.hide()
        return cid
