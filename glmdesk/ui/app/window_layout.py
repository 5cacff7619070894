"""The main window's widgets and where they sit (no behaviour; the window wires them).

Three panes in a splitter: the history pane (empty until the history panel is set),
the chat column (chat area with the welcome, notice bar, input box) and the side
column (sidebar, memory gauge); the status bar below.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QSplitter, QVBoxLayout, QWidget

from glmdesk.engine.memory import MemoryProbe
from glmdesk.ui.app.notice_bar import NoticeBar
from glmdesk.ui.app.status_bar import StatusBar
from glmdesk.ui.chat.chat_area import ChatArea
from glmdesk.ui.chat.chat_view import ChatView
from glmdesk.ui.chat.input_box import InputBox
from glmdesk.ui.documents.documents_panel import DocumentsPanel
from glmdesk.ui.sidebar.memory_gauge import MemoryGauge
from glmdesk.ui.sidebar.sidebar import Sidebar


def lay_out(window, probe: MemoryProbe | None) -> None:
    """Create the window's widgets as its attributes (``history_pane``, ``chat_view``,
    ``notice``, ``input_box``, ``chat_area``, ``documents_panel``,
    ``sidebar``, ``gauge``, ``splitter``, ``status``) and lay them out in ``window`` (a :class:`~glmdesk.ui.app.main_window.MainWindow`
    whose ``documents`` is its document library, whose ``params_box`` holds the sampling settings the sidebar starts from and whose
    ``session`` the chat area follows)."""
    window.history_pane = QWidget()  # the history panel goes here (set_history_panel)
    window.history_pane.setObjectName("history_pane")
    QVBoxLayout(window.history_pane).setContentsMargins(0, 0, 0, 0)
    window.history_pane.hide()

    window.chat_view = ChatView()
    window.notice = NoticeBar()
    window.input_box = InputBox()
    chat_column = QWidget()
    column = QVBoxLayout(chat_column)
    column.setContentsMargins(0, 0, 0, 0)
    column.setSpacing(0)
    window.chat_area = ChatArea(window.chat_view, window.session)  # the welcome while the chat is empty
    window.documents_panel = DocumentsPanel(window.documents)  # attach, library, budget, indexing
    column.addWidget(window.chat_area, 1)
    column.addWidget(window.notice)
    column.addWidget(window.documents_panel)
    column.addWidget(window.input_box)

    window.sidebar = Sidebar(window.params_box.get())
    window.gauge = MemoryGauge(probe)
    side_column = QWidget()
    side = QVBoxLayout(side_column)
    side.setContentsMargins(0, 0, 0, 0)
    side.addWidget(window.sidebar, 1)
    side.addWidget(window.gauge)

    window.splitter = QSplitter(Qt.Orientation.Horizontal)
    window.splitter.setObjectName("main_splitter")
    window.splitter.addWidget(window.history_pane)
    window.splitter.addWidget(chat_column)
    window.splitter.addWidget(side_column)
    window.splitter.setStretchFactor(1, 1)
    window.splitter.setCollapsible(1, False)
    window.splitter.setSizes([240, 760, 380])
    window.setCentralWidget(window.splitter)
    window.status = StatusBar()
    window.setStatusBar(window.status)
