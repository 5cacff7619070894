"""Keeps the history in step with the live conversation; opens conversations picked in the panel.

A plain QObject on the GUI thread. It listens to the
:class:`~glmdesk.ui.session.chat_session.ChatSession`, never to the window, and to the
:class:`~glmdesk.ui.history.history_panel.HistoryPanel`. It shows a stored conversation
(a pick in the panel, a search hit on another branch), switches the version of a message
on screen, deletes a message, and keeps the panel's highlight on the conversation on
screen: the conversation on screen is always the one highlighted in the panel.

What it is built from: a :class:`~glmdesk.ui.history.history_access.HistoryAccess` (reads
of the GUI thread's :class:`History`, writes queued to the history writer's thread, every
failure shown once in the window), and its own
:class:`~glmdesk.ui.history.history_recorder.RoundRecorder`, which writes each round of the
conversation as it happens (an edit or Regenerate branches instead of overwriting).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, Signal, Slot

from glmdesk.core.history import History
from glmdesk.core.history_types import StoredMessage
from glmdesk.core.history_writer import HistoryWriter
from glmdesk.core.messages import ChatMessage
from glmdesk.ui.history.history_access import HistoryAccess
from glmdesk.ui.history.history_anchors import ConversationRef, shown
from glmdesk.ui.history.history_recorder import RoundRecorder


class HistoryController(QObject):
    """Connects a :class:`ChatSession` and a :class:`HistoryPanel` to the history.

    Args:
        session: The chat session (its signals drive saving; it shows what is opened).
        access: The window's :class:`HistoryAccess` (reads, writes, failures shown).
        panel: The history panel (built with the same ``access``), or ``None``.
        parent: The owning QObject (the window); default: ``session``.

    Attributes:
        recorder: The :class:`RoundRecorder` saving the conversation on screen.

    Signals:
        writes_stored(): Every write submitted so far is stored (or given up): what the
            window shows from the history (versions, figures) can be read again.
        conversation_opened(int): A stored conversation is now on screen (its id).
    """

    writes_stored = Signal()
    conversation_opened = Signal(int)

    def __init__(self, session, access: HistoryAccess, panel=None, parent: QObject | None = None) -> None:
        super().__init__(parent or session)
        self.session = session
        self.access = access
        self.history = access.history
        self.notice = access.notice
        self.writes = access.writes
        self.panel = panel
        self.recorder = RoundRecorder(session, access.writes, self)
        self._to_show: int | None = None  # a conversation to show once the writes before are stored
        self._shown_cache: tuple[int | None, list] = (None, [])  # the last shown_messages() read
        access.drained.connect(self._on_drained)
        self.recorder.round_begun.connect(self._refresh)
        session.conversation_cleared.connect(self._on_conversation_cleared)
        if panel is not None:
            panel.search_result_selected.connect(self._on_search_result_selected)
            panel.conversation_selected.connect(self.open_conversation)
            panel.conversation_deleted.connect(self._on_conversation_deleted)
            panel.new_chat_requested.connect(self._on_new_chat_requested)

    @property
    def conversation_id(self) -> int | None:
        """The open conversation's id (``None`` for a new one not stored yet)."""
        return self.recorder.conversation.id

    @property
    def conversation(self) -> ConversationRef:
        """The open conversation; its ``id`` may come with its first round's write, so a
        write that needs it reads it when it runs on the writer thread."""
        return self.recorder.conversation

    @property
    def writer(self) -> HistoryWriter:
        """The history writer (its thread and connection)."""
        return self.access.writer

    def read(self, read: Callable[[], Any]) -> tuple[bool, Any]:
        """Run a read of the GUI thread's history with the window's failure handling:
        ``(True, value)``, or ``(False, None)`` after a failure (shown once)."""
        return self.access.read(read)

    def write(
        self, run: Callable[[History], Any], then: Callable[[Any], object] | None = None, **options: bool
    ) -> None:
        """Queue a write of the window (:meth:`HistoryAccess.write`)."""
        self.access.write(run, then, **options)

    def close(self) -> None:
        """Wait for every write (a waiting one is tried once more), then close the writer."""
        self.access.close()

    def pending_writes(self) -> int:
        """Number of writes not stored yet (0 when everything is stored)."""
        return self.writes.pending()

    def flush(self, timeout_s: float | None = None) -> bool:
        """Wait until every write is stored or one failed; whether nothing waits (tests)."""
        return self.writes.flush(timeout_s)

    @Slot()
    def retry_pending(self, again: bool = False) -> None:
        """Try a write that waits for space now (``again``: report it anew if it fails)."""
        self.writes.retry(again)

    @Slot()
    def _on_drained(self) -> None:
        self._refresh()
        self.writes_stored.emit()

    # -- opening and showing -----------------------------------------------------------
    def _refresh(self) -> None:
        if self.panel is not None:
            self.panel.refresh()
            self.panel.highlight_conversation(self.conversation_id)

    @Slot(int)
    def open_conversation(self, conversation_id: int) -> None:
        """Show a saved conversation (its branch on screen); the next message continues it."""
        if conversation_id == self.conversation_id and not self.session.is_streaming():
            return
        self.reload(conversation_id)

    def reload(self, conversation_id: int | None = None) -> bool:
        """Show ``conversation_id`` (default: the open one) as stored, on its active branch.

        Waits (without blocking) for the writes before it, so it shows what was written.
        Returns ``False`` when there is nothing to show.
        """
        cid = self.conversation_id if conversation_id is None else conversation_id
        if cid is None:
            return False
        waiting, self._to_show = self._to_show is not None, cid  # requests coalesce: the newest wins
        if not waiting:
            self.writes.after_writes(self._show)
        return True

    def _show(self) -> None:
        cid, self._to_show = self._to_show, None
        if cid is None:
            return

        def read() -> tuple[list[ChatMessage], str]:
            leaf = self.history.active_leaf(cid)
            last = self.history.get_message(leaf).finish_reason if leaf is not None else None
            self.history.missing_images.clear()
            return self.history.chat_messages(cid), last or "stop"  # "length": Continue

        ok, loaded = self.access.read(read)
        if not ok:
            return
        # The session stops (and we save) a running answer before switching.
        self.session.show_conversation(loaded[0], key=("history", cid), last_reason=loaded[1])
        self.recorder.continue_in(cid)
        if self.panel is not None:
            self.panel.highlight_conversation(cid)
        self.conversation_opened.emit(cid)
        if self.history.missing_images and self.notice is not None:  # a note, never a failed open
            names = ", ".join(self.history.missing_images)
            self.notice.show_info(
                self.tr(
                    "Some images of this conversation are missing or damaged in the history folder, so they are not shown: {names}."
                ).format(names=names)
            )

    def shown_messages(self) -> list[tuple[StoredMessage, tuple[int, ...]]]:
        """The stored messages on screen (as the chat shows them: no system messages, no
        images, no empty answers), each with its siblings' ids; empty when not saved.
        What is still being written is not in it yet (see :attr:`writes_stored`)."""
        cid = self.conversation_id
        if cid is None:
            return []
        if self.writes.busy() and self._shown_cache[0] == cid:
            # Writes are on their way: the file holds nothing newer yet; they end with
            # ``writes_stored`` (read again then), so a long conversation is not re-read
            # on every event of an answer.
            return self._shown_cache[1]
        ok, loaded = self.access.read(lambda: shown(self.history, cid))
        self._shown_cache = (cid, loaded if ok else [])
        return self._shown_cache[1]

    def switch_sibling(self, index: int, step: int) -> bool:
        """Show the previous (``step=-1``) or next (``+1``) version of the message at ``index``.

        Returns whether the switch was accepted (it happens once the writes before it are stored).
        """
        if self.session.is_streaming() or self.writes.blocked():
            return False
        self.writes.after_writes(lambda: self._switch_sibling(index, step))
        return True

    def _switch_sibling(self, index: int, step: int) -> None:
        on_screen = self.shown_messages()
        if not 0 <= index < len(on_screen):
            return
        message, siblings = on_screen[index]
        position = siblings.index(message.id) + step
        if 0 <= position < len(siblings):
            target = siblings[position]
            self.write(lambda h: h.switch_branch(target), lambda _r: self.reload())

    def delete_at(self, index: int) -> bool:
        """Delete the message at ``index`` for good (its replies move up) and show the result.

        Returns whether the deletion was accepted (it happens after the writes before it).
        """
        if self.session.is_streaming() or self.writes.blocked():
            return False
        self.writes.after_writes(lambda: self._delete_at(index))
        return True

    def _delete_at(self, index: int) -> None:
        on_screen = self.shown_messages()
        if 0 <= index < len(on_screen):
            mid = on_screen[index][0].id
            self.write(lambda h: h.delete_message(mid), lambda _r: (self.reload(), self._refresh()))

    # -- session and panel slots ---------------------------------------------------------
    @Slot(int, int)
    def _on_search_result_selected(self, conversation_id: int, message_id: int) -> None:
        # A hit on another branch opens that branch (an erased message: nothing to open).
        self.write(lambda h: h.switch_branch(message_id), lambda _r: self.reload(conversation_id))

    @Slot()
    def _on_conversation_cleared(self) -> None:
        self.recorder.continue_in(None)
        if self.panel is not None:
            self.panel.highlight_conversation(None)

    @Slot(int)
    def _on_conversation_deleted(self, conversation_id: int) -> None:
        if conversation_id == self.conversation_id:
            self.session.new_chat()  # stops and saves a running answer first
            self.recorder.continue_in(None)

    @Slot()
    def _on_new_chat_requested(self) -> None:
        self.session.new_chat()
