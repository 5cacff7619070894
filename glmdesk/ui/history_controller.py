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
"""

from __future__ import annotations

import dataclasses
import time

from PySide6.QtCore import QObject, Slot

from glmdesk.core.history import History
from glmdesk.core.history_types import GenerationStats
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
        session.message_added.connect(self._on_message_added)
        session.answer_started.connect(self._on_answer_started)
        session.tool_images_added.connect(self._on_tool_images_added)
        session.chunk_shown.connect(self._on_chunk_shown)
        session.answer_finished.connect(self._on_answer_finished)
        session.last_answer_removed.connect(self._on_last_answer_removed)
        session.conversation_cleared.connect(self._on_conversation_cleared)
        if panel is not None:
            panel.conversation_selected.connect(self.open_conversation)
            panel.conversation_deleted.connect(self._on_conversation_deleted)
            panel.new_chat_requested.connect(self._on_new_chat_requested)

    def _model_name(self) -> str | None:
        info = self.session.model_info
        return info.name if info is not None else None

    def _refresh(self) -> None:
        if self.panel is not None:
            self.panel.refresh()

    @Slot(int)
    def open_conversation(self, conversation_id: int) -> None:
        """Show a saved conversation; the next message continues it."""
        if conversation_id == self.conversation_id and not self.session.is_streaming():
            return
        messages = self.history.chat_messages(conversation_id)
        # The session stops (and we save) a running answer before switching.
        self.session.show_conversation(messages)
        self.conversation_id = conversation_id

    @Slot(int, object, object)
    def _on_message_added(self, _index: int, message: ChatMessage, record) -> None:
        if message.role == "user":
            if self.conversation_id is None:
                self.conversation_id = self.history.create_conversation(model=self._model_name())
            self.history.add_message(self.conversation_id, "user", message.content)
            self._refresh()
            return
        if message.role == "observation":
            if self.conversation_id is not None:
                self.history.add_observation(self.conversation_id, message.content, name=message.name)
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
                tool_call=message.tool_call,
            )
            self._message_id = None
        elif self.conversation_id is not None and message.tool_call is not None:
            self.history.add_tool_call(self.conversation_id, message.tool_call, message.content)
        elif self.conversation_id is not None:
            self.history.add_message(self.conversation_id, "assistant", message.content)
        self._refresh()

    @Slot(object, str)
    def _on_tool_images_added(self, images: list, name: str) -> None:
        if self.conversation_id is None:
            return
        for png in images:
            self.history.add_image(self.conversation_id, png, name=name)

    @Slot(int)
    def _on_answer_started(self, _request_id: int) -> None:
        if self.conversation_id is None:
            return
        params = self.session.params_box.get()
        self._message_id = self.history.begin_assistant_message(
            self.conversation_id, model=self._model_name(), settings=dataclasses.asdict(params)
        )
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
            self.history.delete_message(stored[-1].id)

    @Slot()
    def _on_conversation_cleared(self) -> None:
        self.conversation_id = None

    @Slot(int)
    def _on_conversation_deleted(self, conversation_id: int) -> None:
        if conversation_id == self.conversation_id:
            self.session.new_chat()  # stops and saves a running answer first
            self.conversation_id = None

    @Slot()
    def _on_new_chat_requested(self) -> None:
        self.session.new_chat()
