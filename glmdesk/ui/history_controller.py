"""Saves the open conversation as it happens; opens conversations picked in the panel.

It listens to the :class:`~glmdesk.ui.chat_session.ChatSession`, never to the window.

A plain QObject on the GUI thread, the only owner of the :class:`History`
database (the worker never touches it). The flow for one answer:

1. ``message_added`` (user): the conversation is created if needed and the user
   message committed, before the worker sees the request.
2. ``answer_started``: an empty ``partial`` assistant message is inserted.
3. ``chunk_shown``: the text so far is checkpointed at most every
   :data:`CHECKPOINT_S` seconds, so a crash loses at most those seconds.
4. ``message_added`` (assistant): the answer, stopped and failed ones included,
   is finished exactly once with its statistics. An answer that wrote nothing is
   removed.

Branches (:mod:`glmdesk.core.history_tree`): Regenerate, and an edit or regeneration
of an earlier message (the session's ``conversation_rewound``), set an *anchor*: the
next message saved goes under it, as a sibling of the one it replaces, instead of
after the branch's end. Nothing is deleted and no conversation is copied. The
conversation on screen is always the one highlighted in the panel.
"""

from __future__ import annotations

import dataclasses
import time

from PySide6.QtCore import QObject, Slot

from glmdesk.core.history import History
from glmdesk.core.history_tree import ACTIVE
from glmdesk.core.history_types import GenerationStats, StoredMessage
from glmdesk.core.messages import ChatMessage

#: Seconds between checkpoints of a streaming answer.
CHECKPOINT_S = 2.0


class HistoryController(QObject):
    """Connects a :class:`ChatSession` and a :class:`HistoryPanel` to a :class:`History`.

    Args:
        session: The chat session (its signals drive saving; it shows what is opened).
        history: The open database.
        panel: The history panel, or ``None``.
        parent: The owning QObject (the window).
    """

    def __init__(self, session, history: History, panel=None, parent: QObject | None = None) -> None:
        super().__init__(parent or session)
        self.session = session
        self.history = history
        self.panel = panel
        self.conversation_id: int | None = None
        self._message_id: int | None = None  # the assistant message being written
        self._parts: list[str] = []
        self._last_checkpoint = 0.0
        self._anchor = ACTIVE  # parent of the next message saved (see the module docstring)
        session.message_added.connect(self._on_message_added)
        session.answer_started.connect(self._on_answer_started)
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

    def _model_name(self) -> str | None:
        info = self.session.model_info
        return info.name if info is not None else None

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

    def reload(self, conversation_id: int | None = None) -> None:
        """Show ``conversation_id`` (default: the open one) as stored, on its active branch."""
        cid = self.conversation_id if conversation_id is None else conversation_id
        if cid is None:
            return
        messages = self.history.chat_messages(cid)
        # The session stops (and we save) a running answer before switching.
        self.session.show_conversation(messages)
        self.conversation_id = cid
        self._anchor = ACTIVE
        if self.panel is not None:
            self.panel.highlight_conversation(cid)

    def shown_messages(self) -> list[tuple[StoredMessage, tuple[int, ...]]]:
        """The stored messages on screen (system messages left out, as the chat shows them),
        each with its siblings' ids; empty when the conversation is not saved."""
        if self.conversation_id is None:
            return []
        return [
            (m, s) for m, s in self.history.branch_with_siblings(self.conversation_id) if m.role != "system"
        ]

    def switch_sibling(self, index: int, step: int) -> bool:
        """Show the previous (``step=-1``) or next (``+1``) version of the message at ``index``."""
        shown = self.shown_messages()
        if self.session.is_streaming() or not 0 <= index < len(shown):
            return False
        message, siblings = shown[index]
        position = siblings.index(message.id) + step
        if not 0 <= position < len(siblings):
            return False
        self.history.switch_branch(siblings[position])
        self.reload()
        return True

    def delete_at(self, index: int) -> bool:
        """Delete the message at ``index`` for good (its replies move up) and show the result."""
        shown = self.shown_messages()
        if self.session.is_streaming() or not 0 <= index < len(shown):
            return False
        self.history.delete_message(shown[index][0].id)
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
        try:
            self.history.switch_branch(message_id)  # a hit on another branch opens that branch
        except KeyError:
            return
        self.reload(conversation_id)

    @Slot(int, object, object)
    def _on_message_added(self, _index: int, message: ChatMessage, record) -> None:
        if message.role == "user":
            if self.conversation_id is None:
                self.conversation_id = self.history.create_conversation(model=self._model_name())
            self.history.add_message(self.conversation_id, "user", message.content, parent_id=self._anchor)
            self._anchor = ACTIVE
            self._refresh()
            return
        params = record.params if record is not None else None
        stats = GenerationStats(
            ttft_s=record.ttft_s if record else None,
            tokens_per_s=record.tokens_per_s if record else None,
            n_tokens=record.n_tokens if record else None,
            prompt_tokens=record.prompt_tokens if record else None,
        )
        reason = record.finish_reason if record is not None else "stop"
        if self._message_id is not None:
            self.history.finish_assistant_message(
                self._message_id,
                message.content,
                reason,
                stats=stats,
                settings=dataclasses.asdict(params) if params is not None else None,
                model=self._model_name(),
            )
            self._message_id = None
        elif self.conversation_id is not None:
            self.history.add_message(
                self.conversation_id, "assistant", message.content, parent_id=self._anchor
            )
            self._anchor = ACTIVE
        self._refresh()

    @Slot(int)
    def _on_answer_started(self, _request_id: int) -> None:
        if self.conversation_id is None:
            return
        params = self.session.params_box.get()
        self._message_id = self.history.begin_assistant_message(
            self.conversation_id,
            model=self._model_name(),
            settings=dataclasses.asdict(params),
            parent_id=self._anchor,
        )
        self._anchor = ACTIVE
        self._parts = []
        self._last_checkpoint = time.monotonic()

    @Slot(int, object)
    def _on_chunk_shown(self, _request_id: int, chunk) -> None:
        if self._message_id is None or not chunk.text:
            return
        self._parts.append(chunk.text)
        now = time.monotonic()
        if now - self._last_checkpoint >= CHECKPOINT_S:
            self.history.checkpoint_partial(self._message_id, "".join(self._parts))
            self._last_checkpoint = now

    @Slot(int, object)
    def _on_answer_finished(self, _request_id: int, _chunk) -> None:
        if self._message_id is not None:  # nothing was written: leave nothing behind
            self.history.delete_message(self._message_id)
            self._message_id = None

    @Slot()
    def _on_last_answer_removed(self) -> None:
        if self.conversation_id is None:
            return
        stored = self.history.messages(self.conversation_id)
        if stored and stored[-1].role == "assistant":
            self._anchor = stored[-1].parent_id  # the new answer becomes its sibling

    @Slot()
    def _on_conversation_cleared(self) -> None:
        self.conversation_id = None
        self._anchor = ACTIVE
        if self.panel is not None:
            self.panel.highlight_conversation(None)

    @Slot(int)
    def _on_conversation_deleted(self, conversation_id: int) -> None:
        if conversation_id == self.conversation_id:
            self.session.new_chat()  # stops and saves a running answer first
            self.conversation_id = None

    @Slot()
    def _on_new_chat_requested(self) -> None:
        self.session.new_chat()
