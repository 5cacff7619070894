"""An answer's sources, in a card under its text: each given passage's file, page and line as
a link; a click shows the passage, with a button that opens the file. A conversation
reopened from the history shows its answers' cards again, each passage read back from the
index, and says so when a file changed or is gone since."""

from __future__ import annotations

from PySide6.QtCore import QUrl, Signal, Slot
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from glmdesk.documents import DocumentTurn, Source
from glmdesk.documents.recall import RecalledSource
from glmdesk.ui.documents.document_words import note_sentence, recall_note, source_place


class PassageDialog(QDialog):
    """One source's passage, as given to the model, and a button to open its file."""

    def __init__(self, source: Source, state: str = "same", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("passage_dialog")
        self.setWindowTitle(source_place(source))
        self.source = source
        place = QLabel(
            f"[{source.number}] {source_place(source)}" + (f" — {source.section}" if source.section else "")
        )
        place.setWordWrap(True)
        passage = source.passage
        if not passage:  # an earlier answer's passage no longer in the index as given
            passage = self.tr(
                "This passage is no longer in the index as it was given: the file changed "
                "or was taken out of the library after this answer."
            )
        elif state == "gone":
            passage = self.tr("(The file is no longer on disk; this is the text that was given.)") + (
                "\n\n" + passage
            )
        self.text = QPlainTextEdit(passage)
        self.text.setReadOnly(True)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        self.open_button = QPushButton(self.tr("Open the file"))
        buttons.addButton(self.open_button, QDialogButtonBox.ButtonRole.ActionRole)
        self.open_button.clicked.connect(self.open_file)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(place)
        layout.addWidget(self.text, 1)
        layout.addWidget(buttons)
        self.resize(640, 420)

    @Slot()
    def open_file(self) -> bool:
        """Open the file in the system's viewer (a PDF at its page where the viewer
        follows ``#page=N``, RFC 8118); False when nothing could open it."""
        url = QUrl.fromLocalFile(self.source.path)
        if self.source.page is not None and self.source.path.lower().endswith(".pdf"):
            url.setFragment(f"page={self.source.page}")
        return QDesktopServices.openUrl(url)


class SourcesView(QWidget):
    """One answer's sources (hidden when it had none).

    Signals:
        passage_opened(object): a source's passage was shown (its :class:`Source`).
    """

    passage_opened = Signal(object)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("sources_view")
        self.label = QLabel()
        self.label.setObjectName("sources_label")
        self.label.setWordWrap(True)
        self.label.setOpenExternalLinks(False)
        self.label.linkActivated.connect(self._on_link)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 2, 8, 2)
        layout.addWidget(self.label)
        self.sources: tuple[Source, ...] = ()
        self.states: dict[int, str] = {}  # source number -> recall state (reopened answers)
        self.dialog: PassageDialog | None = None
        self.hide()

    def show_turn(self, turn: DocumentTurn | None) -> None:
        """Show what ``turn`` gave the model (``None`` or no sources: hide)."""
        self.sources = turn.sources if turn is not None else ()
        self.states = {}
        if turn is None or not self.sources:
            self.hide()
            return
        how = self.tr("whole") if turn.whole else self.tr("{n} passages").format(n=len(self.sources))
        links = " · ".join(
            f'<a href="#{s.number}">[{s.number}] {_escape(source_place(s))}</a>' for s in self.sources
        )
        counted = "" if turn.counted else self.tr(", estimated")
        head = self.tr("Sources ({how}, {tokens} tokens{counted}):").format(
            how=how, tokens=turn.tokens, counted=counted
        )
        notes = "".join(f"<br><i>{_escape(note_sentence(n))}</i>" for n in turn.notes)
        self.label.setText(f"{_escape(head)} {links}{notes}")
        self.show()

    def show_recalled(self, recalled: list[RecalledSource]) -> None:
        """Show an earlier answer's sources read back from the index (a reopened
        conversation): no token count (it is not kept), and each source that changed or
        whose file is gone since says so."""
        self.sources = tuple(r.source for r in recalled)
        self.states = {r.source.number: r.state for r in recalled}
        if not self.sources:
            self.hide()
            return
        whole = all(s.whole for s in self.sources)
        how = self.tr("whole") if whole else self.tr("{n} passages").format(n=len(self.sources))
        links = []
        for r in recalled:
            link = f'<a href="#{r.source.number}">[{r.source.number}] {_escape(source_place(r.source))}</a>'
            note = recall_note(r.state)
            links.append(f"{link} <i>({_escape(note)})</i>" if note else link)
        head = self.tr("Sources ({how}):").format(how=how)
        self.label.setText(f"{_escape(head)} {' · '.join(links)}")
        self.show()

    def clear(self) -> None:
        """Hide (a new chat, another conversation)."""
        self.show_turn(None)

    def open_passage(self, number: int) -> PassageDialog:
        """Show source ``number``'s passage in a dialog."""
        source = next(s for s in self.sources if s.number == number)
        self.dialog = PassageDialog(source, self.states.get(number, "same"), self)
        self.dialog.show()
        self.passage_opened.emit(source)
        return self.dialog

    @Slot(str)
    def _on_link(self, link: str) -> None:
        self.open_passage(int(link.lstrip("#")))


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
