"""Sending a message with the chat's documents: the question waits for indexing still
under way, its documents are prepared on the documents' thread (the model's tokenizer
counts), then the session sends it with what the model reads; the answer shows the sources
it was given in a card under its text (:class:`SourcesView`). The question keeps where its
sources were (not their text, :class:`~glmdesk.core.history_documents.SourceRef`), so a
conversation reopened from the history shows its answers' cards again."""

from __future__ import annotations

import functools

from PySide6.QtCore import QObject, Signal, Slot

from glmdesk.core.history_documents import DocumentUse, SourceRef, passage_digest
from glmdesk.core.messages import ChatMessage
from glmdesk.ui.documents.document_library import DocumentLibrary
from glmdesk.ui.documents.document_words import note_sentence
from glmdesk.ui.documents.sources_view import SourcesView


class DocumentSending(QObject):
    """Sends through ``session`` with ``library``'s documents.

    Args:
        session: The window's :class:`~glmdesk.ui.session.chat_session.ChatSession`.
        library: The window's :class:`DocumentLibrary`.
        chat_view: The window's :class:`~glmdesk.ui.chat.chat_view.ChatView` (an answer's
            sources card goes under it).

    Attributes:
        cards: The sources cards shown, oldest first (a card goes with its answer).

    Signals:
        send_failed(str): a prepared message could not go (its text stays in the input
            box): the sentence.
        documents_failed(str): the index or the tokenizer failed; the question went alone:
            the sentence.
        notes_shown(str): the question went without passages (none fit, none indexed):
            the documents' notes (with passages, the sources card shows them).
    """

    send_failed = Signal(str)
    documents_failed = Signal(str)
    notes_shown = Signal(str)

    def __init__(self, session, library: DocumentLibrary, chat_view, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.session, self.library, self.chat_view = session, library, chat_view
        self.cards: list[SourcesView] = []
        self._turn = None  # the documents the question being answered was given
        self._card_due = False  # its answer still needs its sources card
        self._pending: tuple | None = None  # (text, system prompt, cache, attachments)
        self._waiting_for_index = False
        self._next_turn = None  # the turn the next answer was given
        self._plain = False  # the next answer is a question's without documents
        library.turn_prepared.connect(self._on_turn_prepared)
        library.indexing_finished.connect(self._on_indexed)
        library.failed.connect(self._on_documents_failed)
        session.answer_started.connect(self._on_answer_started)
        session.answer_finished.connect(self._on_answer_finished)
        self._chat = session.conversation_key
        for signal in (session.conversation_cleared, session.conversation_replaced):
            signal.connect(self._forget)  # another chat: its own documents
        session.conversation_replaced.connect(self._show_kept_sources)
        library.recalled.connect(self._on_recalled)
        self._recalling: dict[int, SourcesView] = {}  # recall request -> its (hidden) card

    def is_preparing(self) -> bool:
        """True while a question waits for its documents."""
        return self._pending is not None

    def send(self, text: str, system_prompt: str, cache, attachments: tuple = ()) -> bool:
        """Send ``text`` now, or with documents once they are ready; False when it cannot go."""
        if self._pending is not None:
            return False
        if not self.library.has_documents():
            sent = self.session.send(text, system_prompt, cache, attachments)
            self._plain = sent  # its answer had no documents: the sources line goes
            return sent
        if self.session.is_streaming() or not text.strip() or not self.session.is_ready():
            return False
        self._pending = (text, system_prompt, cache, attachments)
        if any(self.library.folders.values()):
            self.library.refresh_folders()  # files changed since: read again first (unchanged ones are not)
        if self.library.is_indexing():
            self._waiting_for_index = True  # the question goes when the files are read
        else:
            self._prepare()
        return True

    def _prepare(self) -> None:
        if self._pending is None:
            return
        text, system_prompt, _cache, _attachments = self._pending
        messages, _offset = self.session.state.request(system_prompt)
        messages = (*messages, ChatMessage("user", text))
        caps = self.session.loader.capabilities
        context = caps.context_length if caps is not None else 0
        max_new = self.session.params_box.get().max_new_tokens
        self.library.prepare(messages, self.session.loader.backend, context, max_new)

    @Slot(object)
    def _on_indexed(self, _report) -> None:
        if self._waiting_for_index and not self.library.is_indexing():
            self._waiting_for_index = False
            self._prepare()

    @Slot(object)
    def _on_turn_prepared(self, turn) -> None:
        if self._pending is None:
            return
        text, system_prompt, cache, attachments = self._pending
        self._pending = None
        model_text = turn.text if turn is not None and turn.sources else None
        if turn is not None and not turn.sources and turn.notes:
            self.notes_shown.emit("\n".join(note_sentence(n) for n in turn.notes))
        used = _uses(turn) if model_text else ()
        self._next_turn = turn
        if not self.session.send(
            text, system_prompt, cache, attachments, model_text=model_text, documents=used
        ):
            self._next_turn = None
            self.send_failed.emit(self.tr("The message could not be sent now; it is still in the input box."))

    @Slot(str)
    def _on_documents_failed(self, detail: str) -> None:
        self.documents_failed.emit(
            self.tr("The documents could not be used ({detail}); a question goes without them.").format(
                detail=detail
            )
        )

    @Slot(int)
    def _on_answer_started(self, _request_id: int) -> None:
        """A new question's answer will show its sources (or none); Regenerate and a tool
        round's answer keep the question's; Continue writes on under the card it has."""
        turn, self._next_turn = self._next_turn, None
        plain, self._plain = self._plain, False
        if turn is not None or plain:
            self._turn = turn if turn is not None and turn.sources else None
            self._card_due = self._turn is not None
        elif self._turn is not None and not self.session.is_resuming():
            self._card_due = True  # Regenerate: the new answer gets the card the old one took with it

    @Slot(int, object)
    def _on_answer_finished(self, _request_id: int, _chunk) -> None:
        messages = self.chat_view.messages()
        if not self._card_due or not messages:
            return
        self._card_due = False
        card = SourcesView()
        self.chat_view.add_card(
            card, under=messages[-1]
        )  # in the answer first: a parentless widget shown is a window
        card.show_turn(self._turn)
        self.cards.append(card)
        card.destroyed.connect(functools.partial(self._drop_card, card))  # it goes with its answer

    def _drop_card(self, card: SourcesView, *_args) -> None:
        if card in self.cards:
            self.cards.remove(card)

    @Slot(object)
    def _show_kept_sources(self, messages: list) -> None:
        """A reopened conversation: under each answer, the sources its question kept, read
        back from the index (the chat view shows one widget per message, in order)."""
        widgets = self.chat_view.messages()
        if len(widgets) != len(messages):
            return
        for i, message in enumerate(messages):
            if message.role != "user" or not any(d.sources for d in message.documents):
                continue
            answer = None
            for j in range(i + 1, len(messages)):
                if messages[j].role == "user":
                    break
                if messages[j].role == "assistant":
                    answer = j  # the last answer of the round (after any tool calls)
            if answer is None:
                continue
            card = SourcesView()  # hidden until its sources are read back
            self.chat_view.add_card(card, under=widgets[answer])
            self.cards.append(card)
            card.destroyed.connect(functools.partial(self._drop_card, card))
            self._recalling[self.library.recall(message.documents)] = card

    @Slot(int, object)
    def _on_recalled(self, request: int, recalled: list) -> None:
        card = self._recalling.pop(request, None)
        if card is not None and card in self.cards:  # not gone with another conversation
            card.show_recalled(recalled)

    @Slot()
    def _forget(self, *_args) -> None:
        """Another conversation: no question's documents are pending, and the library puts
        back what was on for it (nothing for a new one)."""
        self._turn, self._card_due = None, False
        self.library.switch_chat(self._chat, self.session.conversation_key)
        self._chat = self.session.conversation_key


def _uses(turn) -> tuple[DocumentUse, ...]:
    """The documents a :class:`~glmdesk.documents.DocumentTurn` gave, each with where its
    sources were (their text's digest, not the text)."""
    return tuple(
        DocumentUse(
            path,
            tuple(
                SourceRef(s.number, s.page, s.line, s.ordinal, s.section, s.whole, passage_digest(s.passage))
                for s in turn.sources
                if s.path == path
            ),
        )
        for path in dict.fromkeys(s.path for s in turn.sources)
    )
