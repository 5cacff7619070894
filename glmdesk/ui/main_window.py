"""The main window: history pane, chat, sidebar and gauge, status bar; talks to the worker.

Every worker signal is connected to a slot of this GUI-thread object (never to a
lambda, which PySide6 would run on the worker thread). Requests go out through
this window's own signals, queued to the worker's thread.
"""

from __future__ import annotations

import functools
import threading

from PySide6.QtCore import QCoreApplication, QEvent, Qt, Signal, Slot
from PySide6.QtGui import QAction, QGuiApplication, QKeySequence
from PySide6.QtWidgets import QMainWindow, QSplitter, QVBoxLayout, QWidget

from glmdesk.core.errors import ErrorInfo
from glmdesk.core.messages import ChatMessage
from glmdesk.core.settings import FAMILY_DEFAULTS, LoadSettings, ParamsBox, SamplingParams
from glmdesk.engine.memory import MIB, MemoryProbe
from glmdesk.ui.chat_view import ChatView
from glmdesk.ui.conversation import AnswerRecord, ChatState
from glmdesk.ui.input_box import InputBox
from glmdesk.ui.memory_gauge import MemoryGauge
from glmdesk.ui.messages import error_sentence, note_sentence
from glmdesk.ui.notice_bar import NoticeBar
from glmdesk.ui.open_model_dialog import OpenModelDialog
from glmdesk.ui.settings_store import SettingsStore
from glmdesk.ui.sidebar import Sidebar
from glmdesk.ui.status_bar import StatusBar
from glmdesk.ui.worker import Worker, start_thread, stop_thread


def family_defaults(family: str) -> SamplingParams:
    """The published demo defaults for a model family (``generic`` when unknown)."""
    for key in ("chatglm2", "chatglm3", "glm4"):
        if family.startswith(key):
            return FAMILY_DEFAULTS[key]
    return FAMILY_DEFAULTS["generic"]


def _stop_on_destroy(thread, events: list[threading.Event], *_args) -> None:
    if thread.isRunning():
        stop_thread(thread, *events)


class MainWindow(QMainWindow):
    """The glmdesk window.

    Args:
        store: Remembered settings (default: the user's QSettings).
        probe: Memory probe for the gauge.
        model: An already loaded model for the worker to use (tests); otherwise
            :meth:`start` loads the last model or the embedded default.

    Signals:
        load_requested(LoadSettings, threading.Event): To the worker.
        generation_requested(int, tuple, CacheSettings, threading.Event): To the worker.
        options_requested(), announce_requested(): To the worker.
        message_added(int, ChatMessage, AnswerRecord | None): A user message was sent, or an
            answer finished (once, partial answers included); the int is its index.
        last_answer_removed(): Regenerate removed the newest answer.
        conversation_cleared(): New chat.
        answer_started(int): Request ``id`` went to the worker.
        chunk_shown(int, GenerationChunk): A chunk of the current request was taken in.
        answer_finished(int, GenerationChunk): The current request ended.
        model_ready(ModelInfo): A model is loaded and in use.
        load_error_shown(str): A load failed; the sentence shown.
    """

    load_requested = Signal(object, object)
    generation_requested = Signal(int, object, object, object)
    options_requested = Signal()
    announce_requested = Signal()
    message_added = Signal(int, object, object)
    last_answer_removed = Signal()
    conversation_cleared = Signal()
    answer_started = Signal(int)
    chunk_shown = Signal(int, object)
    answer_finished = Signal(int, object)
    model_ready = Signal(object)
    load_error_shown = Signal(str)

    def __init__(
        self, store: SettingsStore | None = None, probe: MemoryProbe | None = None, model=None
    ) -> None:
        super().__init__()
        self.setObjectName("main_window")
        self.setWindowTitle(self.tr("glmdesk"))
        self.store = store or SettingsStore()
        self.state = ChatState()
        self.model_info = None
        self.load_settings: LoadSettings | None = None
        self.availability: dict[str, str | None] = {}
        self._request_id = 0
        self._current: int | None = None
        self._stop: threading.Event | None = None
        self._cancel: threading.Event | None = None
        self._loading: LoadSettings | None = None
        self._answer_parts: list[str] = []
        self._last_chunk = None
        self._offset = 0
        self._applying_defaults = False
        self._closed = False

        saved = self.store.sampling()
        self.params_box = ParamsBox(saved or FAMILY_DEFAULTS["generic"])
        self._build(probe)
        self.sidebar.set_system_prompt(self.store.system_prompt())
        self.sidebar.set_cache_settings(self.store.cache_settings())
        self.sidebar.set_language(self.store.language())
        self.sidebar.language_changed.connect(self._on_language_changed)
        self._build_actions()
        self._restore_geometry()

        self.worker = Worker(self.params_box, model)
        self.worker_thread = start_thread(self.worker)
        # A window destroyed without being closed (dropped by its owner) must still end
        # the thread first: a QThread destroyed while running aborts the process.
        self._events: list[threading.Event] = []
        self.destroyed.connect(functools.partial(_stop_on_destroy, self.worker_thread, self._events))
        self.load_requested.connect(self.worker.load)
        self.generation_requested.connect(self.worker.generate)
        self.options_requested.connect(self.worker.check_options)
        self.announce_requested.connect(self.worker.announce)
        self.worker.options_checked.connect(self._on_options_checked)
        self.worker.load_progressed.connect(self._on_load_progressed)
        self.worker.model_loaded.connect(self._on_model_loaded)
        self.worker.load_failed.connect(self._on_load_failed)
        self.worker.chunk_received.connect(self._on_chunk_received)
        self.worker.generation_finished.connect(self._on_generation_finished)
        self.worker.error_occurred.connect(self._on_error_occurred)
        self._has_initial_model = model is not None
        app = QCoreApplication.instance()
        if app is not None:
            app.aboutToQuit.connect(self.shutdown)
        self._update_actions()

    # Building -------------------------------------------------------------------
    def _build(self, probe: MemoryProbe | None) -> None:
        self.history_pane = QWidget()  # the history panel goes here (set_history_panel)
        self.history_pane.setObjectName("history_pane")
        QVBoxLayout(self.history_pane).setContentsMargins(0, 0, 0, 0)
        self.history_pane.hide()

        self.chat_view = ChatView()
        self.notice = NoticeBar()
        self.input_box = InputBox()
        chat_column = QWidget()
        column = QVBoxLayout(chat_column)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(0)
        column.addWidget(self.chat_view, 1)
        column.addWidget(self.notice)
        column.addWidget(self.input_box)

        self.sidebar = Sidebar(self.params_box.get())
        self.gauge = MemoryGauge(probe)
        side_column = QWidget()
        side = QVBoxLayout(side_column)
        side.setContentsMargins(0, 0, 0, 0)
        side.addWidget(self.sidebar, 1)
        side.addWidget(self.gauge)

        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.setObjectName("main_splitter")
        self.splitter.addWidget(self.history_pane)
        self.splitter.addWidget(chat_column)
        self.splitter.addWidget(side_column)
        self.splitter.setStretchFactor(1, 1)
        self.splitter.setCollapsible(1, False)
        self.splitter.setSizes([240, 760, 380])
        self.setCentralWidget(self.splitter)
        self.status = StatusBar()
        self.setStatusBar(self.status)

        self.input_box.message_submitted.connect(self.send_message)
        self.input_box.stop_requested.connect(self.stop_answer)
        self.sidebar.params_changed.connect(self._on_params_changed)
        self.sidebar.system_prompt_changed.connect(self._on_system_prompt_changed)
        self.sidebar.cache_settings_changed.connect(self._on_cache_settings_changed)
        self.status.load_indicator.cancel_requested.connect(self.cancel_load)
        self.chat_view.message_copied.connect(self._on_message_copied)

    def _build_actions(self) -> None:
        def action(text: str, shortcut, slot) -> QAction:
            act = QAction(text, self)
            act.setShortcut(QKeySequence(shortcut))
            act.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
            act.triggered.connect(slot)
            self.addAction(act)
            return act

        self.open_action = action(
            self.tr("&Open model..."), QKeySequence.StandardKey.Open, self.open_model_dialog
        )
        self.new_chat_action = action(self.tr("&New chat"), QKeySequence.StandardKey.New, self.new_chat)
        self.quit_action = action(self.tr("&Quit"), QKeySequence.StandardKey.Quit, self.close)
        self.stop_action = action(self.tr("&Stop answer"), Qt.Key.Key_Escape, self.stop_answer)
        self.regenerate_action = action(self.tr("&Regenerate last answer"), "Ctrl+R", self.regenerate)
        self.copy_action = action(self.tr("&Copy last answer"), "Ctrl+Shift+C", self.copy_last_answer)
        self.sidebar_action = action(self.tr("Show &settings"), "Ctrl+B", self._toggle_sidebar)
        self.sidebar_action.setCheckable(True)
        self.sidebar_action.setChecked(True)
        menu = self.menuBar().addMenu(self.tr("&File"))
        for act in (self.open_action, self.new_chat_action, self.quit_action):
            menu.addAction(act)
        chat = self.menuBar().addMenu(self.tr("&Chat"))
        for act in (self.stop_action, self.regenerate_action, self.copy_action):
            chat.addAction(act)
        view = self.menuBar().addMenu(self.tr("&View"))
        view.addAction(self.sidebar_action)

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
        self.options_requested.emit()
        if self._has_initial_model:
            self.announce_requested.emit()
        else:
            self.load_model(self.store.last_model())

    def is_streaming(self) -> bool:
        """True while an answer is being written."""
        return self._current is not None

    def is_loading(self) -> bool:
        """True while a model loads."""
        return self._loading is not None

    def load_model(self, settings: LoadSettings) -> None:
        """Load ``settings`` on the worker; an answer being written is stopped first."""
        if self._loading is not None:
            self.cancel_load()
        if self._current is not None:
            self.stop_answer()
        self._cancel = threading.Event()
        self._events[:] = [e for e in (self._stop, self._cancel) if e is not None]
        self._loading = settings
        self.status.load_indicator.start(settings.model or self.tr("the embedded model"))
        self._update_actions()
        self.load_requested.emit(settings, self._cancel)

    @Slot()
    def cancel_load(self) -> None:
        """Cancel the load in progress (the current model stays)."""
        if self._cancel is not None:
            self._cancel.set()

    @Slot()
    def open_model_dialog(self) -> None:
        """Ask for a model and load it."""
        dialog = OpenModelDialog(self.load_settings or self.store.last_model(), self.availability, self)
        if dialog.exec() == OpenModelDialog.DialogCode.Accepted:
            self.load_model(dialog.load_settings())

    @Slot(object)
    def _on_options_checked(self, availability: dict) -> None:
        self.availability = dict(availability)

    @Slot(object)
    def _on_load_progressed(self, progress) -> None:
        self.status.load_indicator.update_progress(progress.stage, progress.done, progress.total)

    @Slot(object, object)
    def _on_model_loaded(self, info, cache_availability: dict) -> None:
        settings = self._loading
        self._loading = None
        self._cancel = None
        self.status.load_indicator.finish()
        self.model_info = info
        if settings is not None:
            self.load_settings = settings
            self.store.save_last_model(settings)
        self.status.show_model(info)
        self.gauge.set_weights_bytes(int(info.footprint_mib * MIB))
        self.sidebar.set_cache_availability(
            {k: (None if v is None else error_sentence(v)) for k, v in cache_availability.items()}
        )
        defaults = family_defaults(info.family)
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

    @Slot(object)
    def _on_load_failed(self, error: ErrorInfo) -> None:
        failed = self._loading
        self._loading = None
        self._cancel = None
        self.status.load_indicator.finish()
        sentence = error_sentence(error)
        if self.model_info is not None:
            sentence = self.tr("{error} {model} stays in use.").format(
                error=sentence, model=self.model_info.name
            )
            if error.kind == "load_cancelled":
                self.notice.show_info(sentence)
            else:
                self.notice.show_error(sentence)
        elif failed is not None and failed.model is not None and not self._closed:
            sentence = self.tr("{error} The embedded model is loaded instead.").format(error=sentence)
            self.notice.show_error(sentence)
            self.load_model(LoadSettings())
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
        if self._current is not None or not text.strip():
            return False
        if self.model_info is None or self._loading is not None:
            self.notice.show_info(self.tr("Wait until the model has loaded, then send your message again."))
            return False
        message = ChatMessage("user", text)
        index = self.state.add(message)
        self.chat_view.add_message("user", text)
        self.chat_view.scroll_to_end()
        self.input_box.clear_text()
        self.message_added.emit(index, message, None)
        self._start_answer()
        return True

    def _start_answer(self) -> None:
        self.notice.dismiss()
        self._request_id += 1
        self._current = self._request_id
        self._stop = threading.Event()
        self._events[:] = [e for e in (self._stop, self._cancel) if e is not None]
        self._answer_parts = []
        self._last_chunk = None
        messages, self._offset = self.state.request(self.sidebar.system_prompt())
        self.chat_view.begin_stream()
        self.input_box.set_streaming(True)
        self._update_actions()
        self.answer_started.emit(self._current)
        self.generation_requested.emit(self._current, messages, self.sidebar.cache_settings(), self._stop)

    @Slot()
    def stop_answer(self) -> None:
        """Stop the answer being written (it ends within one token; the text is kept)."""
        if self._stop is not None and self._current is not None:
            self._stop.set()

    @Slot(int, object)
    def _on_chunk_received(self, request_id: int, chunk) -> None:
        if request_id != self._current:
            return  # a request the window has moved past
        self._last_chunk = chunk
        if chunk.text:
            self._answer_parts.append(chunk.text)
            self.chat_view.append_text(chunk.text)
        self.gauge.set_kv_bytes(chunk.cache.kv_bytes)
        self.status.show_context(chunk.prompt_tokens + chunk.n_generated)
        self.status.show_cache(chunk.cache)
        self.chunk_shown.emit(request_id, chunk)

    @Slot(int, object)
    def _on_generation_finished(self, request_id: int, chunk) -> None:
        if request_id != self._current:
            return
        if chunk.text:
            self._answer_parts.append(chunk.text)
            self.chat_view.append_text(chunk.text)
        self._finish_answer(chunk.finish_reason or "stop", chunk)

    def _finish_answer(self, reason: str, chunk) -> None:
        request_id = self._current
        self._current = None
        self._stop = None
        widget = self.chat_view.finish_stream()
        text = "".join(self._answer_parts)
        error = getattr(chunk, "error", None)
        record = AnswerRecord(
            finish_reason=reason,
            model=self.model_info.name if self.model_info else "",
            params=self.params_box.get(),
            ttft_s=getattr(chunk, "ttft_s", 0.0),
            tokens_per_s=getattr(chunk, "tokens_per_s", 0.0),
            n_tokens=getattr(chunk, "n_generated", 0),
            prompt_tokens=getattr(chunk, "prompt_tokens", 0),
            dropped_messages=tuple(
                i - self._offset for i in getattr(chunk, "dropped_messages", ()) if i >= self._offset
            ),
            error=error,
        )
        self.input_box.set_streaming(False)
        self.gauge.set_kv_bytes(0)
        if error is not None:
            self.notice.show_error(error_sentence(error))
        if widget is not None:
            if text:
                widget.set_stats(self._stats_text(record))
            else:
                self.chat_view.remove_last()  # nothing was written
                if reason == "cancelled":
                    self.status.showMessage(self.tr("Stopped before the first token."), 5000)
        if text:
            index = self.state.add(ChatMessage("assistant", text), record)
            self.message_added.emit(index, self.state.messages[index], record)
        self._mark_dropped(record.dropped_messages)
        if record.n_tokens:
            self.status.show_speed(record.ttft_s, record.tokens_per_s)
        self._update_actions()
        self.answer_finished.emit(request_id, chunk)

    def _stats_text(self, record: AnswerRecord) -> str:
        reasons = {
            "stop": "",
            "length": self.tr("max tokens reached"),
            "cancelled": self.tr("stopped"),
            "error": self.tr("failed"),
        }
        stats = self.tr("{tokens} tokens, {rate} tokens/s, first token after {ttft} s").format(
            tokens=record.n_tokens, rate=f"{record.tokens_per_s:.1f}", ttft=f"{record.ttft_s:.2f}"
        )
        reason = reasons.get(record.finish_reason, "")
        return self.tr("{stats} ({reason})").format(stats=stats, reason=reason) if reason else stats

    def _mark_dropped(self, dropped: tuple[int, ...]) -> None:
        widgets = self.chat_view.messages()
        for index, widget in enumerate(widgets):
            if index in dropped:
                widget.set_note(
                    self.tr(
                        "Left out of the model's context: the conversation is longer than the context window."
                    )
                )
        if dropped:
            self.status.showMessage(
                self.tr("{count} earlier messages were left out of the context.").format(count=len(dropped)),
                8000,
            )

    def _abandon_answer(self) -> None:
        """End the current answer here with the text received so far (cancelled)."""
        if self._current is None:
            return
        if self._stop is not None:
            self._stop.set()
        self._finish_answer("cancelled", self._last_chunk)

    # Chat actions ------------------------------------------------------------------
    def show_conversation(self, messages: list[ChatMessage]) -> None:
        """Replace the open conversation with ``messages`` (from the history).

        An answer being written is stopped first and kept in the conversation it
        belongs to (its ``message_added`` goes out before the switch). The next
        message continues the shown conversation.
        """
        self._abandon_answer()
        self.state.clear()
        self.chat_view.clear()
        self.notice.dismiss()
        for message in messages:
            if message.role == "system":
                continue
            record = AnswerRecord("stop") if message.role == "assistant" else None
            self.state.add(message, record)
            self.chat_view.add_message(message.role, message.content)
        self.chat_view.scroll_to_end()
        self._update_actions()

    @Slot()
    def regenerate(self) -> None:
        """Write the last answer again."""
        if self._current is not None or self.model_info is None or self._loading is not None:
            return
        if self.state.last_role() == "assistant":
            self.state.pop()
            self.chat_view.remove_last()
            self.last_answer_removed.emit()
        if self.state.last_role() == "user":
            self._start_answer()

    @Slot()
    def new_chat(self) -> None:
        """Start an empty conversation (an answer being written is stopped and kept)."""
        self._abandon_answer()
        self.state.clear()
        self.chat_view.clear()
        self.notice.dismiss()
        self.conversation_cleared.emit()
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
    def _toggle_sidebar(self) -> None:
        side = self.splitter.widget(2)
        side.setVisible(not side.isVisible())
        self.sidebar_action.setChecked(side.isVisible())

    def _update_actions(self) -> None:
        ready = self.model_info is not None and self._loading is None
        idle = self._current is None
        self.regenerate_action.setEnabled(ready and idle and len(self.state) > 0)
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
        if self._closed:
            return
        self._closed = True
        self.store.save_bytes("geometry", self.saveGeometry())
        self.store.save_bytes("splitter", self.splitter.saveState())
        self.store.sync()
        self.hide()
        self.gauge.stop()
        stop_thread(self.worker_thread, self._stop, self._cancel)
        # Deliver what the worker sent before it stopped (the final chunk of the answer).
        QCoreApplication.sendPostedEvents(self, QEvent.Type.MetaCall)
        self._abandon_answer()
        self.worker.release_model()
