"""Records the live conversation's rounds in the history as they happen.

A plain QObject on the GUI thread, part of the
:class:`~glmdesk.ui.history.history_controller.HistoryController`. It listens to the
:class:`~glmdesk.ui.session.chat_session.ChatSession` and submits each write of a round
(built in :mod:`glmdesk.ui.history.history_round_writes`) to the
:class:`~glmdesk.ui.history.history_writes.WriteQueue`, one at a time, in order. The flow
for one answer:

1. ``message_added`` (user): the conversation (if new), the user message and an
   empty ``partial`` assistant message are committed in one transaction
   (:func:`~glmdesk.core.history_rounds.begin_round`), before any later write.
2. ``answer_started``: the checkpoint clock starts (Regenerate: a new ``partial``
   answer is inserted). The recorder holds the answer
   (:meth:`~glmdesk.ui.session.chat_session.ChatSession.hold_answer`) until every write
   before it is stored or has failed, so the question (new, edited, regenerated,
   continued, or a tool's result) is in the file before the engine starts on it: a
   native engine that kills the process cannot lose it.
3. ``step_shown``: the text so far is checkpointed at most every
   :data:`CHECKPOINT_S` seconds, so a crash loses at most those seconds.
4. ``message_added`` (assistant): the answer, stopped and failed ones included,
   is finished exactly once with its statistics. An answer that wrote nothing is
   removed.

Each write decides what to store when it runs (on the writer thread), from what the
writes before it stored: the answer of a round whose start failed is stored whole
with its question, never alone.

Branches (:mod:`glmdesk.core.history_tree`): Regenerate, and an edit or regeneration
of an earlier message (the session's ``conversation_rewound``), set an *anchor*: the
next message saved goes under it, as a sibling of the one it replaces, instead of
after the branch's end. Nothing is deleted and no conversation is copied.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from PySide6.QtCore import QObject, Signal, Slot

from glmdesk.chat.reader import parts_of
from glmdesk.core.history_tree import ACTIVE
from glmdesk.core.messages import ChatMessage
from glmdesk.core.parts import TextPart
from glmdesk.ui.history.history_anchors import SIBLING_OF_LAST_ANSWER, Answer, ConversationRef, Rewound
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


class RoundRecorder(QObject):
    """Writes a :class:`ChatSession`'s rounds into the open conversation of the history.

    Args:
        session: The chat session (its signals are what is recorded).
        writes: The window's :class:`WriteQueue`.
        parent: The owning QObject (the history controller).

    Attributes:
        conversation: The :class:`ConversationRef` written into; its ``id`` may come with
            its first round's write, so a write that needs it reads it when it runs.

    Signals:
        round_begun(): A round (or an answer the window added) is stored at the end of
            the conversation: the list of conversations changes order.
    """

    round_begun = Signal()

    def __init__(self, session, writes: WriteQueue, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.session = session
        self.writes = writes
        self.conversation = ConversationRef()
        self._anchor: Any = ACTIVE  # parent of the next message saved (see the module docstring)
        self._answer: Answer | None = None
        self._last_checkpoint = 0.0
        session.message_added.connect(self._on_message_added)
        session.answer_started.connect(self._on_answer_started)
        session.tool_images_added.connect(self._on_tool_images_added)
        session.step_shown.connect(self._on_step_shown)
        session.answer_finished.connect(self._on_answer_finished)
        session.last_answer_removed.connect(self._on_last_answer_removed)
        session.conversation_rewound.connect(self._on_conversation_rewound)

    def continue_in(self, conversation_id: int | None) -> None:
        """Record the next messages at the active branch's end of ``conversation_id``
        (``None``: a new conversation, stored with its first round)."""
        if conversation_id is None or conversation_id != self.conversation.id:
            self.conversation = ConversationRef(conversation_id)
        self._anchor = ACTIVE

    def _model_name(self) -> str | None:
        info = self.session.loader.model_info
        return info.name if info is not None else None

    def _settings(self) -> dict[str, Any]:
        return dataclasses.asdict(self.session.params_box.get())

    def _take_anchor(self) -> Any:
        anchor, self._anchor = self._anchor, ACTIVE
        return anchor

    @Slot(int)
    def _on_conversation_rewound(self, index: int) -> None:
        self._anchor = Rewound(index)  # resolved when the next message is written

    @Slot()
    def _on_last_answer_removed(self) -> None:
        self._anchor = SIBLING_OF_LAST_ANSWER  # the new answer becomes the old one's sibling

    @Slot(int, object, object)
    def _on_message_added(self, _index: int, message: ChatMessage, record) -> None:
        if message.role == "user":  # the question (with its images, documents' names) and its empty answer
            self._begin_answer(message.content, message.attachments + message.documents)
            return
        conv = self.conversation
        if message.role == "observation":  # a tool's result, before the answer continues
            self.writes.submit(observation_write(conv, message))
            return
        model = self._model_name()
        answer, self._answer = self._answer, None
        if answer is None and message.tool_call is not None:  # a further call of the same answer (GLM-4.5)
            self.writes.submit(further_call_write(conv, message, model, self._settings()))
        elif answer is None:  # an answer the window added without starting it
            write = unstarted_answer_write(conv, message, self._take_anchor(), model)
            self.writes.submit(write, then=lambda _r: self.round_begun.emit())
        else:
            self.writes.submit(finish_write(answer, message, record, model))

    @Slot(object, str)
    def _on_tool_images_added(self, images: list, name: str) -> None:
        for png in images:
            self.writes.submit(image_write(self.conversation, png, name))

    @Slot(int)
    def _on_answer_started(self, _request_id: int) -> None:
        self._last_checkpoint = time.monotonic()
        if self._answer is None and self.session.is_resuming():
            self._resume_answer()
        elif self._answer is None:  # Regenerate: a new answer to the stored question
            self._begin_answer(None)
        release, answer, conv = self.session.hold_answer(), self._answer, self.conversation
        # The engine starts once the question is stored (or its write failed: then it is
        # stored whole with the answer); the ids go into the run's marker.
        self.writes.after_writes(lambda: release(conv.id, answer.message_id if answer else None))

    def _resume_answer(self) -> None:
        """Continue: the stored answer on screen becomes ``partial`` again; checkpoints and
        the finish write the whole text into that same row (no new message). The row is
        found when the write runs, after the write that stored the cut answer."""
        conv, text = self.conversation, self.session.state.messages[-1].content
        answer = Answer(conv, self._settings())
        answer.parts.add((TextPart(text),))
        self._answer = answer
        self.writes.submit(resume_write(answer, conv, text))

    def _begin_answer(self, user: str | None, attachments: tuple = ()) -> None:
        """Store the start of a round (``user``: its question, ``attachments`` its images)
        or of a new answer (``None``)."""
        answer = Answer(
            self.conversation,
            self._settings(),
            self._take_anchor(),
            unsaved_user=user,
            unsaved_images=attachments,
        )
        self._answer = answer
        begin = begin_write(answer, user, attachments, self._model_name())
        if self.writes.blocked():  # earlier rounds first: this one is stored whole when it ends
            self.writes.retry(again=True)
        else:  # a round that cannot begin is stored whole when it ends
            self.writes.submit(begin, then=lambda _r: self.round_begun.emit(), droppable=True, again=True)

    @Slot(int, object)
    def _on_step_shown(self, _request_id: int, events) -> None:
        answer = self._answer
        parts = parts_of(events)
        if answer is None or not parts:
            return
        answer.parts.add(parts)
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
