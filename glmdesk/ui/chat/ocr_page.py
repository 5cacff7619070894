"""The window's "OCR a page…" action: a page image, or one page of a PDF, sent to an
OCR model (GLM-OCR) with the model card's prompt; its Markdown answer appears in the chat
like any other answer (greedy: the engine forces it for an OCR model).

The button sits beside the attach button in the input box; it is enabled while a model
of an OCR family is loaded and reads images (:func:`glmdesk.chat.ocr.is_ocr_model`).
A PDF of several pages asks which page to read.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject, Signal, Slot
from PySide6.QtWidgets import QFileDialog, QInputDialog, QWidget

from glmdesk.chat.ocr import OCR_PROMPT, is_ocr_model, is_pdf, page_image, pdf_page_count
from glmdesk.core.errors import ErrorInfo, GlmdeskError
from glmdesk.ui.common.messages import error_sentence
from glmdesk.ui.session.background import Background

#: ``choose_file(parent) -> path or ""`` and ``choose_page(parent, name, count) -> page or 0``.
FileChooser = Callable[[QWidget], str]
PageChooser = Callable[[QWidget, str, int], int]


class OcrPageAction(QObject):
    """Binds the input box's "OCR a page…" button to the session.

    Signals:
        page_sent(bool): A rendered page went to the session (``True``) or could not go
            (``False``: an answer started meanwhile, or the model is not ready).

    Args:
        session: The window's :class:`~glmdesk.ui.session.chat_session.ChatSession`
            (its loader tells which model is loaded).
        input_box: The :class:`~glmdesk.ui.chat.input_box.InputBox` with ``ocr_button``.
        sidebar: Gives the system prompt and cache settings of the answer.
        notice: Shows a sentence for a file or page that cannot be read.
        parent: The window (dialogs open over it).
        choose_file: ``choose_file(parent) -> path`` (``""``: cancelled); a file dialog
            by default.
        choose_page: ``choose_page(parent, file name, page count) -> page`` from 1
            (``0``: cancelled); a number dialog by default.
    """

    page_sent = Signal(bool)

    def __init__(
        self,
        session,
        input_box,
        sidebar,
        notice,
        parent: QWidget,
        choose_file: FileChooser | None = None,
        choose_page: PageChooser | None = None,
    ) -> None:
        super().__init__(parent)
        self._session, self._box, self._sidebar, self._notice = session, input_box, sidebar, notice
        self._window = parent
        self._choose_file = choose_file or self._ask_file
        self._choose_page = choose_page or self._ask_page
        self._rendering, self._able = False, False
        self._background = Background("glmdesk-ocr-page", self)  # renders the page
        loader = session.loader
        loader.model_ready.connect(self._on_model_ready)
        loader.load_started.connect(self._on_load_started)
        input_box.ocr_requested.connect(self.run)
        if loader.model_info is not None:  # a model already in use
            self._on_model_ready(loader.model_info)

    def _ask_file(self, parent: QWidget) -> str:
        path, _ = QFileDialog.getOpenFileName(
            parent,
            self.tr("OCR a page"),
            "",
            self.tr("Pages and images (*.pdf *.png *.jpg *.jpeg *.webp *.gif)"),
        )
        return path

    def _ask_page(self, parent: QWidget, name: str, count: int) -> int:
        label = self.tr("Page of {name} to read (1 to {count}):").format(name=name, count=count)
        page, accepted = QInputDialog.getInt(parent, self.tr("OCR a page"), label, 1, 1, count)
        return page if accepted else 0

    @Slot(object)
    def _on_model_ready(self, info) -> None:
        caps = self._session.loader.capabilities
        able = caps is not None and caps.vision and is_ocr_model(info)
        self._able = able
        self._box.ocr_button.setEnabled(able and not self._rendering)
        self._box.ocr_button.setToolTip(
            self.tr("Read a page's text as Markdown: an image, or one page of a PDF")
            if able
            else self.tr("Needs an OCR model (GLM-OCR).")
        )

    @Slot(object)
    def _on_load_started(self, _settings) -> None:
        self._able = False
        self._box.ocr_button.setEnabled(False)

    @Slot()
    def run(self) -> bool:
        """Ask for a file (and a PDF's page) and read it (:meth:`read_page`); whether the
        reading started."""
        if not self._can_send():
            return False
        path = self._choose_file(self._window)
        if not path:
            return False
        try:
            page = 1
            if is_pdf(path):
                count = pdf_page_count(path)
                page = self._choose_page(self._window, Path(path).name, count) if count > 1 else 1
                if not page:
                    return False
        except GlmdeskError as exc:
            self._notice.show_error(error_sentence(exc.info))
            return False
        return self.read_page(path, page)

    def read_page(self, path: str | Path, page: int = 1) -> bool:
        """Send page ``page`` (from 1) of a PDF, or an image file, to the OCR model with
        the model card's prompt. The page is rendered on a thread of its own (a PDF page
        takes 0.3-2 s), then sent; a file or page that cannot be read is a sentence in
        the notice bar. Returns whether the reading started. (A scanned PDF page that the
        documents feature names can be read with this.)"""
        if not self._can_send() or self._rendering:
            return False
        self._rendering = True
        self._box.ocr_button.setEnabled(False)
        self._background.run(
            lambda _cancel: page_image(path, page), done=self._on_rendered, failed=self._on_render_failed
        )
        return True

    def _on_render_failed(self, error: ErrorInfo) -> None:
        """The file or page could not be read: said in the notice bar."""
        self._rendering = False
        self._box.ocr_button.setEnabled(self._able)
        if error.kind == "background_failed":  # not one of the reader's own errors
            self._notice.show_error(
                self.tr("The page could not be read: {detail}").format(detail=error.message)
            )
            return
        self._notice.show_error(error_sentence(error))

    def _on_rendered(self, attachment) -> None:
        """The page as an image attachment: sent to the OCR model unless an answer began."""
        self._rendering = False
        self._box.ocr_button.setEnabled(self._able)
        if not self._can_send():
            return
        sent = self._session.send(
            OCR_PROMPT, self._sidebar.system_prompt(), self._sidebar.cache_settings(), (attachment,)
        )
        self.page_sent.emit(sent)

    def _can_send(self) -> bool:
        if self._session.is_streaming() or not self._session.is_ready():
            self._notice.show_info(self.tr("Wait until the answer or the model is ready, then OCR the page."))
            return False
        return True
