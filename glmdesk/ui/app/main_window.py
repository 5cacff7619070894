"""The main window: history pane, chat column (model chip, messages, input), the
hideable settings panel (sidebar and gauge), status bar.

It is the composition root of the window: it builds the
:class:`~glmdesk.ui.session.chat_session.ChatSession` (answers) with its
:class:`~glmdesk.ui.session.model_loader.ModelLoader` (loads), lays out the widgets, and builds
the objects that bind them, each given what it needs and connected to the session or
the loader itself: :class:`~glmdesk.ui.app.answer_view.AnswerView`,
:class:`~glmdesk.ui.app.load_view.LoadView`, :class:`~glmdesk.ui.app.sampling_binding.SamplingBinding`,
the tools, serve and engine-upgrade controllers, and with a history its access (reads,
queued writes, failures shown), panel, controller and the message versions. The window itself keeps the user's commands
(send, stop, regenerate, new chat...), the actions' enabled state and closing.
"""

from __future__ import annotations

import dataclasses
import functools

from PySide6.QtCore import QCoreApplication, Qt, Slot
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QMainWindow, QWidget

from glmdesk.chat.mcp.approvals import McpApprovals
from glmdesk.core.distrusted_engines import is_distrusted, trust_engine
from glmdesk.core.messages import ChatMessage
from glmdesk.core.settings import LoadSettings
from glmdesk.engine.forecast import read_budget
from glmdesk.engine.memory import MemoryProbe
from glmdesk.ui.app.answer_view import AnswerView
from glmdesk.ui.app.crash_notice import CrashNotice
from glmdesk.ui.app.keep_thinking_memory import KeepThinkingMemory
from glmdesk.ui.app.load_view import LoadView
from glmdesk.ui.app.notice_bar import NoticeBar
from glmdesk.ui.app.sampling_binding import SamplingBinding, initial_params
from glmdesk.ui.app.window_layout import FIRST_SIZES, SETTINGS_PANE, lay_out
from glmdesk.ui.app.window_menus import ProductMenus
from glmdesk.ui.chat.branch_actions import BranchActions
from glmdesk.ui.chat.input_box import InputBox
from glmdesk.ui.chat.ocr_page import OcrPageAction
from glmdesk.ui.common.screen_fit import fit_to_screen, install_dialog_fit
from glmdesk.ui.common.settings_store import SettingsStore
from glmdesk.ui.documents.document_choice import DocumentChoice
from glmdesk.ui.documents.document_library import DocumentLibrary
from glmdesk.ui.documents.document_sending import DocumentSending
from glmdesk.ui.history.history_access import HistoryAccess
from glmdesk.ui.history.history_controller import HistoryController
from glmdesk.ui.history.history_panel import HistoryPanel
from glmdesk.ui.models.engine_upgrade import EngineUpgrade
from glmdesk.ui.models.open_model_dialog import OpenModelDialog
from glmdesk.ui.session.answer_tools import AnswerTools
from glmdesk.ui.session.chat_session import ChatSession
from glmdesk.ui.session.serve_controller import ServeController
from glmdesk.ui.sidebar.sidebar import Sidebar
from glmdesk.ui.tools.mcp_choice import ChatMcp
from glmdesk.ui.tools.mcp_servers_window import McpServersWindow
from glmdesk.ui.tools.tool_controller import ToolController
from glmdesk.ui.tools.tool_memory import ToolsMemory


def _shutdown_on_destroy(session, *_args) -> None:
    session.shutdown()


class MainWindow(QMainWindow):
    """The glmdesk window.

    Args:
        store: Remembered settings (default: the user's QSettings).
        probe: Memory probe for the gauge.
        model: An already loaded transformers model to answer with (tests).
        backend: An already loaded :class:`~glmdesk.engine.backends.Backend` (tests);
            otherwise :meth:`start` loads the last model or the embedded default.
        factory, options: Passed to :class:`ChatSession` (tests).
        history: The chat :class:`~glmdesk.core.history.History` to show and save to
            (``None``: chatting works without saving).

    Attributes:
        session: The :class:`ChatSession`; ``loader`` its :class:`ModelLoader`. Their
            signals are the window's events (the window relays none).
        history_controller: The :class:`HistoryController` (``None`` without a history).
    """

    # Widgets :func:`~glmdesk.ui.app.window_layout.lay_out` makes (typed for the checker).
    input_box: InputBox
    sidebar: Sidebar
    notice: NoticeBar

    def __init__(
        self,
        store: SettingsStore | None = None,
        probe: MemoryProbe | None = None,
        model=None,
        backend=None,
        factory=None,
        options=None,
        history=None,
    ) -> None:
        super().__init__()
        self.setObjectName("main_window")
        self.setWindowTitle(self.tr("glmdesk"))
        self.store = store or SettingsStore()
        self.params_box = initial_params(self.store)
        if model is not None and backend is None:
            from glmdesk.engine.backends.transformers.backend import TransformersBackend

            backend = TransformersBackend(model)
        mcp = ChatMcp.from_files(McpApprovals())  # the MCP servers of mcp.json
        mcp.start_auto()  # those the user said start with glmdesk (agreed commands only)
        answer_tools = AnswerTools(mcp=mcp)  # the chats' tools and MCP servers
        self.session = ChatSession(self.params_box, backend, self, factory, options, answer_tools)
        self.loader = self.session.loader
        # A window destroyed without being closed (dropped by its owner) must still end
        # the thread first: a QThread destroyed while running aborts the process.
        self.destroyed.connect(functools.partial(_shutdown_on_destroy, self.session))
        self.documents = DocumentLibrary(parent=self)  # its thread indexes and prepares documents
        self.destroyed.connect(functools.partial(_shutdown_on_destroy, self.documents))
        self._build(probe)
        self.menus = ProductMenus(self)  # the actions and menus (File, Chat, View, Help)
        menus = self.menus
        self.open_action, self.new_chat_action, self.quit_action = (
            menus.open_action,
            menus.new_chat_action,
            menus.quit_action,
        )
        self.stop_action, self.regenerate_action = menus.stop_action, menus.regenerate_action
        self.continue_action, self.copy_action = menus.continue_action, menus.copy_action
        self.sidebar_action, self.file_menu = menus.sidebar_action, menus.file_menu
        self.settings_button.setDefaultAction(self.sidebar_action)
        self.settings_button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonIconOnly)
        self._bind(history)
        self._restore_geometry()
        install_dialog_fit()  # every dialog fits the screen it opens on
        app = QCoreApplication.instance()
        if app is not None:
            app.aboutToQuit.connect(self.shutdown)
        self._update_actions()

    def _bind(self, history) -> None:
        """Build the objects that bind the session and the loader to the widgets."""
        session, loader = self.session, self.loader
        self.sampling = SamplingBinding(self.params_box, self.store, self.sidebar, loader, self)
        self.load_view = LoadView(
            loader, self.store, self, self.status, self.gauge, self.input_box, self.sidebar, self.notice
        )
        self.answer_view = AnswerView(
            session,
            self.params_box,
            self.chat_view,
            self.input_box,
            self.status,
            self.gauge,
            self.notice,
            self,
        )
        for signal in (
            loader.load_started,
            loader.load_finished,
            loader.model_ready,
            loader.load_failed,
            session.answer_started,
            session.answer_finished,
            session.answer_ended,
            session.conversation_replaced,
            session.conversation_cleared,
        ):
            signal.connect(self._update_actions)
        self.serve = ServeController(session, parent=self)
        self.status.add_fact(self.serve.label)
        self.serve.serving_failed.connect(self.status.showMessage)
        self.menus.add_server_menu(self.serve)  # its own menu, not one slip above Quit
        self.engine_upgrade = EngineUpgrade(session, self)  # llama.cpp built and used when missing
        self.engine_upgrade.line_changed.connect(self.status.show_engine)
        self.engine_upgrade.line_changed.connect(self.chat_area.welcome.set_engine_line)
        self.document_sending = DocumentSending(session, self.documents, self.chat_view, self)
        self.document_sending.documents_failed.connect(self.notice.show_error)
        self.document_sending.send_failed.connect(self.notice.show_error)
        self.document_sending.notes_shown.connect(self.notice.show_info)
        self.chat_area.currentChanged.connect(self._on_chat_area_changed)
        self._on_chat_area_changed()
        self.tools = ToolController(session, self.chat_view, self.sidebar.tools_panel, self.notice, self)
        mcp, mcp_list = session.tools.mcp, self.tools.mcp_list
        self.mcp_servers: McpServersWindow | None = None  # Tools -> MCP servers...
        if mcp is not None and mcp_list is not None:
            self.mcp_servers = McpServersWindow(
                mcp,
                mcp_list,
                self.sidebar.tools_panel,
                self.input_box,
                self.chat_area.welcome,
                self.notice,
                self,
            )
            self.menus.add_tools_menu(self.mcp_servers.action)
        self.ocr_page = OcrPageAction(session, self.input_box, self.sidebar, self.notice, self)
        self.history_controller = None
        if history is not None:
            access = HistoryAccess(history, self.notice, parent=self)
            panel = HistoryPanel(history, access=access)
            self.set_history_panel(panel)
            self.history_controller = HistoryController(session, access, panel, self)
            self.tools_memory = ToolsMemory(
                self.history_controller, self.sidebar.tools_panel, session, self.history_controller
            )
            self.document_choice = DocumentChoice(self.documents, self.history_controller, self)
        self.keep_thinking = KeepThinkingMemory(  # the earlier-thinking choice, per chat
            self.sampling.sidebar.keep_thinking, loader, session, self.history_controller, self
        )
        # A run that died while its engine answered: told at start, its question marked.
        self.crash_notice = CrashNotice(
            self.notice, self.chat_view, self._regenerate_now, self.history_controller, self
        )
        self.branch_actions = BranchActions(
            session,
            self.chat_view,
            self.sidebar,
            self.input_box,
            self.status,
            self.send_message,
            self.history_controller,
            self,
        )

    # The session's state, for the history controller and tests -----------------------
    @property
    def state(self):
        """The open conversation (:class:`ChatState`)."""
        return self.session.state

    @property
    def model_info(self):
        """The model in use (``None`` before the first load)."""
        return self.loader.model_info

    @property
    def load_settings(self):
        """The settings of the model in use (``None`` for a model given at construction)."""
        return self.loader.load_settings

    @property
    def availability(self) -> dict:
        """``{option key: None or ErrorInfo}``: what Open model may offer."""
        return self.load_view.availability

    @property
    def worker(self):
        """The worker object (on its own thread)."""
        return self.session.worker

    @property
    def worker_thread(self):
        """The worker's thread."""
        return self.session.worker_thread

    # Building -------------------------------------------------------------------
    def _build(self, probe: MemoryProbe | None) -> None:
        widgets = self.widgets = lay_out(self, probe, self.documents, self.session, self.params_box.get())
        self.history_pane, self.chat_view, self.chat_area = (
            widgets.history_pane,
            widgets.chat_view,
            widgets.chat_area,
        )
        self.notice, self.documents_panel, self.input_box = (
            widgets.notice,
            widgets.documents_panel,
            widgets.input_box,
        )
        self.sidebar, self.gauge, self.settings_panel = widgets.sidebar, widgets.gauge, widgets.settings_panel
        self.model_chip, self.settings_button = widgets.model_chip, widgets.settings_button
        self.splitter, self.status = widgets.splitter, widgets.status
        self.model_chip.clicked.connect(self.open_model_dialog)
        self.loader.load_started.connect(self._on_load_started)
        self.loader.model_ready.connect(self.model_chip.show_model)
        self.loader.load_failed.connect(self._on_load_failed)
        self.sidebar.set_system_prompt(self.store.system_prompt())
        self.sidebar.set_cache_settings(self.store.cache_settings())
        self.sidebar.set_language(self.store.language())
        self.sidebar.language_changed.connect(self._on_language_changed)
        self.input_box.message_submitted.connect(self.send_message)
        self.input_box.stop_requested.connect(self.stop_answer)
        self.input_box.image_refused.connect(self.notice.show_error)
        self.input_box.documents_dropped.connect(self.documents.attach)
        self.sidebar.system_prompt_changed.connect(self._on_system_prompt_changed)
        self.sidebar.cache_settings_changed.connect(self._on_cache_settings_changed)
        self.status.load_indicator.cancel_requested.connect(self.loader.cancel_load)
        self.chat_view.message_copied.connect(self._on_message_copied)
        self.chat_area.welcome.prompt_chosen.connect(self._on_example_chosen)
        self.chat_area.welcome.open_model_requested.connect(self.open_model_dialog)

    @Slot(object)
    def _on_load_started(self, settings: LoadSettings) -> None:
        model = settings.model or self.tr("the embedded model")
        self.model_chip.show_loading(model.rstrip("/\\").rsplit("/", 1)[-1])

    @Slot(object, bool)
    def _on_load_failed(self, *_args) -> None:
        """The chip names the model still in use, or asks for one."""
        info = self.loader.model_info
        if info is not None:
            self.model_chip.show_model(info)
        else:
            self.model_chip.show_no_model()

    @Slot()
    def _on_chat_area_changed(self, *_args) -> None:
        """The welcome names the engine: the status bar does not say it again meanwhile."""
        self.status.set_engine_line_elsewhere(self.chat_area.showing_welcome())

    def _restore_geometry(self) -> None:
        geometry = self.store.bytes_value("geometry")
        if geometry is None or not self.restoreGeometry(geometry):
            self.resize(1200, 780)
        fit_to_screen(self)  # saved on a bigger screen, or the default on a small one
        splitter = self.store.bytes_value("splitter")
        if splitter is not None:
            self.splitter.restoreState(splitter)
        self.set_settings_shown(self.store.settings_panel_shown(), remember=False)  # as the user left it

    def set_history_panel(self, panel: QWidget) -> None:
        """Put the history panel in the left pane and show it."""
        layout = self.history_pane.layout()
        if layout is None:  # lay_out gives the pane its layout
            raise RuntimeError("the history pane has no layout")
        while layout.count():
            item = layout.takeAt(0)
            widget = item.widget() if item is not None else None
            if widget is not None:
                widget.setParent(None)
        layout.addWidget(panel)
        self.history_pane.show()

    # Starting and loading -------------------------------------------------------
    def start(self) -> None:
        """Tell about a run that died (:class:`CrashNotice`), check load options and load
        the last model (or the embedded default); on ``auto`` when its engine crashed
        since it was chosen, so that a crash does not repeat itself at every start."""
        self.crash_notice.check()
        settings = self.store.last_model()
        if is_distrusted(settings.engine):  # it crashed: not restarted on it by itself
            settings = dataclasses.replace(settings, engine="auto")
        self.loader.start(settings)

    def is_streaming(self) -> bool:
        """True while an answer is being written."""
        return self.session.is_streaming()

    def is_loading(self) -> bool:
        """True while a model loads."""
        return self.loader.is_loading()

    def load_model(self, settings: LoadSettings) -> None:
        """Load ``settings``; an answer being written is stopped first."""
        self.loader.load_model(settings)

    @Slot()
    def open_model_dialog(self) -> None:
        """Ask for a model and load it."""
        current = self.load_settings or self.store.last_model()
        dialog = OpenModelDialog(
            current,
            self.availability,
            self,
            self.store.recent_models(),
            fit_budget=lambda: read_budget(self.gauge.probe),  # the gauge's NVML handle
        )
        if dialog.exec() == OpenModelDialog.DialogCode.Accepted:
            settings = dialog.load_settings()
            if settings.engine != "auto":  # picked by name: auto may choose it again after a crash
                trust_engine(settings.engine)
            self.load_model(settings)

    # Sending and streaming ------------------------------------------------------------
    @Slot(str)
    def send_message(self, text: str) -> bool:
        """Send ``text`` as the user's next message; returns whether it was sent."""
        if self.session.is_streaming() or not text.strip():
            return False
        if not self.session.is_ready():
            self.notice.show_info(self.tr("Wait until the model has loaded, then send your message again."))
            return False
        attachments = self.input_box.attachments()
        return self.document_sending.send(
            text, self.sidebar.system_prompt(), self.sidebar.cache_settings(), attachments
        )

    @Slot(str)
    def _on_example_chosen(self, text: str) -> None:
        if not self.send_message(text):
            self.input_box.set_text(text)  # not ready yet: it waits in the input box

    @Slot()
    def stop_answer(self) -> None:
        """Stop the answer being written (it ends within one token; the text is kept)."""
        self.session.stop_answer()

    # Chat actions ------------------------------------------------------------------
    def show_conversation(self, messages: list[ChatMessage], key: object = None) -> None:
        """Replace the open conversation with ``messages`` (see :meth:`ChatSession.show_conversation`)."""
        self.session.show_conversation(messages, key)

    @Slot()
    def regenerate(self) -> None:
        """Write the last answer again."""
        self._regenerate_now()

    def _regenerate_now(self) -> bool:
        """Write the last answer again; whether it started."""
        return self.session.regenerate(self.sidebar.system_prompt(), self.sidebar.cache_settings())

    @Slot()
    def continue_answer(self) -> None:
        """Chat -> Continue: write on from where the length limit cut the last answer."""
        self.branch_actions.continue_at(len(self.session.state) - 1)

    @Slot()
    def new_chat(self) -> None:
        """Start an empty conversation (an answer being written is stopped and kept)."""
        self.session.new_chat()

    @Slot()
    def copy_last_answer(self) -> None:
        """Copy the newest answer's Markdown."""
        for message in reversed(self.state.messages):
            if message.role == "assistant":
                QGuiApplication.clipboard().setText(message.content)
                self.status.showMessage(self.tr("Answer copied."), 3000)
                return

    @Slot(str)
    def _on_message_copied(self, _text: str) -> None:
        self.status.showMessage(self.tr("Message copied."), 3000)

    @Slot()
    def toggle_sidebar(self) -> None:
        """Show or hide the settings panel (View > Show settings, Ctrl+Shift+S, the
        button at the top right of the chat); the choice is remembered."""
        self.set_settings_shown(self.settings_panel.isHidden())

    def set_settings_shown(self, shown: bool, remember: bool = True) -> None:
        """Show or hide the settings panel (sidebar and memory gauge); ``remember``: kept
        for the next start."""
        newly_shown = shown and self.settings_panel.isHidden()
        self.settings_panel.setVisible(shown)
        if newly_shown:
            self._make_room_for_settings()
        self.sidebar_action.setChecked(shown)
        if remember:
            self.store.save_settings_panel_shown(shown)

    def _make_room_for_settings(self) -> None:
        """Give the settings panel its width out of the chat column's, never taking the
        chat below its least width (the history pane gives way first, then the panel)."""
        history, chat, side_now = self.splitter.sizes()
        total = history + chat + side_now
        side_least = self.settings_panel.minimumSizeHint().width()
        chat_least = self.widgets.chat_pane.minimumSizeHint().width()
        side = max(side_least, min(FIRST_SIZES[SETTINGS_PANE], total - history - chat_least))
        if history + chat_least + side > total:  # narrow: the history pane gives way
            history = max(self.history_pane.minimumSizeHint().width(), total - chat_least - side)
        self.splitter.setSizes([history, max(chat_least, total - history - side), side])

    def settings_shown(self) -> bool:
        """Whether the settings panel is shown (not hidden by the user)."""
        return not self.settings_panel.isHidden()

    def _update_actions(self, *_args) -> None:
        ready = self.session.is_ready()
        idle = not self.session.is_streaming()
        self.regenerate_action.setEnabled(ready and idle and len(self.state) > 0)
        self.continue_action.setEnabled(ready and idle and self.session.can_continue())
        self.stop_action.setEnabled(not idle)
        self.copy_action.setEnabled(any(m.role == "assistant" for m in self.state.messages))

    # Settings ---------------------------------------------------------------------
    @Slot(str)
    def _on_system_prompt_changed(self, text: str) -> None:
        self.store.save_system_prompt(text)

    @Slot(object)
    def _on_cache_settings_changed(self, cache) -> None:
        self.store.save_cache_settings(cache)

    @Slot(str)
    def _on_language_changed(self, code: str) -> None:
        self.store.save_language(code)

    # Closing ----------------------------------------------------------------------
    def closeEvent(self, event) -> None:  # noqa: N802 (Qt override)
        """Stop the answer (keeping its text), cancel loading, end the worker thread."""
        self.shutdown()
        event.accept()

    @Slot()
    def shutdown(self) -> None:
        """Save window state, stop the answer (its text is kept), cancel loading, end the
        worker thread and release the model. Idempotent; also runs on ``aboutToQuit``."""
        if self.session.is_closed():
            return
        self.store.save_bytes("geometry", self.saveGeometry())
        self.store.save_bytes("splitter", self.splitter.saveState())
        self.store.sync()
        self.hide()
        self.gauge.stop()
        self.serve.stop()
        self.engine_upgrade.shutdown()
        self.documents.shutdown()
        if self.mcp_servers is not None:
            self.mcp_servers.close()
        self.session.shutdown()
