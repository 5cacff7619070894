"""Sampling, system prompt and KV-cache controls; each says when its change applies.

Sampling controls build a new frozen :class:`SamplingParams` on every change and
emit it; the window swaps it into the engine's :class:`ParamsBox`, so a slider
moved mid-answer applies from the next token. The system prompt and the KV-cache
strategy apply from the next message; model and quantization on reload (Open model).
A value the engine would refuse (repetition penalty below 1.0, a seed out of range)
is refused here with the reason, and the previous value stays in force.
"""

from __future__ import annotations

from dataclasses import replace

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtGui import QStandardItemModel
from PySide6.QtWidgets import (
    QComboBox,
    QFormLayout,
    QFrame,
    QGroupBox,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from glmdesk.core.sampling_fields import live_fields
from glmdesk.core.settings import CACHE_STRATEGIES, CacheSettings, SamplingParams
from glmdesk.ui.common.i18n import LANGUAGES, SYSTEM_LANGUAGE
from glmdesk.ui.sidebar.effort_choice import EffortChoice
from glmdesk.ui.sidebar.keep_thinking_choice import KeepThinkingChoice
from glmdesk.ui.sidebar.sampling_controls import SamplingControl
from glmdesk.ui.sidebar.sidebar_sections import fold_sidebar
from glmdesk.ui.sidebar.slider_spin import caption
from glmdesk.ui.sidebar.thinking_switch import ThinkingSwitch
from glmdesk.ui.tools.tools_panel import ToolsPanel


class Sidebar(QScrollArea):
    """The settings pane on the right of the chat.

    Args:
        params: The sampling parameters shown first (default ``SamplingParams()``). Their
            type's ``TABLE`` gives the sampling controls, one per row
            (:attr:`sampling_controls`, each also this sidebar's attribute of the field's
            name: ``sidebar.top_p``).
        parent: The parent widget.

    Signals:
        params_changed(SamplingParams): New valid sampling parameters (apply from the next token).
        system_prompt_changed(str): The system prompt changed (applies from the next message).
        cache_settings_changed(CacheSettings): New KV-cache settings (from the next message).
        setting_refused(str): A value was refused; the argument is the reason shown.
    """

    params_changed = Signal(object)
    system_prompt_changed = Signal(str)
    cache_settings_changed = Signal(object)
    setting_refused = Signal(str)
    language_changed = Signal(str)

    def __init__(self, params: SamplingParams | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("sidebar")
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self._params = params or SamplingParams()
        self._cache = CacheSettings()
        self._defaults = type(self._params)()
        self._updating = False
        self._no_cache_choice: str | None = None  # why no KV-cache strategy can be chosen here

        body = QWidget()
        column = QVBoxLayout(body)
        column.setContentsMargins(8, 8, 8, 8)
        column.setSpacing(2)  # section headers sit close: every section fits at 1024x700
        column.addWidget(self._build_sampling())
        column.addWidget(self._build_system_prompt())
        self.tools_panel = ToolsPanel()
        column.addWidget(self.tools_panel)
        column.addWidget(self._build_cache())
        column.addWidget(self._build_model_note())
        column.addWidget(self._build_language())
        column.addStretch(1)
        self.setWidget(body)
        scrollbar = self.verticalScrollBar().sizeHint().width()
        self.setMinimumWidth(body.minimumSizeHint().width() + scrollbar + 2)
        self.sections = fold_sidebar(self)  # collapsible sections, less used rows under Advanced
        self.set_params(self._params, emit=False)
        self.set_cache_availability({"full": None})

    # Building ---------------------------------------------------------------
    def _build_sampling(self) -> QGroupBox:
        box = QGroupBox(self.tr("Sampling"))
        form = QFormLayout(box)
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        # One control per row of the params type's table, also this sidebar's attribute
        # of the field's name (``self.top_p``).
        self.sampling_controls = {row.name: SamplingControl(row) for row in self._params.TABLE}
        for name, control in self.sampling_controls.items():
            if hasattr(self, name):
                raise ValueError(f"the sampling field {name!r} would hide the sidebar's own {name!r}")
            setattr(self, name, control.widget)
        self.reset_button = QPushButton(self.tr("Model defaults"))
        self.reset_button.setToolTip(self.tr("Use the model family's published demo settings"))
        self.refused_label = QLabel()
        self.refused_label.setWordWrap(True)
        self.refused_label.setObjectName("refused_label")
        self.refused_label.setStyleSheet("color: #d9534f;")
        self.refused_label.hide()

        for control in self.sampling_controls.values():
            form.addRow(control.label, control.widget)
        self.thinking = ThinkingSwitch()
        self.thinking.toggled_value.connect(self._on_thinking_toggled)
        form.addRow(self.thinking)
        self.effort = EffortChoice()
        self.effort.changed.connect(self._on_thinking_toggled)
        form.addRow(self.effort)
        self.keep_thinking = KeepThinkingChoice()  # per chat: KeepThinkingMemory
        self.keep_thinking.changed.connect(self._on_thinking_toggled)
        form.addRow(self.keep_thinking)
        form.addRow(self.refused_label)
        self.sampling_timing = caption("")
        self.sampling_timing.setObjectName("sampling_timing")
        form.addRow(self.sampling_timing)
        self.set_sampling_timing(live_fields(self._params.TABLE))
        form.addRow(self.reset_button)
        for control in self.sampling_controls.values():
            control.on_edited(self._on_sampling_edited)
        self.reset_button.clicked.connect(self.reset_to_defaults)
        return box

    def _build_system_prompt(self) -> QGroupBox:
        box = QGroupBox(self.tr("System prompt"))
        column = QVBoxLayout(box)
        self.system_prompt_edit = QPlainTextEdit()
        self.system_prompt_edit.setPlaceholderText(self.tr("Optional instructions for the model"))
        self.system_prompt_edit.setMaximumHeight(72)  # three lines and a half; it scrolls beyond
        column.addWidget(self.system_prompt_edit)
        column.addWidget(caption(self.tr("Applies from the next message.")))
        self.system_prompt_edit.textChanged.connect(self._on_system_prompt_edited)
        return box

    def _build_cache(self) -> QGroupBox:
        box = QGroupBox(self.tr("KV cache"))
        form = QFormLayout(box)
        self.cache_combo = QComboBox()
        names = {
            "full": self.tr("Full (grows with the conversation)"),
            "sliding_window": self.tr("Sliding window with attention sinks"),
            "dynamic": self.tr("Dynamic (full, then window within a budget)"),
            "quantized": self.tr("Quantized"),
        }
        for key in CACHE_STRATEGIES:
            self.cache_combo.addItem(names.get(key, key), key)
        # Long names must not widen the sidebar (1024x700 windows): the box elides, its list does not.
        self.cache_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.cache_combo.setMinimumContentsLength(14)
        self.cache_combo.view().setMinimumWidth(self.cache_combo.view().sizeHintForColumn(0) + 16)
        self.window_spin = QSpinBox()
        self.window_spin.setRange(16, 1 << 20)
        self.window_spin.setSingleStep(256)
        self.window_spin.setSuffix(self.tr(" tokens"))
        self.window_spin.setKeyboardTracking(False)
        self.sinks_spin = QSpinBox()
        self.sinks_spin.setRange(0, 64)
        self.sinks_spin.setSuffix(self.tr(" tokens"))
        self.sinks_spin.setKeyboardTracking(False)
        self.budget_spin = QSpinBox()
        self.budget_spin.setRange(0, 1 << 20)
        self.budget_spin.setSingleStep(256)
        self.budget_spin.setSuffix(self.tr(" MiB"))
        self.budget_spin.setSpecialValueText(self.tr("automatic"))
        self.budget_spin.setKeyboardTracking(False)
        self.cache_reason = caption("")
        self.cache_reason.hide()
        form.addRow(self.tr("Strategy"), self.cache_combo)
        form.addRow(self.tr("Window"), self.window_spin)
        form.addRow(self.tr("Sinks"), self.sinks_spin)
        form.addRow(self.tr("Budget"), self.budget_spin)
        form.addRow(self.cache_reason)
        form.addRow(caption(self.tr("Applies from the next message.")))
        self.cache_combo.currentIndexChanged.connect(self._on_cache_edited)
        for spin in (self.window_spin, self.sinks_spin, self.budget_spin):
            spin.valueChanged.connect(self._on_cache_edited)
        return box

    def _build_model_note(self) -> QGroupBox:
        box = QGroupBox(self.tr("Model"))
        column = QVBoxLayout(box)
        column.addWidget(
            caption(
                self.tr(
                    "Model, precision and quantization apply when a model is loaded: File > Open model (Ctrl+O)."
                )
            )
        )
        return box

    # Sampling ---------------------------------------------------------------
    def params(self) -> SamplingParams:
        """The sampling parameters in force (the last valid ones)."""
        return self._params

    def set_params(self, params: SamplingParams, emit: bool = True) -> None:
        """Show ``params`` in the controls and make them the ones in force (their
        ``enable_thinking``, when set, in the Thinking switch; in force: the switch's)."""
        self._updating = True
        try:
            for name, control in self.sampling_controls.items():
                control.set_value(getattr(params, name))
            self.thinking.show_value(params.enable_thinking)
        finally:
            self._updating = False
        params = self._with_switches(params)
        self._params = params
        self._show_refused("")
        if emit:
            self.params_changed.emit(params)

    def set_sampling_timing(self, live: frozenset[str]) -> None:
        """Say when a sampling change takes effect, from the backend's
        :class:`~glmdesk.engine.backends.base.Capabilities`.

        Args:
            live: The fields read before every token (``Capabilities.live_sampling``); the
                others are read once, when an answer starts (a remote server's request
                cannot change mid-answer, so there none is live).
        """
        if not live:
            short = self.tr("Applies from the next answer.")
            text = self.tr(
                "Applies from the next answer: the settings go with each question, so an answer "
                "being written keeps the ones it started with."
            )
        elif live >= live_fields(self._params.TABLE):
            short = self.tr("Applies from the next token, even mid-answer.")
            text = self.tr(
                "Applies from the next token, also to an answer being written. The seed applies from the next message."
            )
        else:
            names = ", ".join(c.label for name, c in self.sampling_controls.items() if name in live)
            short = self.tr("{live} apply from the next token; the others from the next answer.").format(
                live=names
            )
            text = self.tr(
                "{live} apply from the next token, also to an answer being written; the others from the next answer."
            ).format(live=names)
        self.sampling_timing.setText(short)  # one short line; the whole rule in its tooltip
        self.sampling_timing.setToolTip(text)

    def _with_switches(self, params: SamplingParams) -> SamplingParams:
        """``params`` with the Thinking switch's, the effort choice's and the earlier
        thinking choice's values."""
        kwargs = self.keep_thinking.template_kwargs(self.effort.template_kwargs(params.template_kwargs))
        return replace(params, enable_thinking=self.thinking.value(), template_kwargs=kwargs)

    def set_effort_levels(self, levels: tuple[str, ...], reason: str = "") -> None:
        """Offer the loaded model's reasoning-effort levels (``()``: grey the choice with
        ``reason``); the parameters in force follow."""
        self.effort.set_levels(levels, reason)
        self._on_thinking_toggled()

    def set_thinking_available(self, available: bool, reason: str = "") -> None:
        """Enable the Thinking switch for a model that has one (``Capabilities.thinking_switch``),
        else grey it with ``reason``; the parameters in force follow."""
        self.thinking.set_available(available, reason)
        self._on_thinking_toggled()

    @Slot()
    def _on_thinking_toggled(self) -> None:
        params = self._with_switches(self._params)
        if params != self._params:
            self._params = params
            self.params_changed.emit(params)

    def set_defaults(self, params: SamplingParams) -> None:
        """The model family's defaults, used by the Model defaults button."""
        self._defaults = params

    @Slot()
    def reset_to_defaults(self) -> None:
        """Show and apply the model family's defaults."""
        self.set_params(self._defaults)

    def _show_refused(self, reason: str) -> None:
        self.refused_label.setText(reason)
        self.refused_label.setVisible(bool(reason))
        if reason:
            self.setting_refused.emit(reason)

    @Slot()
    def _on_sampling_edited(self) -> None:
        if self._updating:
            return
        values = {}
        for name, control in self.sampling_controls.items():
            value = control.value()
            refusal = control.refusal(value, getattr(self._params, name))
            if refusal:  # the row's own sentence, translated; the value in force stays
                self._show_refused(refusal)
                return
            values[name] = value
        try:
            params = replace(self._params, **values)
        except ValueError as exc:  # the field's English sentence
            self._show_refused(str(exc))
            return
        self._show_refused("")
        if params != self._params:
            self._params = params
            self.params_changed.emit(params)

    # System prompt ----------------------------------------------------------
    def system_prompt(self) -> str:
        """The system prompt text."""
        return self.system_prompt_edit.toPlainText()

    def set_system_prompt(self, text: str) -> None:
        """Show ``text`` as the system prompt."""
        self.system_prompt_edit.setPlainText(text)

    @Slot()
    def _on_system_prompt_edited(self) -> None:
        self.system_prompt_changed.emit(self.system_prompt())

    # KV cache ---------------------------------------------------------------
    def cache_settings(self) -> CacheSettings:
        """The KV-cache settings in force."""
        return self._cache

    def set_cache_settings(self, cache: CacheSettings) -> None:
        """Show ``cache`` in the controls (without emitting)."""
        self._updating = True
        try:
            index = self.cache_combo.findData(cache.strategy)
            self.cache_combo.setCurrentIndex(max(index, 0))
            self.window_spin.setValue(cache.window)
            self.sinks_spin.setValue(cache.sinks)
            self.budget_spin.setValue(0 if cache.budget_mib is None else int(cache.budget_mib))
        finally:
            self._updating = False
        self._cache = cache
        self._update_cache_controls()

    def set_cache_availability(self, availability: dict[str, str | None]) -> None:
        """Enable the strategies the engine accepts; the others show their reason.

        Args:
            availability: ``{strategy: None or reason}``; a strategy missing from it is
                unavailable.
        """
        model = self.cache_combo.model()
        if not isinstance(model, QStandardItemModel):  # a combo box's own model is one
            raise TypeError("the cache strategy list has no QStandardItemModel")
        reasons = []
        for row in range(self.cache_combo.count()):
            key = self.cache_combo.itemData(row)
            reason = availability.get(key, self.tr("Not available in this build."))
            item = model.item(row)
            item.setEnabled(reason is None)
            item.setToolTip(reason or "")
            reasons.append(reason)
        current = self.cache_combo.currentData()
        if availability.get(current, "missing") is not None:
            self.cache_combo.setCurrentIndex(self.cache_combo.findData("full"))
        # No strategy at all (a remote server keeps its own cache): the whole section is
        # greyed out and says why.
        self._no_cache_choice = reasons[0] if reasons and None not in reasons else None
        self.cache_combo.setEnabled(self._no_cache_choice is None)
        self.cache_combo.setToolTip(self._no_cache_choice or "")
        self.cache_reason.setText(self._no_cache_choice or "")
        self.cache_reason.setVisible(self._no_cache_choice is not None)
        self._update_cache_controls()

    def _update_cache_controls(self) -> None:
        strategy = self.cache_combo.currentData()
        chosen_here = self.cache_combo.isEnabled()
        windowed = strategy in ("sliding_window", "dynamic") and chosen_here
        self.window_spin.setEnabled(windowed)
        self.sinks_spin.setEnabled(windowed)
        self.budget_spin.setEnabled(strategy == "dynamic" and chosen_here)

    @Slot()
    def _on_cache_edited(self) -> None:
        self._update_cache_controls()
        if self._updating:
            return
        budget = self.budget_spin.value()
        try:
            cache = replace(
                self._cache,
                strategy=self.cache_combo.currentData(),
                window=self.window_spin.value(),
                sinks=self.sinks_spin.value(),
                budget_mib=float(budget) if budget else None,
            )
        except ValueError:
            self.cache_reason.setText(
                self.tr(
                    "Attention sinks must be fewer than the window; the previous KV-cache settings stay in force."
                )
            )
            self.cache_reason.show()
            return
        self.cache_reason.setText(self._no_cache_choice or "")
        self.cache_reason.setVisible(self._no_cache_choice is not None)
        if cache != self._cache:
            self._cache = cache
            self.cache_settings_changed.emit(cache)

    def _build_language(self) -> QGroupBox:
        box = QGroupBox(self.tr("Interface"))
        form = QFormLayout(box)
        self.language_combo = QComboBox()
        self.language_combo.setObjectName("language_combo")
        self.language_combo.addItem(self.tr("System language"), SYSTEM_LANGUAGE)
        for code, name in LANGUAGES:
            self.language_combo.addItem(name, code)  # native names, never translated
        form.addRow(self.tr("Language"), self.language_combo)
        form.addRow(caption(self.tr("Takes effect after restarting glmdesk.")))
        self.language_combo.currentIndexChanged.connect(self._on_language_edited)
        return box

    def set_language(self, code: str) -> None:
        """Show the remembered interface language (``system``, ``en`` or ``zh_CN``)."""
        self.language_combo.blockSignals(True)
        self.language_combo.setCurrentIndex(max(self.language_combo.findData(code), 0))
        self.language_combo.blockSignals(False)

    @Slot()
    def _on_language_edited(self) -> None:
        self.language_changed.emit(self.language_combo.currentData())
