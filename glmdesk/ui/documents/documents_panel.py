"""The documents row above the input: attach files, the library's folders (on or off for
this chat), the passage budget, the attached files as chips, indexing progress (files,
pages, time left) with Cancel, and the sentences of files that could not be read."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Signal, Slot
from PySide6.QtWidgets import (
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QMenu,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from glmdesk.ui.documents.document_library import DocumentLibrary
from glmdesk.ui.documents.document_words import problem_sentence, progress_line, scanned_sentence

#: The file dialog's filter (the suffixes :mod:`glmdesk.documents.indexing` reads).
_FILTER = "*.txt *.md *.markdown *.rst *.pdf *.docx *.html *.htm *.py *.c *.cpp *.h *.js *.ts *.rs *.go *.java *.json *.csv"


class DocumentsPanel(QWidget):
    """The documents row (see the module's text).

    Args:
        library: The window's :class:`DocumentLibrary`.

    Signals:
        problems_shown(str): the sentences of a run's problems (also shown in the row).
    """

    problems_shown = Signal(str)

    def __init__(self, library: DocumentLibrary, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("documents_panel")
        self.library = library
        self.attach_button = QToolButton()
        self.attach_button.setObjectName("attach_documents")
        self.attach_button.setText(self.tr("Documents…"))
        self.attach_button.setToolTip(
            self.tr("Attach documents (text, Markdown, code, PDF, DOCX, HTML), or paste or drop them")
        )
        self.library_button = QToolButton()
        self.library_button.setObjectName("document_library")
        self.library_button.setText(self.tr("Library"))
        self.library_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.library_menu = QMenu(self)
        self.library_button.setMenu(self.library_menu)
        self.budget = QSpinBox()
        self.budget.setObjectName("passage_budget")
        self.budget.setRange(0, 1_000_000)
        self.budget.setSingleStep(500)
        self.budget.setValue(library.budget)
        self.budget.setPrefix(self.tr("Passages up to "))
        self.budget.setSuffix(self.tr(" tokens"))
        self.budget.setToolTip(
            self.tr(
                "Documents that fit the context go in whole; otherwise the passages that best match "
                "the question, up to this many tokens. Search is by keywords (BM25): no local "
                "embedding model is installed."
            )
        )
        self.chips = QHBoxLayout()
        self.chips.setContentsMargins(0, 0, 0, 0)
        top = QHBoxLayout()
        top.setContentsMargins(6, 2, 6, 2)
        top.addWidget(self.attach_button)
        top.addWidget(self.library_button)
        top.addLayout(self.chips, 1)
        top.addWidget(self.budget)

        self.progress = QProgressBar()
        self.progress.setObjectName("indexing_progress")
        self.progress_label = QLabel()
        self.cancel_button = QPushButton(self.tr("Cancel"))
        self.progress_row = QWidget()
        row = QHBoxLayout(self.progress_row)
        row.setContentsMargins(6, 0, 6, 2)
        row.addWidget(self.progress, 1)
        row.addWidget(self.progress_label)
        row.addWidget(self.cancel_button)
        self.progress_row.hide()
        self.problems = QLabel()
        self.problems.setObjectName("document_problems")
        self.problems.setWordWrap(True)
        self.problems.hide()

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addLayout(top)
        layout.addWidget(self.progress_row)
        layout.addWidget(self.problems)

        self.attach_button.clicked.connect(self.choose_files)
        self.budget.valueChanged.connect(library.set_budget)
        self.cancel_button.clicked.connect(library.cancel)
        library.changed.connect(self._show_documents)
        library.progress_changed.connect(self._show_progress)
        library.indexing_finished.connect(self._show_report)
        self._show_documents()

    @Slot()
    def choose_files(self) -> None:
        """Ask for documents and attach them to this chat."""
        paths, _ = QFileDialog.getOpenFileNames(
            self,
            self.tr("Attach documents"),
            "",
            self.tr("Documents ({patterns});;All files (*)").format(patterns=_FILTER),
        )
        if paths:
            self.library.attach(paths)

    @Slot()
    def choose_folder(self) -> None:
        """Ask for a folder and add it to the library (on for this chat)."""
        folder = QFileDialog.getExistingDirectory(self, self.tr("Add a folder to the library"))
        if folder:
            self.library.add_folder(folder)

    @Slot()
    def _show_documents(self) -> None:
        while self.chips.count():
            item = self.chips.takeAt(0)
            widget = item.widget() if item is not None else None
            if widget is not None:
                widget.setParent(None)  # gone from the row now, not at the next event loop turn
                widget.deleteLater()
        for path in self.library.attached:
            row = self.library.rows.get(path)
            chip = QToolButton()
            chip.setObjectName("document_chip")
            pages = self.tr(", {n} pages").format(n=row.pages) if row is not None and row.pages > 1 else ""
            chip.setText(f"{Path(path).name}{pages} ×")
            chip.setToolTip(self.tr("{path}\nClick to take it off this chat.").format(path=path))
            chip.clicked.connect(lambda _=False, p=path: self.library.detach(p))
            self.chips.addWidget(chip)
        for folder, on in self.library.folders.items():
            if on:
                chip = QToolButton()
                chip.setObjectName("folder_chip")
                chip.setText(self.tr("{name}/ ×").format(name=Path(folder).name))
                chip.setToolTip(
                    self.tr("{path}\nClick to turn this library folder off for this chat.").format(
                        path=folder
                    )
                )
                chip.clicked.connect(lambda _=False, f=folder: self.library.set_folder_on(f, False))
                self.chips.addWidget(chip)
        self.chips.addStretch(1)
        self._fill_library_menu()

    def _fill_library_menu(self) -> None:
        menu = self.library_menu
        menu.clear()
        for folder, on in self.library.folders.items():
            action = menu.addAction(folder)
            action.setCheckable(True)
            action.setChecked(on)
            action.toggled.connect(lambda checked, f=folder: self.library.set_folder_on(f, checked))
        if self.library.folders:
            menu.addSeparator()
        menu.addAction(self.tr("Add folder…"), self.choose_folder)
        refresh = menu.addAction(self.tr("Index the library again"), self.library.refresh_folders)
        refresh.setEnabled(bool(self.library.folders))
        if self.library.folders:
            remove = menu.addMenu(self.tr("Remove from the library"))
            for folder in self.library.folders:
                remove.addAction(folder, lambda f=folder: self.library.remove_folder(f))

    @Slot(object)
    def _show_progress(self, progress) -> None:
        self.progress_row.show()
        self.progress.setRange(0, max(progress.files_total, 1))
        self.progress.setValue(progress.files_done)
        self.progress_label.setText(progress_line(progress))

    @Slot(object)
    def _show_report(self, report) -> None:
        self.progress_row.hide()
        sentences = [problem_sentence(p) for p in report.problems]
        sentences += [scanned_sentence(row) for row in report.indexed if row.scanned_pages]
        if report.cancelled:
            sentences.append(self.tr("Indexing was cancelled; what was indexed before is kept."))
        self.problems.setText("\n".join(sentences))
        self.problems.setVisible(bool(sentences))
        if sentences:
            self.problems_shown.emit("\n".join(sentences))
