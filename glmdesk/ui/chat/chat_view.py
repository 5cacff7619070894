"""The conversation: a scrolling column of :class:`MessageWidget`, streaming with a repaint throttle.

Streamed text is buffered; a single-shot timer re-renders the streaming message
at most every :data:`REPAINT_INTERVAL_MS` (about 15 times a second), however
fast chunks arrive, so a fast model never starves the event loop (superqt
``qthrottled`` is the model for this). At 30 a second, re-rendering a 256-token
answer per token took ~5% of a core and slowed CPU decoding on two cores by 3-5%
(``benchmarks/ui_responsiveness.py``); at 15 the window keeps 0.98-0.99 of the
bare engine's tokens/s. The view follows the end while the user
is at the bottom and stays put when they have scrolled up.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer, Signal, Slot
from PySide6.QtWidgets import QFrame, QScrollArea, QVBoxLayout, QWidget

from glmdesk.core.parts import MessagePart, PartsSoFar, ReasoningPart, TextPart, reasoning_of, text_of
from glmdesk.ui.chat.centred_column import CentredColumn
from glmdesk.ui.chat.message_widget import MessageWidget
from glmdesk.ui.chat.text_safety import clean_parts, clean_text

REPAINT_INTERVAL_MS = 66
_BOTTOM_SLACK_PX = 8


class ChatView(QScrollArea):
    """Shows messages, in a column centred and at most ``centred_column.COLUMN_WIDTH``
    px wide; one of them may be streaming.

    Signals:
        message_copied(str): A message's copy button was used.
        call_added(MessageWidget, int, ToolCallPart): A message showed its ``int``-th
            tool call, which has no card yet (see :meth:`MessageWidget.show_parts`):
            the tool controller gives it one with :meth:`MessageWidget.set_call_card`.
    """

    message_copied = Signal(str)
    call_added = Signal(object, int, object)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("chat_view")
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        # One centred column of readable width (centred_column.TEXT_WIDTH of text).
        self._container = CentredColumn(top=16, bottom=16)
        self._container.setObjectName("chat_column")
        self._layout: QVBoxLayout = self._container.column()
        self._layout.setSpacing(14)
        self._layout.addStretch(1)
        self.setWidget(self._container)

        self._messages: list[MessageWidget] = []
        self._cards: list[QWidget] = []  # tool call cards between the messages
        self._streaming: MessageWidget | None = None
        self._stream = PartsSoFar()  # the streaming message's parts received so far
        self._dirty = False
        self.render_count = 0  # re-renders of the streaming message (tests, benchmark)
        self._follow = True
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(REPAINT_INTERVAL_MS)
        self._timer.timeout.connect(self._flush)
        bar = self.verticalScrollBar()
        bar.valueChanged.connect(self._on_scrolled)
        bar.rangeChanged.connect(self._on_range_changed)

    # Messages ---------------------------------------------------------------
    def messages(self) -> list[MessageWidget]:
        """The message widgets, oldest first."""
        return list(self._messages)

    def add_message(self, role: str, text: str = "") -> MessageWidget:
        """Append a finished message and return its widget."""
        widget = MessageWidget(role, clean_text(text))
        widget.copied.connect(self.message_copied)
        widget.call_added.connect(lambda index, part, w=widget: self.call_added.emit(w, index, part))
        self._layout.insertWidget(self._layout.count() - 1, widget)
        self._messages.append(widget)
        self._follow = True
        return widget

    def add_card(self, widget: QWidget, under: MessageWidget | None = None) -> QWidget:
        """Show a widget that is not a message (a tool call's card): inside the message
        ``under`` (the answer that made the call, so the messages keep the
        conversation's indices), else after the last message; :meth:`clear` removes it."""
        if under is not None:
            under.attach(widget)
        else:
            self._layout.insertWidget(self._layout.count() - 1, widget)
        self._cards.append(widget)
        self._follow = True
        return widget

    def remove_card(self, card: QWidget) -> None:
        """Remove a card shown by :meth:`add_card` (a live tool call that turned out to be
        text); a card already gone with its message is ignored."""
        if card not in self._cards and not any(card in m.attachments for m in self._messages):
            return
        if card in self._cards:
            self._cards.remove(card)
        for message in self._messages:
            if card in message.attachments:
                message.detach(card)
                break
        else:
            self._layout.removeWidget(card)
        card.deleteLater()

    def cards(self) -> list[QWidget]:
        """The cards (a message's tool-call cards too), oldest first."""
        inside = [w for m in self._messages for w in m.attachments if w in self._cards or w in m.call_cards]
        return inside + [card for card in self._cards if card not in inside]

    def remove_last(self) -> None:
        """Remove the newest message (regenerate)."""
        if not self._messages:
            return
        widget = self._messages.pop()
        self._cards = [card for card in self._cards if card not in widget.attachments]  # they go with it
        if widget is self._streaming:
            self._streaming = None
            self._timer.stop()
        self._layout.removeWidget(widget)
        widget.deleteLater()

    def clear(self) -> None:
        """Remove every message."""
        self._timer.stop()
        self._streaming = None
        while self._messages:
            self.remove_last()
        for card in self._cards:
            self._layout.removeWidget(card)
            card.deleteLater()
        self._cards.clear()
        self._follow = True

    # Streaming --------------------------------------------------------------
    def begin_stream(self, resume: bool = False) -> MessageWidget:
        """Append an empty assistant message that :meth:`append_parts` fills; ``resume``
        (Continue): the last message, when it is an answer, is filled on from its text."""
        self.finish_stream()
        widgets = self.messages()
        if resume and widgets and widgets[-1].role == "assistant":
            widget = widgets[-1]
        else:
            widget = self.add_message("assistant", "")
        widget.set_streaming(True)
        self._streaming = widget
        self._stream = PartsSoFar((ReasoningPart(widget.reasoning()), TextPart(widget.text())))
        self._dirty = False
        return widget

    def streaming_message(self) -> MessageWidget | None:
        """The message being streamed, if any."""
        return self._streaming

    def stream_parts(self) -> tuple[MessagePart, ...]:
        """All parts received for the streaming message (shown or not yet); ``()`` when
        none streams."""
        return self._stream.parts() if self._streaming is not None else ()

    def stream_text(self) -> str:
        """All text received for the streaming message (rendered or not yet)."""
        return text_of(self.stream_parts())

    def stream_reasoning(self) -> str:
        """All reasoning received for the streaming message (rendered or not yet)."""
        return reasoning_of(self.stream_parts())

    def append_parts(self, parts) -> None:
        """Add a chunk's parts (:class:`~glmdesk.core.parts.TextPart`, ``ReasoningPart``,
        ``ToolCallPart``) to the streaming message; they are shown, in their places, at
        the next throttled repaint (:meth:`MessageWidget.show_parts`)."""
        if self._streaming is None or not any(getattr(p, "text", True) for p in parts):
            return  # nothing new to draw (an empty piece, a character held back)
        self._stream.add(clean_parts(parts))
        self._dirty = True
        if not self._timer.isActive():
            self._timer.start()

    def append_text(self, text: str) -> None:
        """Add streamed answer text (a :class:`~glmdesk.core.parts.TextPart`)."""
        if text:
            self.append_parts((TextPart(text),))

    def finish_stream(self) -> MessageWidget | None:
        """Show all buffered text now and end the streaming state; returns the message."""
        widget = self._streaming
        if widget is None:
            return None
        self._timer.stop()
        self._flush()
        widget.set_streaming(False)
        self._streaming = None
        return widget

    @Slot()
    def _flush(self) -> None:
        if self._streaming is None or not self._dirty:
            return
        self._dirty = False
        self._streaming.show_parts(self._stream.parts())
        self.render_count += 1

    # Following the end ------------------------------------------------------
    def is_following(self) -> bool:
        """True when new text scrolls the view to the end."""
        return self._follow

    @Slot(int)
    def _on_scrolled(self, value: int) -> None:
        bar = self.verticalScrollBar()
        self._follow = value >= bar.maximum() - _BOTTOM_SLACK_PX

    @Slot(int, int)
    def _on_range_changed(self, _minimum: int, maximum: int) -> None:
        if self._follow:
            self.verticalScrollBar().setValue(maximum)

    def scroll_to_end(self) -> None:
        """Jump to the newest message and follow it again."""
        self._follow = True
        bar = self.verticalScrollBar()
        bar.setValue(bar.maximum())
