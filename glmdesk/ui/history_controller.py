"""Saves the open conversation as it happens; opens conversations picked in the panel.

A plain QObject on the GUI thread, the only owner of the :class:`History`
database (the worker never touches it). It listens to the
:class:`~glmdesk.ui.chat_session.ChatSession`, never to the window. The flow for
one answer:

1. ``message_added`` (user): the conversation (if new), the user message and an
   empty ``partial`` assistant message are committed in one transaction
   (:func:`~glmdesk.core.history_rounds.begin_round`), before the worker sees the
   request.
2. ``answer_started``: the checkpoint clock starts (Regenerate: a new ``partial``
   answer is inserted).
3. ``chunk_shown``: the text so far is checkpointed at most every
   :data:`CHECKPOINT_S` seconds, so a crash loses at most those seconds.
4. ``message_added`` (assistant): the answer, stopped and failed ones included,
   is finished exactly once with its statistics. An answer that wrote nothing is
   removed.

Failures (issue 19): every :class:`HistoryError` is caught here, in
:meth:`HistoryController._run`, and shown once in the window's notice bar. A
write that failed (a full disk) waits in a queue, in order, and is retried every
:data:`RETRY_MS` ms and before the next write; the window keeps showing the
conversation meanwhile. A round whose start could not be stored is later stored
whole (question and answer in one transaction), never the answer alone.

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

from PySide6.QtCore import QObject, QTimer, Slot

from glmdesk.core.history import History
from glmdesk.core.history_errors import HistoryError
from glmdesk.core.history_rounds import begin_round, save_round
from glmdesk.core.history_tree import ACTIVE
from glmdesk.core.history_types import GenerationStats, StoredMessage
from glmdesk.core.messages import ChatMessage
from glmdesk.ui.messages import error_sentence

#: Seconds between checkpoints of a streaming answer.
CHECKPOINT_S = 2.0
#: Milliseconds between retries of writes that failed.
RETRY_MS = 5000


class _SiblingOfLastAnswer:
    """Anchor after Regenerate: the parent of the branch's last answer, looked up when
    the new answer is written (the old one may still wait in the retry queue)."""

    def __repr__(self) -> str:
        return "SIBLING_OF_LAST_ANSWER"


SIBLING_OF_LAST_ANSWER: Any = _SiblingOfLastAnswer()


@dataclasses.dataclass
class ConversationRef:
    """A conversation whose id is ``None`` until its first round is stored."""

    id: int | None = None


@dataclasses.dataclass
class _Answer:
    """The answer being written: where it goes and what of its round is stored."""

    conv: ConversationRef
    settings: dict[str, Any]
    anchor: Any = ACTIVE  # parent of the first message of this round (see the module docstring)
    message_id: int | None = None  # the stored ``partial`` row, if its round began in the file
    unsaved_user: str | None = None  # the question, when the round could not begin in the file
    parts: list[str] = dataclasses.field(default_factory=list)


class HistoryController(QObject):
    """Connects a :class:`ChatSession` and a :class:`HistoryPanel` to a :class:`History`.

    Args:
        session: The chat session (its signals drive saving; it shows what is opened).
        history: The open database.
        panel: The history panel, or ``None``.
        parent: The owning QObject (the window).
        notice: Where failures are shown (a :class:`NoticeBar`); default: ``parent.notice``.
    """

    def __init__(
        self, session, history: History, panel=None, parent: QObject | None = None, notice=None
    ) -> None:
        super().__init__(parent or session)
        self.session = session
        self.notice = notice if notice is not None else getattr(parent, "notice", None)
        self.history = history
        self.panel = panel
        self._conv = ConversationRef()
        self._anchor: Any = ACTIVE  # parent of the next message saved (see the module docstring)
        self._answer: _Answer | None = None
        self._last_checkpoint = 0.0
        self._pending: list[Callable[[], None]] = []  # failed writes, oldest first
        self._reported: str | None = None  # the failure kind on show
        self._deferred = ""  # a failure sentence to show after the current signal chain
        self._retry = QTimer(self)
        self._retry.setInterval(RETRY_MS)
        self._retry.timeout.connect(self.retry_pending)
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

    @property
    def conversation_id(self) -> int | None:
        """The open conversation's id (``None`` for a new one not stored yet)."""
        return self._conv.id

    def close(self) -> None:
        """Try the waiting writes a last time and stop retrying (before the history closes)."""
        self._retry.stop()
        if self._pending:
            self.retry_pending()
            self._retry.stop()

    def pending_writes(self) -> int:
        """Number of writes waiting for a retry (0 when everything is stored)."""
        return len(self._pending)

    # -- the one place failures are caught ------------------------------------------
    def _run(self, write: Callable[[], Any], *, again: bool = False) -> bool:
        """Run ``write`` now; on a :class:`HistoryError` show it and return ``False``.

        Args:
            write: One history call (one transaction).
            again: Show the sentence even if this kind was shown before (a new round).
        """
        try:
            write()
        except HistoryError as exc:
            if (again or exc.kind != self._reported) and self.notice is not None:
                self._deferred = error_sentence(exc.info)
                # After the current signal chain: the window clears its notice bar as an answer starts.
                QTimer.singleShot(0, self._show_deferred)
            self._reported = exc.kind
            if self._pending:
                self._retry.start()
            return False
        if not self._pending:  # storage works: a later failure is news again
            self._reported = None
        return True

    @Slot()
    def _show_deferred(self) -> None:
        if self._deferred and self.notice is not None:
            self.notice.show_error(self._deferred)
        self._deferred = ""

    def _queue(self, write: Callable[[], None]) -> None:
        """Queue a write after any that wait, then try them all in order."""
        self._pending.append(write)
        self.retry_pending()

    @Slot()
    def retry_pending(self, again: bool = False) -> bool:
        """Run the waiting writes in order; stop at the first that fails again.

        Args:
            again: Show a failure even if its kind was shown before (the user acts anew).

        Returns:
            Whether nothing waits any more.
        """
        stored, shown = False, self._reported
        while self._pending:
            write = self._pending[0]
            try:
                ok = self._run(write, again=again)
            except KeyError:  # its conversation was erased meanwhile: nothing to store
                ok = True
            if not ok:
                self._retry.start()
                return False
            self._pending.pop(0)
            stored = True
        self._retry.stop()
        self._reported = None
        if stored and shown is not None and self.notice is not None:
            self.notice.show_info(self.tr("The chat history is saved again."))
        return True

    # -- slots -----------------------------------------------------------------------
    def _model_name(self) -> str | None:
        info = self.session.model_info
        return info.name if info is not None else None

    def _refresh(self) -> None:
        if self.panel is not None:
            self.panel.refresh()
            self.panel.highlight_conversation(self._conv.id)

    def _take_anchor(self) -> Any:
        anchor, self._anchor = self._anchor, ACTIVE
        return anchor

    def _parent(self, conversation_id: int | None, anchor: Any) -> Any:
        """The stored parent an anchor stands for, when the write runs."""
        if anchor is not SIBLING_OF_LAST_ANSWER:
            return anchor
        stored = self.history.messages(conversation_id) if conversation_id is not None else []
        return stored[-1].parent_id if stored and stored[-1].role == "assistant" else ACTIVE

    @Slot(int)
    def open_conversation(self, conversation_id: int) -> None:
        """Show a saved conversation (its branch on screen); the next message continues it."""
        if conversation_id == self._conv.id and not self.session.is_streaming():
            return
        self.reload(conversation_id)

    def reload(self, conversation_id: int | None = None) -> bool:
        """Show ``conversation_id`` (default: the open one) as stored, on its active branch."""
        cid = self._conv.id if conversation_id is None else conversation_id
        loaded: list = []

        def read() -> None:
            leaf = self.history.active_leaf(cid)
            last = self.history.get_message(leaf).finish_reason if leaf is not None else None
            loaded.extend((self.history.chat_messages(cid), last or "stop"))  # "length": Continue

        if cid is None or not self._run(read):
            return False
        # The session stops (and we save) a running answer before switching.
        self.session.show_conversation(loaded[0], key=("history", cid), last_reason=loaded[1])
        if cid != self._conv.id:
            self._conv = ConversationRef(cid)
        self._anchor = ACTIVE
        if self.panel is not None:
            self.panel.highlight_conversation(cid)
        return True

    def shown_messages(self) -> list[tuple[StoredMessage, tuple[int, ...]]]:
        """The stored messages on screen (as the chat shows them: no system messages, no
        images, no empty answers), each with its siblings' ids; empty when not saved."""
        cid = self._conv.id
        loaded: list[list[tuple[StoredMessage, tuple[int, ...]]]] = []
        if cid is None or not self._run(lambda: loaded.append(self.history.branch_with_siblings(cid))):
            return []
        return [
            (m, s)
            for m, s in loaded[0]
            if m.role != "system"
            and m.kind != "image"
            and not (m.kind == "text" and m.role == "assistant" and m.text == "")
        ]

    def switch_sibling(self, index: int, step: int) -> bool:
        """Show the previous (``step=-1``) or next (``+1``) version of the message at ``index``."""
        shown = self.shown_messages()
        if self.session.is_streaming() or self._pending or not 0 <= index < len(shown):
            return False
        message, siblings = shown[index]
        position = siblings.index(message.id) + step
        if not 0 <= position < len(siblings):
            return False
        if not self._run(lambda: self.history.switch_branch(siblings[position]), again=True):
            return False
        return self.reload()

    def delete_at(self, index: int) -> bool:
        """Delete the message at ``index`` for good (its replies move up) and show the result."""
        shown = self.shown_messages()
        if self.session.is_streaming() or self._pending or not 0 <= index < len(shown):
            return False
        if not self._run(lambda: self.history.delete_message(shown[index][0].id), again=True):
            return False
        self.reload()
        self._refresh()
        return True

    @Slot(int)
    def _on_conversation_rewound(self, index: int) -> None:
        shown = self.shown_messages()
        if 0 <= index < len(shown):
            self._anchor = shown[index - 1][0].id if index > 0 else shown[0][0].parent_id

    @Slot(int, int)
    def _on_search_result_selected(self, conversation_id: int, message_id: int) -> None:
        try:  # a hit on another branch opens that branch
            if not self._run(lambda: self.history.switch_branch(message_id), again=True):
                return
        except KeyError:
            return
        self.reload(conversation_id)

    @Slot(int, object, object)
    def _on_message_added(self, _index: int, message: ChatMessage, record) -> None:
        if message.role == "user":
            self._begin_answer(message.content)  # the question and its empty answer, one transaction
            return
        if message.role == "observation":  # a tool's result, before the answer continues
            conv, text, name = self._conv, message.content, message.name
            self._queue(
                lambda: conv.id is not None and self.history.add_observation(conv.id, text, name=name)
            )
            return
        answer, self._answer = self._answer, None
        if answer is None:  # an answer the window added without starting it
            conv, anchor = self._conv, self._take_anchor()
            self._queue(lambda: self._save(conv, None, message.content, "stop", None, None, anchor))
            self._refresh()
            return
        stats = GenerationStats(
            ttft_s=record.ttft_s if record else None,
            tokens_per_s=record.tokens_per_s if record else None,
            n_tokens=record.n_tokens if record else None,
            prompt_tokens=record.prompt_tokens if record else None,
        )
        reason = record.finish_reason if record is not None else "stop"
        params = record.params if record is not None else None
        settings = dataclasses.asdict(params) if params is not None else answer.settings
        model = self._model_name()
        if answer.message_id is not None:
            mid = answer.message_id
            self._queue(
                lambda: self.history.finish_assistant_message(
                    mid,
                    message.content,
                    reason,
                    stats=stats,
                    settings=settings,
                    model=model,
                    tool_call=message.tool_call,
                )
            )
        else:
            self._queue(
                lambda: self._save(
                    answer.conv, answer.unsaved_user, message.content, reason, stats, settings, answer.anchor
                )
            )
        self._refresh()

    def _save(self, conv: ConversationRef, user, text, reason, stats, settings, anchor=ACTIVE) -> None:
        conv.id = save_round(
            self.history,
            conv.id,
            user,
            text,
            finish_reason=reason,
            stats=stats,
            model=self._model_name(),
            settings=settings,
            parent_id=self._parent(conv.id, anchor),
        )

    @Slot(object, str)
    def _on_tool_images_added(self, images: list, name: str) -> None:
        conv = self._conv
        for png in images:
            self._queue(
                lambda png=png: conv.id is not None and self.history.add_image(conv.id, png, name=name)
            )

    @Slot(int)
    def _on_answer_started(self, _request_id: int) -> None:
        self._last_checkpoint = time.monotonic()
        if self._answer is None and self.session.is_resuming():
            self._resume_answer()
        elif self._answer is None:  # Regenerate: a new answer to the stored question
            self._begin_answer(None)

    def _resume_answer(self) -> None:
        """Continue: the stored answer on screen becomes ``partial`` again; checkpoints and
        the finish write the whole text into that same row (no new message)."""
        shown = self.shown_messages()
        answer = _Answer(self._conv, dataclasses.asdict(self.session.params_box.get()))
        answer.parts.append(self.session.state.messages[-1].content)
        self._answer = answer
        if shown and shown[-1][0].role == "assistant" and shown[-1][0].text == answer.parts[0]:
            mid = answer.message_id = shown[-1][0].id
            self._queue(lambda: self.history.resume_assistant_message(mid))

    def _begin_answer(self, user: str | None) -> None:
        """Store the start of a round (``user``: its question) or of a new answer (``None``)."""
        answer = _Answer(self._conv, dataclasses.asdict(self.session.params_box.get()), self._take_anchor())
        self._answer = answer
        model = self._model_name()

        def begin() -> None:
            if user is None:
                answer.message_id = self.history.begin_assistant_message(
                    answer.conv.id,
                    model=model,
                    settings=answer.settings,
                    parent_id=self._parent(answer.conv.id, answer.anchor),
                )
                return
            answer.conv.id, answer.message_id = begin_round(
                self.history,
                answer.conv.id,
                user,
                model=model,
                settings=answer.settings,
                parent_id=self._parent(answer.conv.id, answer.anchor),
            )

        # Earlier rounds first; a round that cannot begin is stored whole when it ends.
        waiting = not self.retry_pending(again=True)
        if waiting or (user is None and answer.conv.id is None) or not self._run(begin, again=True):
            answer.unsaved_user = user
        self._refresh()

    @Slot(int, object)
    def _on_chunk_shown(self, _request_id: int, chunk) -> None:
        answer = self._answer
        if answer is None or not chunk.text:
            return
        answer.parts.append(chunk.text)
        now = time.monotonic()
        if (
            answer.message_id is not None
            and not self._pending
            and now - self._last_checkpoint >= CHECKPOINT_S
        ):
            mid, text = answer.message_id, "".join(answer.parts)
            self._run(lambda: self.history.checkpoint_partial(mid, text))  # the finish saves it anyway
            self._last_checkpoint = now

    @Slot(int, object)
    def _on_answer_finished(self, _request_id: int, _chunk) -> None:
        answer, self._answer = self._answer, None
        if answer is None:
            return
        # Nothing was written: leave no empty answer, keep the question as shown.
        if answer.message_id is not None:
            mid = answer.message_id
            self._queue(lambda: self.history.delete_message(mid))
        elif answer.unsaved_user is not None:
            self._queue(
                lambda: self._save(answer.conv, answer.unsaved_user, None, "stop", None, None, answer.anchor)
            )
        self._refresh()

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
