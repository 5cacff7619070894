"""Where the user types: Enter sends, Shift+Enter adds a line, Esc stops.

While an input method is composing (a Chinese IME shows preedit text), Enter
belongs to the input method and never sends: the composing state comes from
``QInputMethodEvent.preeditString()``. Empty or whitespace-only text is never sent.
The Send button turns into Stop while an answer streams.

Long lines (issue 19): Qt lays out one text block in time proportional to its
length (and worse when it wraps), so pasting 500 KB of one-line JSON froze the
window for 20.9 s. Text pasted, dropped or set with lines longer than
:data:`DISPLAY_LINE_CHARS` is shown cut into blocks of that many characters; the
cuts are display-only (each continuation block is marked :data:`SOFT_BREAK`), and
:meth:`PromptEdit.verbatim_text` and copying give back the exact text. Blocks are
laid out lazily by ``QPlainTextEdit``, so only what is on screen costs anything.
"""

from __future__ import annotations

from PySide6.QtCore import QBuffer, QIODevice, QMimeData, QRectF, QSize, Qt, Signal, Slot
from PySide6.QtGui import QImage, QInputMethodEvent, QKeyEvent, QPainter, QPalette, QPen
from PySide6.QtWidgets import (
    QFileDialog,
    QFrame,
    QHBoxLayout,
    QPlainTextEdit,
    QSizePolicy,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from glmdesk.core.errors import GlmdeskError
from glmdesk.core.images import ImageAttachment
from glmdesk.ui.chat.image_thumbnails import AttachmentTray
from glmdesk.ui.common.icons import ui_icon
from glmdesk.ui.common.messages import error_sentence

_ENTER_KEYS = (Qt.Key.Key_Return, Qt.Key.Key_Enter)
#: Longest line shown as one block, in characters; longer ones are cut for display only.
DISPLAY_LINE_CHARS = 1000
#: ``QTextBlock.userState()`` of a block that continues the previous line (no newline between).
SOFT_BREAK = 1


class PromptEdit(QPlainTextEdit):
    """The text field of :class:`InputBox`.

    Signals:
        submit_requested(): Enter was pressed (no Shift, no IME composition).
        stop_requested(): Esc was pressed.
        images_dropped(object): Images were pasted or dropped: a list of
            :class:`~glmdesk.core.images.ImageAttachment`, or of ``GlmdeskError`` for
            files that are not images (the box words them).
        documents_dropped(object): Other files or folders were pasted or dropped: their paths.
    """

    submit_requested = Signal()
    stop_requested = Signal()
    images_dropped = Signal(object)
    documents_dropped = Signal(object)
    ocr_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.composing = False
        self.setTabChangesFocus(True)

    # Verbatim text with display-only cuts --------------------------------------------
    def verbatim_text(self, start: int = 0, end: int | None = None) -> str:
        """The text between document positions ``start`` and ``end`` (default: all),
        with display-only cuts removed and real line breaks as ``\n``."""
        doc = self.document()
        if start == 0 and end is None:
            return self._whole_text()
        end = doc.characterCount() - 1 if end is None else end
        parts: list[str] = []
        block = doc.findBlock(start)
        while block.isValid() and block.position() <= end:
            lo = max(start, block.position()) - block.position()
            hi = min(end, block.position() + block.length() - 1) - block.position()
            if parts or block.position() >= start:
                if block.position() > start and block.position() <= end:
                    parts.append("" if block.userState() == SOFT_BREAK else "\n")
            parts.append(block.text()[lo:hi])
            block = block.next()
        return "".join(parts)

    def _whole_text(self) -> str:
        """All of :meth:`verbatim_text`, block by block without position arithmetic
        (sending 2 MB: 2,000 blocks; the general loop's 14,000 ``position`` calls and
        slicing took about twice as long here)."""
        block = self.document().begin()
        parts = [block.text()]
        block = block.next()
        while block.isValid():
            parts += ("" if block.userState() == SOFT_BREAK else "\n", block.text())
            block = block.next()
        return "".join(parts)

    def insert_verbatim(self, text: str) -> None:
        """Insert ``text`` at the cursor, lines longer than :data:`DISPLAY_LINE_CHARS` cut
        into soft-break blocks (one undo step)."""
        cursor = self.textCursor()
        cursor.beginEditBlock()
        cursor.removeSelectedText()
        for n, line in enumerate(text.split("\n")):
            if n:
                cursor.insertBlock()
                cursor.block().setUserState(-1)
            for i in range(0, max(len(line), 1), DISPLAY_LINE_CHARS):
                if i:
                    cursor.insertBlock()
                    cursor.block().setUserState(SOFT_BREAK)
                cursor.insertText(line[i : i + DISPLAY_LINE_CHARS])
        cursor.endEditBlock()
        self.setTextCursor(cursor)

    def canInsertFromMimeData(self, source: QMimeData) -> bool:  # noqa: N802 (Qt override)
        return (
            source.hasImage()
            or bool(_image_files(source) or _document_files(source))
            or super().canInsertFromMimeData(source)
        )

    def insertFromMimeData(self, source: QMimeData) -> None:  # noqa: N802 (Qt override)
        """Paste or drop: image files and pasted pictures become attachments; long lines
        go through :meth:`insert_verbatim`; other files (and folders) go to the documents."""
        documents = _document_files(source)
        if documents:
            self.documents_dropped.emit(documents)
        files = _image_files(source)
        if documents and not files:
            return
        if files or (source.hasImage() and not source.hasText()):
            self.images_dropped.emit(_read_images(files) if files else [_pasted_image(source)])
            return
        text = source.text() if source.hasText() else ""
        if any(len(line) > DISPLAY_LINE_CHARS for line in text.split("\n")):
            self.insert_verbatim(text.replace("\r\n", "\n"))
            return
        super().insertFromMimeData(source)

    def createMimeDataFromSelection(self) -> QMimeData:  # noqa: N802 (Qt override)
        """Copy and drag give the selected text verbatim (no display-only cuts)."""
        cursor = self.textCursor()
        data = QMimeData()
        data.setText(self.verbatim_text(cursor.selectionStart(), cursor.selectionEnd()))
        return data

    def inputMethodEvent(self, event: QInputMethodEvent) -> None:  # noqa: N802 (Qt override)
        self.composing = bool(event.preeditString())
        super().inputMethodEvent(event)

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802 (Qt override)
        if event.key() in _ENTER_KEYS:
            if self.composing:
                event.accept()  # Enter belongs to the input method: never send, never add a line
                return
            if event.modifiers() & Qt.KeyboardModifier.ShiftModifier:
                self.insertPlainText("\n")  # not U+2028, which QPlainTextEdit would insert
                return
            self.submit_requested.emit()  # Enter and Ctrl+Enter send
            return
        if event.key() == Qt.Key.Key_Escape:
            self.stop_requested.emit()
            return
        super().keyPressEvent(event)


#: Suffixes of files a drop attaches as images (the bytes decide: see ``ImageAttachment``).
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp", ".gif")


def _image_files(source: QMimeData) -> list[str]:
    """Local image files among dropped or pasted URLs."""
    if not source.hasUrls():
        return []
    paths = [url.toLocalFile() for url in source.urls() if url.isLocalFile()]
    return [p for p in paths if p.lower().endswith(IMAGE_SUFFIXES)]


def _document_files(source: QMimeData) -> list[str]:
    """Local files that are not images, and folders, among dropped or pasted URLs (documents)."""
    if not source.hasUrls():
        return []
    paths = [url.toLocalFile() for url in source.urls() if url.isLocalFile()]
    return [p for p in paths if p and not p.lower().endswith(IMAGE_SUFFIXES)]


def _read_images(paths: list[str]) -> list:
    """Each file as an attachment, or the error saying why it is not one."""
    out: list = []
    for path in paths:
        try:
            out.append(ImageAttachment.from_file(path))
        except GlmdeskError as exc:
            out.append(exc)
    return out


def _pasted_image(source: QMimeData):
    """A pasted picture (no file: a screenshot) as a PNG attachment."""
    image = QImage(source.imageData())
    buffer = QBuffer()
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    # PySide6 types the format as bytes, but takes (only) text here.
    image.save(buffer, "PNG")  # pyright: ignore[reportArgumentType, reportCallIssue]
    try:
        return ImageAttachment.from_bytes(bytes(buffer.data().data()), "")
    except GlmdeskError as exc:
        return exc


class Composer(QFrame):
    """The rounded field that holds the attach button, the text and Send, drawn in the
    theme's base colour with a mid-grey border (it follows a theme switch)."""

    RADIUS = 14

    def paintEvent(self, event) -> None:  # noqa: N802 (Qt override)
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        palette = self.palette()
        painter.setPen(QPen(palette.color(QPalette.ColorRole.Mid), 1))
        painter.setBrush(palette.color(QPalette.ColorRole.Base))
        painter.drawRoundedRect(QRectF(self.rect()).adjusted(0.5, 0.5, -0.5, -0.5), self.RADIUS, self.RADIUS)
        painter.end()


class InputBox(QWidget):
    """The message field with its attach and Send / Stop buttons (icons; their names are
    their text, for screen readers and tooltips).

    Images (a GLM vision model): the attach button, paste or drop add them to the
    tray above the field; :meth:`attachments` gives them to the window when it sends.

    Signals:
        message_submitted(str): The user asked to send this (non-blank) text.
        stop_requested(): The user pressed Stop or Esc.
        image_refused(str): A pasted, dropped or chosen file was not attached: the
            sentence saying why.
        documents_dropped(object): Files that are not images, or folders, were pasted or
            dropped: their paths (the window attaches them as documents).
        ocr_requested(): The user pressed "OCR a page…" (an OCR model is loaded:
            :class:`~glmdesk.ui.chat.ocr_page.OcrPageAction` asks for the page).
    """

    message_submitted = Signal(str)
    stop_requested = Signal()
    image_refused = Signal(str)
    documents_dropped = Signal(object)
    ocr_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("input_box")
        self._streaming = False
        self.editor = PromptEdit()
        self.editor.setPlaceholderText(
            self.tr("Type a message. Enter sends, Shift+Enter adds a line, Esc stops the answer.")
        )
        self.editor.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.editor.setFixedHeight(int(self.editor.fontMetrics().lineSpacing() * 3.6) + 12)
        self.editor.setFrameShape(QFrame.Shape.NoFrame)
        self.editor.viewport().setAutoFillBackground(False)
        self.send_button = QToolButton()
        self.send_button.setObjectName("send_button")
        self.send_button.setText(self.tr("Send"))
        self.send_button.setToolTip(self.tr("Send the message (Enter)"))
        self.attach_button = QToolButton()
        self.attach_button.setObjectName("attach_image")
        self.attach_button.setText(self.tr("Image…"))
        self.attach_button.setIcon(ui_icon("attach"))
        for button, side in ((self.send_button, 32), (self.attach_button, 22)):
            button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonIconOnly)
            button.setAutoRaise(True)
            button.setIconSize(QSize(side, side))
            button.setCursor(Qt.CursorShape.PointingHandCursor)
        self.send_button.setIcon(ui_icon("send"))
        self.ocr_button = QToolButton()  # enabled by OcrPageAction while an OCR model is loaded
        self.ocr_button.setObjectName("ocr_page")
        self.ocr_button.setText(self.tr("OCR a page…"))
        self.ocr_button.setEnabled(False)
        self.ocr_button.setToolTip(self.tr("Needs an OCR model (GLM-OCR)."))
        self.ocr_button.setAutoRaise(True)
        self.tray = AttachmentTray()
        self._vision = True
        self.set_vision(False, self.tr("Images need a GLM vision model (GLM-4.1V, GLM-4.6V)."))
        self.composer = Composer()
        self.composer.setObjectName("composer")
        row = QHBoxLayout(self.composer)
        row.setContentsMargins(6, 4, 6, 4)
        row.setSpacing(2)
        row.addWidget(self.attach_button, 0, Qt.AlignmentFlag.AlignBottom)
        row.addWidget(self.ocr_button, 0, Qt.AlignmentFlag.AlignBottom)
        row.addWidget(self.editor, 1)
        row.addWidget(self.send_button, 0, Qt.AlignmentFlag.AlignBottom)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 2, 0, 6)
        layout.setSpacing(0)
        layout.addWidget(self.tray)
        layout.addWidget(self.composer)
        self.attach_button.clicked.connect(self.choose_images)
        self.ocr_button.clicked.connect(self.ocr_requested)
        self.editor.images_dropped.connect(self.add_images)
        self.editor.documents_dropped.connect(self.documents_dropped)
        self.editor.submit_requested.connect(self.submit)
        self.editor.stop_requested.connect(self.stop_requested)
        self.send_button.clicked.connect(self._on_button)

    def text(self) -> str:
        """The current text (paragraph and line separators as ``\\n``)."""
        return self.editor.verbatim_text().replace("\u2028", "\n").replace("\u2029", "\n")

    def set_text(self, text: str) -> None:
        """Replace the text (long lines are cut for display only)."""
        self.editor.clear()
        self.editor.insert_verbatim(text)

    def clear_text(self) -> None:
        """Empty the field and the image tray (after the window accepted the message)."""
        self.editor.clear()
        self.tray.clear()

    def attachments(self) -> tuple[ImageAttachment, ...]:
        """The images to send with the message (empty for a model without vision)."""
        return self.tray.images() if self._vision else ()

    def set_vision(self, enabled: bool, reason: str = "", sizing=None) -> None:
        """Enable attaching images, or grey the button with ``reason`` as its tooltip
        (images already in the tray are kept but not sent); ``sizing`` (an
        :class:`~glmdesk.core.images.ImageSizing`) lets the tray say the size the model sees."""
        self._vision = enabled
        self.tray.sizing = sizing
        self.attach_button.setEnabled(enabled)
        self.attach_button.setToolTip(
            self.tr("Attach an image (or paste or drop one)") if enabled else reason
        )
        self.tray.setEnabled(enabled)

    @Slot()
    def choose_images(self) -> None:
        """Ask for image files and attach them."""
        paths, _ = QFileDialog.getOpenFileNames(
            self, self.tr("Attach images"), "", self.tr("Images (*.png *.jpg *.jpeg *.webp *.gif)")
        )
        self.add_images(_read_images(paths))

    @Slot(object)
    def add_images(self, images: list) -> None:
        """Attach ``images`` (attachments; ``GlmdeskError`` items are refused with
        :attr:`image_refused`). Ignored while images cannot be sent."""
        for item in images:
            if isinstance(item, GlmdeskError):
                self.image_refused.emit(error_sentence(item.info))
            elif self._vision:
                self.tray.add(item)
            else:
                self.image_refused.emit(self.attach_button.toolTip())

    def is_streaming(self) -> bool:
        """True while the button is Stop."""
        return self._streaming

    def set_streaming(self, streaming: bool) -> None:
        """Turn Send into Stop (``True``) or back."""
        self._streaming = streaming
        if streaming:
            self.send_button.setText(self.tr("Stop"))
            self.send_button.setIcon(ui_icon("stop"))
            self.send_button.setToolTip(self.tr("Stop the answer (Esc); the text so far is kept"))
        else:
            self.send_button.setText(self.tr("Send"))
            self.send_button.setIcon(ui_icon("send"))
            self.send_button.setToolTip(self.tr("Send the message (Enter)"))

    @Slot()
    def submit(self) -> None:
        """Emit :attr:`message_submitted` unless the text is blank or an answer streams."""
        if self._streaming:
            return
        text = self.text()
        if not text.strip():
            return
        self.message_submitted.emit(text)

    @Slot()
    def _on_button(self) -> None:
        if self._streaming:
            self.stop_requested.emit()
        else:
            self.submit()
