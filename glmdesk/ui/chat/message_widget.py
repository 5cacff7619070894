"""One chat message: who wrote it, its parts (thinking, Markdown, tool calls, a tool's
result), its statistics and a copy button.

The message binds to typed parts (:mod:`glmdesk.core.parts`; GPT4All's ``ChatItem`` with
Text/ToolCall/ToolResponse/Think parts is the shape): :meth:`MessageWidget.show_parts`
draws a reply being streamed (the parts so far) and a reopened one
(:func:`~glmdesk.core.messages.message_parts`) the same way.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QRectF, Qt, Signal, Slot
from PySide6.QtGui import QColor, QGuiApplication, QPainter, QPalette
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QSizePolicy, QToolButton, QVBoxLayout, QWidget

from glmdesk.core.parts import MessagePart, ReasoningPart, TextPart, ToolCallPart, ToolResponsePart
from glmdesk.ui.chat.image_thumbnails import image_label
from glmdesk.ui.chat.long_markdown import SegmentedMarkdownView
from glmdesk.ui.chat.markdown_view import is_dark
from glmdesk.ui.chat.reasoning_block import ReasoningBlock
from glmdesk.ui.common.theme import theme_colours

#: Share of the column's width left empty beside a user's bubble (it sits on the right).
USER_INSET_SHARE = 0.18
#: Corner radius of a bubble, in px.
BUBBLE_RADIUS = 14
#: The narrowest a user's bubble gets, in px.
MIN_BUBBLE_WIDTH = 120
#: A user's message longer than this (characters) is not measured: its bubble takes the column.
MEASURED_CHARS = 2000
#: Padding inside a message, in px (left and right together: ``centred_column.MESSAGE_PADDING``).
PADDING_X, PADDING_Y = 12, 8


class MessageWidget(QFrame):
    """One message in the chat view: the user's in a rounded bubble on the right, an
    answer as plain text under a small header, a tool's result on a quiet rounded panel.

    Args:
        role: ``user``, ``assistant`` or ``system``.
        text: Initial Markdown.
        parent: Parent widget.

    Signals:
        copied(str): The copy button put this message's text on the clipboard.
        call_added(int, ToolCallPart): :meth:`show_parts` met the message's ``int``-th
            tool call, which has no card yet; the tool controller answers with
            :meth:`set_call_card` (it makes cards and owns what they do).
    """

    copied = Signal(str)
    call_added = Signal(int, object)

    def __init__(self, role: str, text: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.role = role
        self.setObjectName(f"message_{role}")
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setAutoFillBackground(False)  # paintEvent draws the bubble
        self._inset = 0  # px left empty beside a user's bubble
        self._text = ""
        self._streaming = False
        self.attachments: list[QWidget] = []  # see attach()
        self._call_cards: dict[int, QWidget] = {}  # the k-th ToolCallPart's card
        self._calls_seen = 0  # ToolCallParts already announced by call_added
        self._images: tuple[bytes, ...] = ()  # a tool's result's images, shown
        header = self._header_row = self._header(role)
        self._natural: int | None = None  # a user's text's unwrapped width, in px (None: not measured)
        self.reasoning_block = ReasoningBlock()  # a reasoning model's thinking, above the answer
        self.reasoning_label = self.reasoning_block.body
        self.view = SegmentedMarkdownView()
        fold_row = self._fold_row()
        self.note_label = QLabel()
        self.note_label.setWordWrap(True)
        self.note_label.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        self.note_label.hide()

        layout = self._body = QVBoxLayout(self)
        layout.setContentsMargins(PADDING_X, PADDING_Y, PADDING_X, PADDING_Y)
        layout.setSpacing(2)
        layout.addLayout(header)
        layout.addWidget(self.reasoning_block)
        layout.addWidget(self.view)
        layout.addLayout(fold_row)
        layout.addWidget(self.stats_label)
        layout.addWidget(self.note_label)
        if role == "user":  # its inset follows its width: its contents' least width must not widen it
            self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self._apply_colours()
        self._show_text(text)

    def _header(self, role: str) -> QHBoxLayout:
        """Author, state and Copy in a row (the stats label too, shown under the text)."""
        self.author_label = QLabel(self._author(role))
        font = self.author_label.font()
        font.setBold(True)
        self.author_label.setFont(font)
        self.state_label = QLabel()
        self.state_label.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        self.stats_label = QLabel()
        self.stats_label.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        self.stats_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.stats_label.setWordWrap(True)
        self.stats_label.hide()
        self.copy_button = QToolButton()
        self.copy_button.setText(self.tr("Copy"))
        self.copy_button.setToolTip(self.tr("Copy this message as Markdown"))
        self.copy_button.setAutoRaise(True)
        self.copy_button.clicked.connect(self.copy_to_clipboard)

        header = QHBoxLayout()
        header.setContentsMargins(0, 0, 0, 0)
        header.addWidget(self.author_label)
        header.addWidget(self.state_label)
        header.addStretch(1)
        header.addWidget(self.copy_button)
        return header

    def _fold_row(self) -> QHBoxLayout:
        """The note of a long message folded, with its Show all button."""
        self.fold_label = QLabel()
        self.fold_label.setObjectName("fold_note")
        self.fold_label.setWordWrap(True)
        self.fold_label.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        self.show_all_button = QToolButton()
        self.show_all_button.setText(self.tr("Show all"))
        self.show_all_button.setAutoRaise(True)
        self.show_all_button.clicked.connect(self.view.reveal_all)
        fold_row = QHBoxLayout()
        fold_row.setContentsMargins(0, 0, 0, 0)
        fold_row.addWidget(self.fold_label, 1)
        fold_row.addWidget(self.show_all_button)
        self.fold_label.hide()
        self.show_all_button.hide()
        self.view.fold_changed.connect(self._on_fold_changed)
        return fold_row

    def _author(self, role: str) -> str:
        if role == "user":
            return self.tr("You")
        if role == "system":
            return self.tr("System")
        if role == "observation":
            return self.tr("Tool result")
        return self.tr("Assistant")

    def _apply_colours(self) -> None:
        palette = self.palette()
        colours = theme_colours("dark" if is_dark(QGuiApplication.palette()) else "light")
        colour = {"user": colours.user_bubble, "assistant": colours.assistant_bubble}.get(
            self.role, colours.alternate
        )
        palette.setColor(QPalette.ColorRole.Window, QColor(colour))
        self.setPalette(palette)
        self.update()

    def bubble_rect(self) -> QRectF:
        """Where the bubble is drawn, in the widget's px (empty for an answer, which has none)."""
        if self.role == "assistant":
            return QRectF()
        return QRectF(self.rect().adjusted(self._inset, 0, 0, 0)).adjusted(0.5, 0.5, -0.5, -0.5)

    def paintEvent(self, event) -> None:  # noqa: N802 (Qt override)
        rect = self.bubble_rect()
        if not rect.isEmpty():
            painter = QPainter(self)
            painter.setRenderHint(QPainter.RenderHint.Antialiasing)
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(self.palette().color(QPalette.ColorRole.Window))
            painter.drawRoundedRect(rect, BUBBLE_RADIUS, BUBBLE_RADIUS)
            painter.end()
        super().paintEvent(event)

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt override)
        self._place_bubble(event.size().width())
        super().resizeEvent(event)

    def _measure(self) -> int | None:
        """A user's short message's width unwrapped (text or header, whichever is wider),
        padding included, in px; ``None`` for any other message."""
        if self.role != "user" or len(self._text) > MEASURED_CHARS or self.attachments:
            return None
        metrics = self.view.fontMetrics()  # the lines as typed (a user's Markdown is mostly plain)
        text = max(metrics.horizontalAdvance(line) for line in self._text.split("\n")) + 16
        return max(text, self._header_row.sizeHint().width()) + 2 * PADDING_X

    def _place_bubble(self, width: int) -> None:
        """A user's bubble sits on the right: at most ``1 - USER_INSET_SHARE`` of the
        column, and no wider than its text."""
        inset = 0
        if self.role == "user":
            inset = int(width * USER_INSET_SHARE)
            if self._natural is not None:
                inset = max(inset, width - self._natural)
            inset = max(0, min(inset, width - MIN_BUBBLE_WIDTH))
        if inset != self._inset:
            self._inset = inset
            self._body.setContentsMargins(PADDING_X + inset, PADDING_Y, PADDING_X, PADDING_Y)
            self.update()

    def text(self) -> str:
        """The message's Markdown source (what Copy copies)."""
        return self._text

    def show_parts(self, parts: Sequence[MessagePart]) -> None:
        """Show the message's parts, each in its place, in order: reasoning in the
        :class:`~glmdesk.ui.chat.reasoning_block.ReasoningBlock` above the answer, text in
        the Markdown body, each tool call in the card area under it, a tool's result as
        the body with its images under it.

        Called with the parts so far at each repaint of a streamed answer (only what
        changed is drawn again) and once with a stored message's parts. A tool call
        without a card is announced by ``call_added``; a card already shown gets each
        newer part of its call through its ``show_part``.

        Args:
            parts: The message's parts (neighbouring pieces joined,
                :class:`~glmdesk.core.parts.PartsSoFar`).
        """
        reasoning = "".join(p.text for p in parts if isinstance(p, ReasoningPart))
        text = "".join(p.text for p in parts if isinstance(p, (TextPart, ToolResponsePart)))
        if reasoning != self.reasoning_block.text():
            self.reasoning_block.set_text(reasoning)
        if text != self._text:
            self._show_text(text)
        self._show_calls([p for p in parts if isinstance(p, ToolCallPart)])
        images = tuple(png for p in parts if isinstance(p, ToolResponsePart) for png in p.images)
        if images[: len(self._images)] == self._images:
            for png in images[len(self._images) :]:
                label = image_label(png)
                if label is not None:
                    self.attach(label)
            self._images = images

    def _show_calls(self, calls: list[ToolCallPart]) -> None:
        if len(calls) < self._calls_seen:  # a call released as text: its index is free again
            self._calls_seen = len(calls)
            self._call_cards = {k: c for k, c in self._call_cards.items() if k < len(calls)}
        for k, part in enumerate(calls):
            if k >= self._calls_seen:
                self._calls_seen = k + 1
                self.call_added.emit(k, part)
            elif k in self._call_cards:
                show = getattr(self._call_cards[k], "show_part", None)
                if show is not None:
                    show(part)

    def set_call_card(self, index: int, card: QWidget) -> QWidget:
        """Show ``card`` for the message's ``index``-th tool call, in the card area under
        the text (after the cards of earlier calls)."""
        self._call_cards[index] = card
        self.attach(card)
        if self.isVisible():  # now, not at the next turn of the event loop: it can be clicked
            card.show()
        return card

    @property
    def call_cards(self) -> list[QWidget]:
        """The tool-call cards shown, in the calls' order."""
        return [self._call_cards[k] for k in sorted(self._call_cards)]

    def _show_text(self, text: str) -> None:
        """Show ``text`` (Markdown) now: while streaming, only what is new is drawn;
        a finished message longer than ``long_markdown.FOLD_CHARS`` is folded, with
        "Show all". :meth:`text` stays verbatim either way."""
        self._text = text
        if self.role == "user":
            self._natural = self._measure()
            self._place_bubble(self.width())
        if self._streaming:
            self.view.set_markdown(text)
        else:
            self.view.fold(text)
        if self.attachments:
            self.view.setVisible(bool(text))

    def attach(self, widget: QWidget) -> QWidget:
        """Show ``widget`` under the text (a reopened tool call's card, a tool's image);
        a message with no text shows only what is attached."""
        self._body.insertWidget(self._body.indexOf(self.stats_label), widget)
        self.attachments.append(widget)
        self.view.setVisible(bool(self._text))
        if self.role == "user":  # a picture: the bubble takes the column
            self._natural = None
            self._place_bubble(self.width())
        return widget

    def detach(self, widget: QWidget) -> None:
        """Take ``widget`` (shown by :meth:`attach`) out of the message; the caller deletes it."""
        self._call_cards = {k: c for k, c in self._call_cards.items() if c is not widget}
        if widget in self.attachments:
            self.attachments.remove(widget)
            self._body.removeWidget(widget)
            widget.hide()
        self.view.setVisible(bool(self._text) or not self.attachments)

    def is_folded(self) -> bool:
        """True while only the beginning of a long message is drawn."""
        return self.view.is_folded()

    @Slot(int, int)
    def _on_fold_changed(self, shown: int, total: int) -> None:
        folded = shown < total
        if folded:
            self.fold_label.setText(
                self.tr(
                    "Showing the first {shown} of {total} characters; Copy and export keep all of it."
                ).format(shown=f"{shown:,}", total=f"{total:,}")
            )
        self.fold_label.setVisible(folded)
        self.show_all_button.setVisible(folded and not self.view.is_revealing())

    def set_streaming(self, streaming: bool) -> None:
        """Show or clear the "writing..." state next to the author."""
        self._streaming = streaming
        self.state_label.setText(self.tr("writing...") if streaming else "")

    def is_streaming(self) -> bool:
        """True while the answer is being written."""
        return self._streaming

    def reasoning(self) -> str:
        """The reasoning shown above the answer (``""`` when none)."""
        return self.reasoning_block.text()

    def set_stats(self, text: str) -> None:
        """Show statistics (TTFT, tokens/s, finish reason) under the message; empty hides them."""
        self.stats_label.setText(text)
        self.stats_label.setVisible(bool(text))

    def set_note(self, text: str) -> None:
        """Show a note under the message (an error sentence, dropped context); empty hides it."""
        self.note_label.setText(text)
        self.note_label.setVisible(bool(text))

    @Slot()
    def copy_to_clipboard(self) -> None:
        """Put the message's Markdown on the clipboard."""
        QGuiApplication.clipboard().setText(self._text)
        self.copied.emit(self._text)

    def changeEvent(self, event) -> None:  # noqa: N802 (Qt override)
        super().changeEvent(event)
        # Qt sends a widget ApplicationPaletteChange or, once the widget has a palette of
        # its own, PaletteChange: either way the bubble takes the new theme's colour
        # (setting the same palette again sends nothing, so this does not loop).
        if event.type() in (event.Type.ApplicationPaletteChange, event.Type.PaletteChange):
            self._apply_colours()
