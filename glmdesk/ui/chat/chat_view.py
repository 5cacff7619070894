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

from glmdesk.ui.chat.message_widget import MessageWidget
from glmdesk.ui.chat.text_safety import clean_text

REPAINT_INTERVAL_MS = 66
_BOTTOM_SLACK_PX = 8


class ChatView(QScrollArea):
    """Shows messages; one of them may be streaming.

    Signals:
        message_copied(str): A message's copy button was used.
    """

    message_copied = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("chat_view")
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self._container = QWidget()
        self._layout = QVBoxLayout(self._container)
        self._layout.setContentsMargins(12, 12, 12, 12)
        self._layout.setSpacing(10)
        self._layout.addStretch(1)
        self.setWidget(self._container)

        self._messages: list[MessageWidget] = []
        self._cards: list[QWidget] = []  # tool call cards between the messages
        self._streaming: MessageWidget | None = None
        self._stream_text = ""
        self._stream_reasoning = ""
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
        if card not in self._cards:
            return
        self._cards.remove(card)
        for message in self._messages:
            if card in message.attachments:
                message.detach(card)
                break
        else:
            self._layout.removeWidget(card)
        card.deleteLater()

    def cards(self) -> list[QWidget]:
        """The cards, oldest first."""
        return list(self._cards)

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
        """Append an empty assistant message that :meth:`append_text` fills; ``resume``
        (Continue): the last message, when it is an answer, is filled on from its text."""
        self.finish_stream()
        widgets = self.messages()
        if resume and widgets and widgets[-1].role == "assistant":
            widget = widgets[-1]
        else:
            widget = self.add_message("assistant", "")
        widget.set_streaming(True)
        self._streaming = widget
        self._stream_text = widget.text()
        self._stream_reasoning = widget.reasoning()
        self._dirty = False
        return widget

    def streaming_message(self) -> MessageWidget | None:
        """The message being streamed, if any."""
        return self._streaming

    def stream_text(self) -> str:
        """All text received for the streaming message (rendered or not yet)."""
        return self._stream_text

    def stream_reasoning(self) -> str:
        """All reasoning received for the streaming message (rendered or not yet)."""
        return self._stream_reasoning if self._streaming is not None else ""

    def append_text(self, text: str) -> None:
        """Add streamed text; it is shown at the next throttled repaint."""
        if self._streaming is None or not text:
            return
        self._stream_text += clean_text(text)
        self._dirty = True
        if not self._timer.isActive():
            self._timer.start()

    def append_reasoning(self, text: str) -> None:
        """Add streamed reasoning (a ``ReasoningPart``'s text), shown above the answer at
        the next throttled repaint."""
        if self._streaming is None or not text:
            return
        self._stream_reasoning += clean_text(text)
        self._dirty = True
        if not self._timer.isActive():
            self._timer.start()

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
        if self._stream_reasoning != self._streaming.reasoning():
            self._streaming.set_reasoning(self._stream_reasoning)
        if self._stream_text != self._streaming.text():
            self._streaming.set_text(self._stream_text)
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
