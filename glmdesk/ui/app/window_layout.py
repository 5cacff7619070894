"""The main window's widgets and where they sit (no behaviour; the window wires them).

::

    +-----------+--------------------------------------+--------------+
    | history   |  [model chip]          [settings ≡]  |  settings    |
    | (by date) |                                      |  panel:      |
    |           |      chat column, centred,           |  sidebar     |
    |           |      at most COLUMN_WIDTH px         |  (sections)  |
    |           |                                      |  memory      |
    |           |      notice, documents, input        |  gauge       |
    +-----------+--------------------------------------+--------------+
    | status bar                                                      |

:func:`lay_out` builds the widgets, puts them in a splitter and returns them as one
typed :class:`WindowWidgets` that the window keeps: no widget is set on the window from
outside, and the type checker sees each one.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QHBoxLayout, QMainWindow, QSplitter, QToolButton, QVBoxLayout, QWidget

from glmdesk.engine.memory import MemoryProbe
from glmdesk.ui.app.model_chip import ModelChip
from glmdesk.ui.app.notice_bar import NoticeBar
from glmdesk.ui.app.status_bar import StatusBar
from glmdesk.ui.chat.centred_column import CentredColumn
from glmdesk.ui.chat.chat_area import ChatArea
from glmdesk.ui.chat.chat_view import ChatView
from glmdesk.ui.chat.input_box import InputBox
from glmdesk.ui.common.icons import ui_icon
from glmdesk.ui.documents.document_library import DocumentLibrary
from glmdesk.ui.documents.documents_panel import DocumentsPanel
from glmdesk.ui.sidebar.memory_gauge import MemoryGauge
from glmdesk.ui.sidebar.sidebar import Sidebar

#: The splitter's panes, left to right.
HISTORY_PANE, CHAT_PANE, SETTINGS_PANE = 0, 1, 2
#: The panes' first widths at 1280 px, in px (the chat column takes what is left).
FIRST_SIZES = (200, 780, 300)


@dataclass(frozen=True)
class WindowWidgets:
    """The main window's widgets, built once by :func:`lay_out`.

    Attributes:
        history_pane: Left pane; the history panel goes in it (``MainWindow.set_history_panel``).
        chat_pane: The middle pane: header, chat area and the input column.
        chat_header: The row at the top of the chat column (model chip, settings toggle).
        model_chip: The model in use; a click opens Open model.
        settings_button: Shows or hides the settings panel (View > Show settings).
        chat_view: The conversation.
        chat_area: The welcome while the chat is empty, else ``chat_view``.
        notice: Notes and errors above the input.
        documents_panel: Attach, library, budget, indexing.
        input_box: Where the user types, with attach and send.
        sidebar: Sampling, thinking, effort, system prompt, tools, KV cache, language.
        gauge: The memory gauge, under the sidebar.
        settings_panel: The right pane holding ``sidebar`` and ``gauge`` (hideable).
        splitter: The three panes.
        status: The status bar.
    """

    history_pane: QWidget
    chat_pane: QWidget
    chat_header: QWidget
    model_chip: ModelChip
    settings_button: QToolButton
    chat_view: ChatView
    chat_area: ChatArea
    notice: NoticeBar
    documents_panel: DocumentsPanel
    input_box: InputBox
    sidebar: Sidebar
    gauge: MemoryGauge
    settings_panel: QWidget
    splitter: QSplitter
    status: StatusBar


def _chat_header() -> tuple[QWidget, ModelChip, QToolButton]:
    """The model chip, centred, and the settings toggle at the right."""
    header = QWidget()
    header.setObjectName("chat_header")
    row = QHBoxLayout(header)
    row.setContentsMargins(8, 4, 8, 0)
    chip = ModelChip()
    settings_button = QToolButton()
    settings_button.setObjectName("settings_button")
    settings_button.setAutoRaise(True)
    settings_button.setIconSize(QSize(20, 20))
    settings_button.setIcon(ui_icon("settings"))
    left_balance = QWidget()  # as wide as the button, so the chip is centred in the column
    left_balance.setFixedWidth(settings_button.sizeHint().width())
    row.addWidget(left_balance)
    row.addStretch(1)
    row.addWidget(chip)
    row.addStretch(1)
    row.addWidget(settings_button)
    return header, chip, settings_button


def lay_out(
    window: QMainWindow, probe: MemoryProbe | None, documents: DocumentLibrary, session, params
) -> WindowWidgets:
    """Build the window's widgets, lay them out in ``window`` and return them.

    Args:
        window: The main window (its central widget and status bar are set).
        probe: Memory probe for the gauge.
        documents: The document library the documents panel shows.
        session: The :class:`~glmdesk.ui.session.chat_session.ChatSession` the chat area
            follows (the welcome while the conversation is empty).
        params: The sampling parameters the sidebar starts from.
    """
    history_pane = QWidget()  # the history panel goes here (set_history_panel)
    history_pane.setObjectName("history_pane")
    QVBoxLayout(history_pane).setContentsMargins(0, 0, 0, 0)
    history_pane.hide()

    chat_header, model_chip, settings_button = _chat_header()
    chat_view = ChatView()
    chat_area = ChatArea(chat_view, session)  # the welcome while the chat is empty
    notice = NoticeBar()
    documents_panel = DocumentsPanel(documents)
    input_box = InputBox()
    bottom = CentredColumn(bottom=4)  # the input under the messages, as wide as they are
    bottom.setObjectName("input_column")
    bottom.column().setSpacing(2)
    for widget in (notice, documents_panel, input_box):
        bottom.column().addWidget(widget)
    chat_column = QWidget()
    chat_column.setObjectName("chat_pane")
    chat_column.setBackgroundRole(QPalette.ColorRole.Base)  # the chat on the page colour, panes around it
    chat_column.setAutoFillBackground(True)
    # The chat's viewport stays opaque (in the same colour), so scrolling to follow an answer
    # moves the pixels drawn already instead of painting everything again.
    chat_view.viewport().setBackgroundRole(QPalette.ColorRole.Base)
    chat_view.viewport().setAutoFillBackground(True)
    column = QVBoxLayout(chat_column)
    column.setContentsMargins(0, 0, 0, 0)
    column.setSpacing(0)
    column.addWidget(chat_header)
    column.addWidget(chat_area, 1)
    column.addWidget(bottom)

    sidebar = Sidebar(params)
    gauge = MemoryGauge(probe)
    settings_panel = QWidget()
    settings_panel.setObjectName("settings_panel")
    side = QVBoxLayout(settings_panel)
    side.setContentsMargins(0, 0, 0, 0)
    side.addWidget(sidebar, 1)
    side.addWidget(gauge)

    splitter = QSplitter(Qt.Orientation.Horizontal)
    splitter.setObjectName("main_splitter")
    for pane in (history_pane, chat_column, settings_panel):
        splitter.addWidget(pane)
    splitter.setStretchFactor(CHAT_PANE, 1)
    splitter.setCollapsible(CHAT_PANE, False)
    splitter.setSizes(list(FIRST_SIZES))
    window.setCentralWidget(splitter)
    status = StatusBar()
    window.setStatusBar(status)
    return WindowWidgets(
        history_pane=history_pane,
        chat_pane=chat_column,
        chat_header=chat_header,
        model_chip=model_chip,
        settings_button=settings_button,
        chat_view=chat_view,
        chat_area=chat_area,
        notice=notice,
        documents_panel=documents_panel,
        input_box=input_box,
        sidebar=sidebar,
        gauge=gauge,
        settings_panel=settings_panel,
        splitter=splitter,
        status=status,
    )
