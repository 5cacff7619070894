"""Saves the open conversation as it happens; opens conversations picked in the panel.

A plain QObject on the GUI thread. It listens to the
:class:`~glmdesk.ui.session.chat_session.ChatSession`, never to the window. It reads with
the GUI thread's :class:`History`; every write goes through a
:class:`~glmdesk.ui.history.history_writes.WriteQueue` to the history writer's own thread
(issue 19, item 4: a 2 MB message and its full-text index take seconds to store
under load), one at a time, in order. The flow for one answer:

1. ``message_added`` (user): the conversation (if new), the user message and an
   empty ``partial`` assistant message are committed in one transaction
   (:func:`~glmdesk.core.history_rounds.begin_round`), before any later write.
2. ``answer_started``: the checkpoint clock starts (Regenerate: a new ``partial``
   answer is inserted).
3. ``chunk_shown``: the text so far is checkpointed at most every
   :data:`CHECKPOINT_S` seconds, so a crash loses at most those seconds.
4. ``message_added`` (assistant): the answer, stopped and failed ones included,
   is finished exactly once with its statistics. An answer that wrote nothing is
   removed.

Each write decides what to store when it runs (on the writer thread), from what the
writes before it stored: the answer of a round whose start failed is stored whole
with its question, never alone.

Failures (issue 19): every :class:`HistoryError`, of the chat's writes, of the
history panel's (rename, delete, import...) and of reads, reaches
:meth:`HistoryController.report` and is shown once in the window's notice bar. A
write that failed (a full disk) waits at the head of the queue and is retried
every :data:`RETRY_MS` ms; the window keeps showing the conversation meanwhile.
:meth:`HistoryController.close` (at quit) waits for every write.

Branches (:mod:`glmdesk.core.history_tree`): Regenerate, and an edit or regeneration
of an earlier message (the session's ``conversation_rewound``), set an *anchor*: the
next message saved goes under it, as a sibling of the one it replaces, instead of
after the branch's end. Nothing is deleted and no conversation is copied. The
conversation on screen is always the one highlighted in the panel.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QTimer, Signal, Slot

from glmdesk.core.history import History
from glmdesk.core.history_errors import HistoryError
from glmdesk.core.history_tree import ACTIVE
from glmdesk.core.history_types import StoredMessage
from glmdesk.core.history_writer import HistoryWriter
from glmdesk.core.messages import ChatMessage
from glmdesk.core.parts import TextPart
from glmdesk.ui.common.messages import error_sentence
from glmdesk.ui.history.history_anchors import (
    SIBLING_OF_LAST_ANSWER,
    Answer,
    ConversationRef,
    Rewound,
    shown,
)
from glmdesk.ui.history.history_round_writes import (
    begin_write,
    checkpoint_write,
    discard_write,
    finish_write,
    further_call_write,
    image_write,
    observation_write,
    resume_write,
    unstarted_answer_write,
)
from glmdesk.ui.history.history_writes import WriteQueue

#: Seconds between checkpoints of a streaming answer.
CHECKPOINT_S = 2.0
#: Milliseconds between retries of writes that failed.
RETRY_MS = 5000


class HistoryController(QObject):
    """Connects a :class:`ChatSession` and a :class:`HistoryPanel` to a :class:`History`.

    Args:
        session: The chat session (its signals drive saving; it shows what is opened).
        history: The open database (read on the GUI thread).
        panel: The history panel, or ``None``.
        parent: The owning QObject (the window).
        notice: Where failures are shown (a :class:`NoticeBar`); default: ``parent.notice``.
        writer: Where writes run; default: a :class:`HistoryWriter` of ``history``'s file
            (a thread with its own connection).

    Signals:
        writes_stored(): Every write submitted so far is stored (or given up): what the
            window shows from the history (versions, figures) can be read again.
        conversation_opened(int): A stored conversation is now on screen (its id).
    """

    writes_stored = Signal()
    conversation_opened = Signal(int)

    def __init__(
        self,
        session,
        history: History,
        panel=None,
        parent: QObject | None = None,
        notice=None,
        writer: HistoryWriter | None = None,
    ) -> None:
        super().__init__(parent or session)
        self.session = session
        self.notice = notice if notice is not None else getattr(parent, "notice", None)
        self.history = history
        self.panel = panel
        self.writes = WriteQueue(writer if writer is not None else HistoryWriter(history), RETRY_MS, self)
        self.writes.write_failed.connect(self.report)
        self.writes.write_recovered.connect(self._on_write_recovered)
        self.writes.drained.connect(self._on_drained)
        self._conv = ConversationRef()
        self._anchor: Any = ACTIVE  # parent of the next message saved (see the module docstring)
        self._answer: Answer | None = None
        self._last_checkpoint = 0.0
        self._reported: str | None = None  # the failure kind on show
        self._deferred = ""  # a failure sentence to show after the current signal chain
        self._to_show: int | None = None  # a conversation to show once the writes before are stored
        self._shown_cache: tuple[int | None, list] = (None, [])  # the last shown_messages() read
        session.message_added.connect(self._on_message_added)
        session.answer_started.connect(self._on_answer_started)
        session.tool_images_added.connect(self._on_tool_images_added)
        session.chunk_shown.connect(self._on_chunk_shown)
        session.answer_finished.connect(self._on_answer_finished)
        session.last_answer_removed.connect(self._on_last_answer_removed)
        session.conversation_cleared.connect(self._on_conversation_cleared)
        session.conversation_rewound.connect(self._on_conversation_rewound)
        if panel is not None:
            panel.search_result_selected.connect(self._on_search_result_selected)
            panel.conversation_selected.connect(self.open_conversation)
            panel.conversation_deleted.connect(self._on_conversation_deleted)
            panel.new_chat_requested.connect(self._on_new_chat_requested)
            panel.attach_writes(self.write)

    @property
    def conversation_id(self) -> int | None:
        """The open conversation's id (``None`` for a new one not stored yet)."""
        return self._conv.id

    @property
    def conversation(self) -> ConversationRef:
        """The open conversation; its ``id`` may come with its first round's write, so a
        write that needs it reads it when it runs on the writer thread."""
        return self._conv

    def read(self, read: Callable[[], Any]) -> tuple[bool, Any]:
        """Run a read of the GUI thread's history with this controller's failure handling:
        ``(True, value)``, or ``(False, None)`` after a failure (shown once)."""
        return self._read(read)

    @property
    def writer(self) -> HistoryWriter:
        """The history writer (its thread and connection)."""
        return self.writes.writer

    def close(self) -> None:
        """Wait for every write (a waiting one is tried once more), then close the writer."""
        self.writes.close()

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

    def write(
        self, run: Callable[[History], Any], then: Callable[[Any], None] | None = None, **options: bool
    ) -> None:
        """Queue a write of the history panel or the window (failures reach :meth:`report`).

        Args:
            run: ``run(history)`` on the writer thread (one transaction).
            then: Called on the GUI thread with its result once stored.
            options: ``droppable`` (default ``True``: a failed rename is not retried) and
                ``again`` (default ``True``: the user acted, so a failure is news).
        """
        self.writes.submit(
            run, then=then, droppable=options.get("droppable", True), again=options.get("again", True)
        )

    # -- the one place failures are shown -------------------------------------------
    @Slot(object, bool)
    def report(self, error: HistoryError, again: bool = False) -> None:
        """Show a history failure once in the window (``again``: even if this kind is on show)."""
        if (again or error.kind != self._reported) and self.notice is not None:
            self._deferred = error_sentence(error.info)
            # After the current signal chain: the window clears its notice bar as an answer starts.
            QTimer.singleShot(0, self._show_deferred)
        self._reported = error.kind

    def _read(self, read: Callable[[], Any], again: bool = False) -> tuple[bool, Any]:
        """Run a read of the GUI thread's history; ``(False, None)`` after a failure (shown)."""
        try:
            return True, read()
        except HistoryError as exc:
            self.report(exc, again)
            return False, None

    @Slot()
    def _show_deferred(self) -> None:
        if self._deferred and self.notice is not None:
            self.notice.show_error(self._deferred)
        self._deferred = ""

    @Slot()
    def _on_write_recovered(self) -> None:
        if self._reported is not None and self.notice is not None:
            self.notice.show_info(self.tr("The chat history is saved again."))
        self._reported = None

    @Slot()
    def _on_drained(self) -> None:
        if not self.writes.blocked():
            self._reported = None  # storage works: a later failure is news again
        self._refresh()
        self.writes_stored.emit()

    # -- opening and showing -----------------------------------------------------------
    def _model_name(self) -> str | None:
        info = self.session.loader.model_info
        return info.name if info is not None else None

    def _refresh(self) -> None:
        if self.panel is not None:
            self.panel.refresh()
            self.panel.highlight_conversation(self._conv.id)

    def _take_anchor(self) -> Any:
        anchor, self._anchor = self._anchor, ACTIVE
        return anchor

    @Slot(int)
    def open_conversation(self, conversation_id: int) -> None:
        """Show a saved conversation (its branch on screen); the next message continues it."""
        if conversation_id == self._conv.id and not self.session.is_streaming():
            return
        self.reload(conversation_id)

    def reload(self, conversation_id: int | None = None) -> bool:
        """Show ``conversation_id`` (default: the open one) as stored, on its active branch.

        Waits (without blocking) for the writes before it, so it shows what was written.
        Returns ``False`` when there is nothing to show.
        """
        cid = self._conv.id if conversation_id is None else conversation_id
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

        ok, loaded = self._read(read)
        if not ok:
            return
        # The session stops (and we save) a running answer before switching.
        self.session.show_conversation(loaded[0], key=("history", cid), last_reason=loaded[1])
        if cid != self._conv.id:
            self._conv = ConversationRef(cid)
        self._anchor = ACTIVE
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
        cid = self._conv.id
        if cid is None:
            return []
        if self.writes.busy() and self._shown_cache[0] == cid:
            # Writes are on their way: the file holds nothing newer yet; they end with
            # ``writes_stored`` (read again then), so a long conversation is not re-read
            # on every event of an answer.
            return self._shown_cache[1]
        ok, loaded = self._read(lambda: shown(self.history, cid))
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

    # -- session slots -------------------------------------------------------------------
    @Slot(int)
    def _on_conversation_rewound(self, index: int) -> None:
        self._anchor = Rewound(index)  # resolved when the next message is written

    @Slot(int, int)
    def _on_search_result_selected(self, conversation_id: int, message_id: int) -> None:
        # A hit on another branch opens that branch (an erased message: nothing to open).
        self.write(lambda h: h.switch_branch(message_id), lambda _r: self.reload(conversation_id))

    @Slot(int, object, object)
    def _on_message_added(self, _index: int, message: ChatMessage, record) -> None:
        if message.role == "user":  # the question (with its images) and its empty answer, one transaction
            self._begin_answer(message.content, message.attachments)
            return
        conv = self._conv
        if message.role == "observation":  # a tool's result, before the answer continues
            self.writes.submit(observation_write(conv, message))
            return
        model = self._model_name()
        answer, self._answer = self._answer, None
        if answer is None and message.tool_call is not None:  # a further call of the same answer (GLM-4.5)
            settings = dataclasses.asdict(self.session.params_box.get())
            self.writes.submit(further_call_write(conv, message, model, settings))
        elif answer is None:  # an answer the window added without starting it
            write = unstarted_answer_write(conv, message, self._take_anchor(), model)
            self.writes.submit(write, then=lambda _r: self._refresh())
        else:
            self.writes.submit(finish_write(answer, message, record, model))

    @Slot(object, str)
    def _on_tool_images_added(self, images: list, name: str) -> None:
        for png in images:
            self.writes.submit(image_write(self._conv, png, name))

    @Slot(int)
    def _on_answer_started(self, _request_id: int) -> None:
        self._last_checkpoint = time.monotonic()
        if self._answer is None and self.session.is_resuming():
            self._resume_answer()
        elif self._answer is None:  # Regenerate: a new answer to the stored question
            self._begin_answer(None)

    def _resume_answer(self) -> None:
        """Continue: the stored answer on screen becomes ``partial`` again; checkpoints and
        the finish write the whole text into that same row (no new message). The row is
        found when the write runs, after the write that stored the cut answer."""
        conv, text = self._conv, self.session.state.messages[-1].content
        answer = Answer(conv, dataclasses.asdict(self.session.params_box.get()))
        answer.parts.add((TextPart(text),))
        self._answer = answer
        self.writes.submit(resume_write(answer, conv, text))

    def _begin_answer(self, user: str | None, attachments: tuple = ()) -> None:
        """Store the start of a round (``user``: its question, ``attachments`` its images)
        or of a new answer (``None``)."""
        settings = dataclasses.asdict(self.session.params_box.get())
        answer = Answer(
            self._conv, settings, self._take_anchor(), unsaved_user=user, unsaved_images=attachments
        )
        self._answer = answer
        begin = begin_write(answer, user, attachments, self._model_name())
        if self.writes.blocked():  # earlier rounds first: this one is stored whole when it ends
            self.writes.retry(again=True)
        else:  # a round that cannot begin is stored whole when it ends
            self.writes.submit(begin, then=lambda _r: self._refresh(), droppable=True, again=True)

    @Slot(int, object)
    def _on_chunk_shown(self, _request_id: int, chunk) -> None:
        answer = self._answer
        if answer is None or not chunk.parts:
            return
        answer.parts.add(chunk.parts)
        now = time.monotonic()
        if (
            answer.message_id is not None
            and not self.writes.pending()
            and now - self._last_checkpoint >= CHECKPOINT_S
        ):
            # Given up when it fails: the finish saves the whole answer anyway.
            self.writes.submit(checkpoint_write(answer), droppable=True, quiet=True)
            self._last_checkpoint = now

    @Slot(int, object)
    def _on_answer_finished(self, _request_id: int, _chunk) -> None:
        answer, self._answer = self._answer, None
        if answer is None:
            return
        self.writes.submit(discard_write(answer))  # nothing was written: no empty answer, keep the question

    @Slot()
    def _on_last_answer_removed(self) -> None:
        self._anchor = SIBLING_OF_LAST_ANSWER  # the new answer becomes the old one's sibling

    @Slot()
    def _on_conversation_cleared(self) -> None:
        self._conv = ConversationRef()
        self._anchor = ACTIVE
        if self.panel is not None:
            self.panel.highlight_conversation(None)

    @Slot(int)
    def _on_conversation_deleted(self, conversation_id: int) -> None:
        if conversation_id == self._conv.id:
            self.session.new_chat()  # stops and saves a running answer first
            self._conv = ConversationRef()
            self._anchor = ACTIVE

    @Slot()
    def _on_new_chat_requested(self) -> None:
        self.session.new_chat()
