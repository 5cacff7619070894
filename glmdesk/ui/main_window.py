"""The main window: history pane, chat, sidebar and gauge, status bar.

It lays out widgets and wires them to its :class:`~glmdesk.ui.chat_session.ChatSession`,
which runs the answers and loads. Every session signal is connected to a slot of this
GUI-thread object (never to a lambda).
"""

from __future__ import annotations

import functools

from PySide6.QtCore import QCoreApplication, Signal, Slot
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QMainWindow, QWidget

from glmdesk.core.errors import ErrorInfo
from glmdesk.core.messages import ChatMessage
from glmdesk.core.parts import reasoning_of
from glmdesk.core.settings import LoadSettings, ParamsBox, SamplingParams
from glmdesk.engine.families import sampling_defaults
from glmdesk.engine.forecast import read_budget
from glmdesk.engine.memory import MIB, MemoryProbe
from glmdesk.ui.answer_notes import AnswerNotes
from glmdesk.ui.branch_actions import BranchActions
from glmdesk.ui.chat_session import ChatSession
from glmdesk.ui.engine_upgrade import EngineUpgrade
from glmdesk.ui.messages import error_sentence, note_sentence
from glmdesk.ui.open_model_dialog import OpenModelDialog
from glmdesk.ui.serve_controller import ServeController
from glmdesk.ui.settings_store import SettingsStore
from glmdesk.ui.tool_controller import ToolController, show_stored
from glmdesk.ui.window_layout import lay_out
from glmdesk.ui.window_menus import ProductMenus


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

    Signals (forwarded from the session, see :class:`ChatSession`):
        message_added(int, ChatMessage, AnswerRecord | None), last_answer_removed(),
        conversation_cleared(), answer_started(int), chunk_shown(int, GenerationChunk),
        answer_finished(int, GenerationChunk), model_ready(ModelInfo).
        load_error_shown(str): A load failed; the sentence shown.
    """

    message_added = Signal(int, object, object)
    last_answer_removed = Signal()
    conversation_cleared = Signal()
    answer_started = Signal(int)
    chunk_shown = Signal(int, object)
    answer_finished = Signal(int, object)
    model_ready = Signal(object)
    load_error_shown = Signal(str)

    def __init__(
        self,
        store: SettingsStore | None = None,
        probe: MemoryProbe | None = None,
        model=None,
        backend=None,
        factory=None,
        options=None,
    ) -> None:
        super().__init__()
        self.setObjectName("main_window")
        self.setWindowTitle(self.tr("glmdesk"))
        self.store = store or SettingsStore()
        self.availability: dict = {}
        self._applying_defaults = False

        saved = self.store.sampling()
        self.params_box = ParamsBox(saved or sampling_defaults("generic"))
        self._build(probe)
        self.sidebar.set_system_prompt(self.store.system_prompt())
        self.sidebar.set_cache_settings(self.store.cache_settings())
        self.sidebar.set_language(self.store.language())
        self.sidebar.language_changed.connect(self._on_language_changed)
        self.notes = AnswerNotes(self)
        self.menus = ProductMenus(self)  # the actions and menus (File, Chat, View, Help)
        self._restore_geometry()

        if model is not None and backend is None:
            from glmdesk.engine.backends.transformers import TransformersBackend

            backend = TransformersBackend(model)
        self.session = ChatSession(self.params_box, backend, self, factory, options)
        # A window destroyed without being closed (dropped by its owner) must still end
        # the thread first: a QThread destroyed while running aborts the process.
        self.destroyed.connect(functools.partial(_shutdown_on_destroy, self.session))
        self._connect_session()
        self.serve = ServeController(self.session, parent=self)
        self.statusBar().addPermanentWidget(self.serve.label)
        self.serve.serving_failed.connect(self.status.showMessage)
        self.file_menu.insertAction(self.quit_action, self.serve.action)
        self.engine_upgrade = EngineUpgrade(self.session, self)  # llama.cpp built and used when missing
        self.engine_upgrade.line_changed.connect(self.status.show_engine)
        self.engine_upgrade.line_changed.connect(self.chat_area.welcome.set_engine_line)
        self.tools = ToolController(self.session, self.chat_view, self.sidebar.tools_panel, self.notice, self)
        self.branch_actions = BranchActions(self)  # open_history gives it the history controller
        app = QCoreApplication.instance()
        if app is not None:
            app.aboutToQuit.connect(self.shutdown)
        self._update_actions()

    def _connect_session(self) -> None:
        session = self.session
        self.chat_area.watch(session)  # first: the welcome knows the model before model_ready goes out
        for name in (
            "message_added",
            "last_answer_removed",
            "conversation_cleared",
            "answer_started",
            "chunk_shown",
            "answer_finished",
        ):
            getattr(session, name).connect(getattr(self, name))
        session.options_checked.connect(self._on_options_checked)
        session.load_started.connect(self._on_load_started)
        session.load_progressed.connect(self._on_load_progressed)
        session.load_finished.connect(self._on_load_finished)
        session.model_ready.connect(self._on_model_ready)
        session.load_failed.connect(self._on_load_failed)
        session.message_added.connect(self._on_message_added)
        session.answer_started.connect(self._on_answer_started)
        session.chunk_shown.connect(self._on_chunk_shown)
        session.answer_finished.connect(self._on_answer_finished)
        session.conversation_cleared.connect(self._on_conversation_cleared)
        session.last_answer_removed.connect(self._on_last_answer_removed)
        session.conversation_replaced.connect(self._on_conversation_replaced)
        session.error_occurred.connect(self._on_error_occurred)
        session.conversation_rewound.connect(self._on_conversation_rewound)

    # The session's state, for the history controller and tests -----------------------
    @property
    def state(self):
        """The open conversation (:class:`ChatState`)."""
        return self.session.state

    @property
    def model_info(self):
        """The model in use (``None`` before the first load)."""
        return self.session.model_info

    @property
    def load_settings(self):
        """The settings of the model in use (``None`` for a model given at construction)."""
        return self.session.load_settings

    @property
    def worker(self):
        """The worker object (on its own thread)."""
        return self.session.worker

    @property
    def worker_thread(self):
        """The worker's thread."""
        return self.session.thread

    # Building -------------------------------------------------------------------
    def _build(self, probe: MemoryProbe | None) -> None:
        lay_out(self, probe)
        self.input_box.message_submitted.connect(self.send_message)
        self.input_box.stop_requested.connect(self.stop_answer)
        self.input_box.image_refused.connect(self.notice.show_error)
        self.sidebar.params_changed.connect(self._on_params_changed)
        self.sidebar.system_prompt_changed.connect(self._on_system_prompt_changed)
        self.sidebar.cache_settings_changed.connect(self._on_cache_settings_changed)
        self.status.load_indicator.cancel_requested.connect(self.cancel_load)
        self.chat_view.message_copied.connect(self._on_message_copied)
        self.chat_area.welcome.prompt_chosen.connect(self._on_example_chosen)
        self.chat_area.welcome.open_model_requested.connect(self.open_model_dialog)

    def _restore_geometry(self) -> None:
        geometry = self.store.bytes_value("geometry")
        if geometry is None or not self.restoreGeometry(geometry):
            self.resize(1200, 780)
        splitter = self.store.bytes_value("splitter")
        if splitter is not None:
            self.splitter.restoreState(splitter)

    def set_history_panel(self, panel: QWidget) -> None:
        """Put the history panel in the left pane and show it."""
        layout = self.history_pane.layout()
        while layout.count():
            item = layout.takeAt(0)
            if item.widget() is not None:
                item.widget().setParent(None)
        layout.addWidget(panel)
        self.history_pane.show()

    # Starting and loading -------------------------------------------------------
    def start(self) -> None:
        """Check load options and load the last model (or the embedded default)."""
        self.session.start(self.store.last_model())

    def is_streaming(self) -> bool:
        """True while an answer is being written."""
        return self.session.is_streaming()

    def is_loading(self) -> bool:
        """True while a model loads."""
        return self.session.is_loading()

    def load_model(self, settings: LoadSettings) -> None:
        """Load ``settings``; an answer being written is stopped first."""
        self.session.load_model(settings)

    @Slot()
    def cancel_load(self) -> None:
        """Cancel the load in progress (the current model stays)."""
        self.session.cancel_load()

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
            self.load_model(dialog.load_settings())

    @Slot(object)
    def _on_options_checked(self, availability: dict) -> None:
        self.availability = dict(availability)

    @Slot(object)
    def _on_load_started(self, settings: LoadSettings) -> None:
        self.status.load_indicator.start(settings.model or self.tr("the embedded model"))
        self._update_actions()

    @Slot(object)
    def _on_load_progressed(self, progress) -> None:
        self.status.load_indicator.update_progress(progress.stage, progress.done, progress.total)

    @Slot()
    def _on_load_finished(self) -> None:
        self.status.load_indicator.finish()
        self._update_actions()

    @Slot(object)
    def _on_model_ready(self, info) -> None:
        if self.session.loaded_settings is not None:
            self.store.save_last_model(self.session.loaded_settings)
        self.status.show_model(info)
        # On a GPU the gauge reads the card: weights kept in RAM (a MoE's experts) are not there.
        on_gpu = info.device.startswith("cuda")
        self.gauge.set_weights_bytes(int((info.footprint_mib - (info.offloaded_mib if on_gpu else 0)) * MIB))
        self.gauge.show_capabilities(self.session.capabilities, info.device)
        no_vision = ErrorInfo("vision_unavailable", "", {"model": info.name, "engine": info.engine})
        caps = self.session.capabilities
        sizing = caps.image_sizing if caps is not None else None  # the attach button, or why not
        self.input_box.set_vision(caps is not None and caps.vision, error_sentence(no_vision), sizing)
        if self.session.capabilities is not None:  # when sampling changes apply: per token or per answer
            self.sidebar.set_sampling_timing(self.session.capabilities.live_sampling)
        no_switch = self.tr("{model} has no thinking switch (GLM-4.5/4.6/4.7 have one).").format(
            model=info.name
        )
        self._applying_defaults = True  # the model's switch, not the user's choice: not saved
        try:
            self.sidebar.set_thinking_available(caps is not None and caps.thinking_switch, no_switch)
        finally:
            self._applying_defaults = False
        kv = self.session.capabilities.kv_strategies if self.session.capabilities else {"full": None}
        self.sidebar.set_cache_availability(
            {k: (None if v is None else error_sentence(v)) for k, v in kv.items()}
        )
        defaults = sampling_defaults(info.family)
        self.sidebar.set_defaults(defaults)
        if self.store.sampling() is None:
            self._applying_defaults = True
            try:
                self.sidebar.set_params(defaults)
            finally:
                self._applying_defaults = False
        if info.notes and self.notice.kind != "error":  # keep a load error visible (fallback model)
            self.notice.show_info(" ".join(note_sentence(note) for note in info.notes))
        self.setWindowTitle(self.tr("{model} - glmdesk").format(model=info.name))
        self._update_actions()
        self.model_ready.emit(info)

    @Slot(object, bool)
    def _on_load_failed(self, error: ErrorInfo, fallback: bool) -> None:
        sentence = error_sentence(error)
        if self.model_info is not None:
            sentence = self.tr("{error} {model} stays in use.").format(
                error=sentence, model=self.model_info.name
            )
            if error.kind == "load_cancelled":
                self.notice.show_info(sentence)
            else:
                self.notice.show_error(sentence)
        elif fallback:
            sentence = self.tr("{error} The embedded model is loaded instead.").format(error=sentence)
            self.notice.show_error(sentence)
        else:
            self.notice.show_error(sentence)
        self._update_actions()
        self.load_error_shown.emit(sentence)

    @Slot(object)
    def _on_error_occurred(self, error: ErrorInfo) -> None:
        self.notice.show_error(error_sentence(error))

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
        return self.session.send(
            text, self.sidebar.system_prompt(), self.sidebar.cache_settings(), attachments
        )

    @Slot(int, object, object)
    def _on_message_added(self, _index: int, message: ChatMessage, _record) -> None:
        if message.role == "user":
            show_stored(self.chat_view, message)  # with its images' thumbnails
            self.chat_view.scroll_to_end()
            self.input_box.clear_text()
        elif message.role == "observation":  # a tool's result: its own block, as when reopened
            show_stored(self.chat_view, message)
            self.chat_view.scroll_to_end()

    @Slot(str)
    def _on_example_chosen(self, text: str) -> None:
        if not self.send_message(text):
            self.input_box.set_text(text)  # not ready yet: it waits in the input box

    @Slot(int)
    def _on_answer_started(self, _request_id: int) -> None:
        self.status.reset_answer_figures()
        self.notice.dismiss()
        self.chat_view.begin_stream(resume=self.session.is_resuming())
        self.input_box.set_streaming(True)
        self._update_actions()

    @Slot()
    def stop_answer(self) -> None:
        """Stop the answer being written (it ends within one token; the text is kept)."""
        self.session.stop_answer()

    @Slot(int, object)
    def _on_chunk_shown(self, _request_id: int, chunk) -> None:
        self.chat_view.append_reasoning(reasoning_of(chunk.parts))
        self._note_thinking(chunk)
        if chunk.text:
            self.chat_view.append_text(chunk.text)
        self.gauge.set_kv_bytes(chunk.cache.kv_bytes + chunk.kept_kv_bytes)
        self.status.show_context(chunk.prompt_tokens + chunk.n_generated)
        self.status.show_cache(chunk.cache)

    @Slot(int, object)
    def _on_answer_finished(self, _request_id: int, chunk) -> None:
        if chunk is not None:
            self.chat_view.append_reasoning(reasoning_of(chunk.parts))
            self._note_thinking(chunk)
        if chunk is not None and chunk.text:
            self.chat_view.append_text(chunk.text)
        text, record = self.session.last_answer
        widget = self.chat_view.finish_stream()
        self.input_box.set_streaming(False)
        self.gauge.set_kv_bytes(self.session.kept_kv_bytes())  # kept for the next turns
        if record.error is not None:
            self.notice.show_error(error_sentence(record.error))
        elif chunk is not None and 0 < chunk.reply_limit < self.params_box.get().max_new_tokens:
            # The prompt left less room than max new tokens: say what the reply could use.
            self.notice.show_info(
                self.notes.reply_limit(chunk.reply_limit, self.params_box.get().max_new_tokens)
            )
        if widget is not None:
            if text:
                widget.set_stats(self.notes.stats_text(record))
            elif record.finish_reason != "tool_calls":  # a call's message holds its card
                self.chat_view.remove_last()  # nothing was written
                if record.finish_reason == "cancelled":
                    self.status.showMessage(self.tr("Stopped before the first token."), 5000)
        self.notes.mark_dropped(self.chat_view, self.status, record.dropped_messages)
        if record.n_tokens:
            self.status.show_speed(record.ttft_s, record.tokens_per_s)
        self._update_actions()

    def _note_thinking(self, chunk) -> None:
        """The answer after a reasoning block began: its Thinking block collapses, with
        how long the model thought and the tokens it spent."""
        widget = self.chat_view.streaming_message()
        if widget is None or widget.reasoning_block.is_done():
            return
        began = getattr(chunk, "answer_ttft_s", 0.0)  # 0 from a server that does not time it
        if began:
            widget.reasoning_block.set_done(began - chunk.ttft_s, chunk.reasoning_tokens)
        elif chunk.text and self.chat_view.stream_reasoning():
            widget.reasoning_block.set_done()

    # Chat actions ------------------------------------------------------------------
    def show_conversation(self, messages: list[ChatMessage], key: object = None) -> None:
        """Replace the open conversation with ``messages`` (see :meth:`ChatSession.show_conversation`)."""
        self.session.show_conversation(messages, key)

    @Slot(object)
    def _on_conversation_replaced(self, messages: list) -> None:
        self.chat_view.clear()
        self.notice.dismiss()
        for message in messages:
            show_stored(self.chat_view, message)
        self.chat_view.scroll_to_end()
        self._update_actions()

    @Slot()
    def regenerate(self) -> None:
        """Write the last answer again."""
        self.session.regenerate(self.sidebar.system_prompt(), self.sidebar.cache_settings())

    @Slot()
    def continue_answer(self) -> None:
        """Chat -> Continue: write on from where the length limit cut the last answer."""
        self.branch_actions.continue_at(len(self.session.state) - 1)

    @Slot()
    def _on_last_answer_removed(self) -> None:
        self.chat_view.remove_last()

    @Slot()
    def new_chat(self) -> None:
        """Start an empty conversation (an answer being written is stopped and kept)."""
        self.session.new_chat()

    @Slot(int)
    def _on_conversation_rewound(self, index: int) -> None:
        while len(self.chat_view.messages()) > index:
            self.chat_view.remove_last()

    @Slot()
    def _on_conversation_cleared(self) -> None:
        self.status.reset_answer_figures()
        self.chat_view.clear()
        self.notice.dismiss()
        self._update_actions()

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
        """Show or hide the sidebar (View -> Show settings)."""
        side = self.splitter.widget(2)
        side.setVisible(not side.isVisible())
        self.sidebar_action.setChecked(side.isVisible())

    def _update_actions(self) -> None:
        if not hasattr(self, "session"):
            return
        ready = self.session.is_ready()
        idle = not self.session.is_streaming()
        self.regenerate_action.setEnabled(ready and idle and len(self.state) > 0)
        self.continue_action.setEnabled(ready and idle and self.session.can_continue())
        self.stop_action.setEnabled(not idle)
        self.copy_action.setEnabled(any(m.role == "assistant" for m in self.state.messages))

    # Settings ---------------------------------------------------------------------
    @Slot(object)
    def _on_params_changed(self, params: SamplingParams) -> None:
        self.params_box.set(params)  # the decode loop reads it before the next token
        if not self._applying_defaults:
            self.store.save_sampling(params)

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
        self.session.shutdown()
