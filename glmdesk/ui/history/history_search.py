"""The history panel's search: the box, its results in place of the list, the empty note.

A plain QObject on the GUI thread, part of the
:class:`~glmdesk.ui.history.history_panel.HistoryPanel` (which lays out its widgets).
Typing waits :data:`SEARCH_DELAY_MS` ms for the next key; Enter searches at once. The
search itself runs on the :class:`~glmdesk.ui.history.history_search_runner.SearchRunner`'s
thread, and only the newest search's hits are shown. An empty box shows the list again.
Its words keep the panel's translation context (``HistoryPanel``).
"""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication, QModelIndex, QObject, QTimer, Signal
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QLabel, QLineEdit, QListView, QStackedWidget

from glmdesk.core.history import History
from glmdesk.ui.chat.html_delegate import HtmlDelegate
from glmdesk.ui.history.history_models import ID_ROLE, MESSAGE_ROLE, SearchResultModel
from glmdesk.ui.history.history_search_runner import SearchRunner

#: Milliseconds the box waits for the next key before it searches.
SEARCH_DELAY_MS = 150


class HistorySearch(QObject):
    """Searches all conversations for the box's text and shows the hits in ``stack``.

    Args:
        history: The panel's database.
        stack: Where the list (``list_view``) and the results take turns; the results
            view is added to it.
        list_view: The list of conversations, shown when the box is empty.
        parent: The owning QObject (the panel).

    Attributes:
        box: The search box; ``results`` (a :class:`SearchResultModel`) shown in
        ``results_view``; ``no_results_label``: the note when nothing matches;
        ``runner``: the :class:`SearchRunner`.

    Signals:
        finished(int): A search the user ran is shown (its count; 0 for an empty box).
        hit_selected(int, int): A hit was picked (conversation id, message id).
    """

    finished = Signal(int)
    hit_selected = Signal(int, int)

    def __init__(
        self, history: History, stack: QStackedWidget, list_view: QListView, parent: QObject | None = None
    ) -> None:
        super().__init__(parent)
        self._stack, self._list_view = stack, list_view
        self.box = QLineEdit(
            placeholderText=QCoreApplication.translate("HistoryPanel", "Search all conversations"),
            clearButtonEnabled=True,
        )
        self.results = SearchResultModel(self)
        self.results_view = QListView(wordWrap=True)
        self.results_view.setModel(self.results)
        self.results_view.setItemDelegate(HtmlDelegate(self.results_view))
        stack.addWidget(self.results_view)
        self.no_results_label = QLabel()
        self.no_results_label.setWordWrap(True)
        self.no_results_label.setObjectName("no_results")
        self.no_results_label.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        self.no_results_label.hide()
        self.runner = SearchRunner(history, self)
        self.runner.hits_found.connect(self._on_search_done)
        self._announce = False
        self._timer = QTimer(self, singleShot=True, interval=SEARCH_DELAY_MS)
        self._timer.timeout.connect(self._run)
        self.box.textChanged.connect(lambda _text: self._timer.start())
        self.box.returnPressed.connect(self._run)
        self.results_view.selectionModel().currentChanged.connect(self._on_hit_changed)

    def search(self, text: str) -> None:
        """Show the results for ``text`` now (an empty text shows the list)."""
        self.box.blockSignals(True)
        self.box.setText(text)
        self.box.blockSignals(False)
        self._run()

    def refresh(self) -> None:
        """Search for the box's text again (a conversation went or came back); the newest
        request wins."""
        text = self.box.text().strip()
        if not text:
            self.runner.forget()
            self.results.set_hits([])
            return
        self.runner.start(text)

    def show_list(self) -> None:
        """Show the list of conversations in place of the results."""
        self.no_results_label.hide()
        self._stack.setCurrentWidget(self._list_view)

    def _run(self) -> None:
        self._timer.stop()
        if not self.box.text().strip():
            self.runner.forget()  # a search still running is not shown
            self.show_list()
            self.finished.emit(0)
            return
        self._announce = True
        self._stack.setCurrentWidget(self.results_view)
        self.refresh()

    def _on_search_done(self, hits: list) -> None:
        self.results.set_hits(hits)
        query = self.box.text().strip()
        self.no_results_label.setText(
            QCoreApplication.translate("HistoryPanel", "No messages match \u201c{query}\u201d.").format(
                query=query
            )
            if not hits and query
            else ""
        )
        self.no_results_label.setVisible(not hits and bool(query))
        if self._announce:
            self._announce = False
            self.finished.emit(self.results.rowCount())

    def _on_hit_changed(self, current: QModelIndex, _previous: QModelIndex) -> None:
        if current.isValid():
            self.hit_selected.emit(current.data(ID_ROLE), current.data(MESSAGE_ROLE))
