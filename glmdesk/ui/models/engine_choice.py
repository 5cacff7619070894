"""Open model's engine part: the engine list, the note on the engine that runs the
choices, and each engine's own options, all from the backends' registry.

:func:`glmdesk.engine.backends.engine_choice` says which engine runs the choices and
why; the note is that engine's own sentence for the reason (a passed-over engine's
sentence for its absence); each engine's own options are built from its spec
(:class:`~glmdesk.ui.models.backend_options.BackendOptions`), and the options of the engines
that do not run the model are greyed out. Nothing here names an engine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QCoreApplication, Slot
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QLabel

if TYPE_CHECKING:
    from collections.abc import Iterable

    from PySide6.QtWidgets import QCheckBox, QComboBox, QSpinBox

    from glmdesk.core.errors import ErrorInfo

from glmdesk.core.settings import LoadSettings
from glmdesk.engine.backends import ENGINE_CRASHED, EngineChoice, engine_choice, spec_for, specs
from glmdesk.engine.backends.gguf_vision import vision_projector
from glmdesk.ui.common.combo_items import combo_item
from glmdesk.ui.models.backend_options import BackendOptions


class EngineChoiceMixin:
    """The engine part of :class:`~glmdesk.ui.models.open_model_dialog.OpenModelDialog` (mixed
    into it: it reads the dialog's model, quantization, device, threads and decode-step
    controls, and gives ``engine_combo``, ``engine_note`` and ``engine_options``). Its
    strings are translated in the dialog's context, ``OpenModelDialog``.
    """

    if TYPE_CHECKING:  # given by OpenModelDialog (declared for type checkers only, so that
        # they never hide the dialog's own in its method order)
        _availability: dict[str, ErrorInfo | None]
        _compile_reason: ErrorInfo | None
        quantization_combo: QComboBox
        precision_combo: QComboBox
        device_combo: QComboBox
        threads_spin: QSpinBox
        fused_check: QCheckBox
        compile_check: QCheckBox

        def _combo(
            self, group: str, keys: Iterable[str], current: str, names: dict[str, str]
        ) -> QComboBox: ...

        def _reasons_text(self) -> str: ...

        def _local_settings(self, engine: str, own_options: bool = True) -> LoadSettings: ...

    def _build_engine_choice(self, current: LoadSettings) -> None:
        """The engine, the note on it, each engine's own options and why options are disabled."""
        local = [spec for spec in specs() if spec.local]
        self.engine_combo = self._combo(
            "engine",
            ("auto", *(spec.name for spec in local)),
            current.engine if current.engine in {spec.name for spec in local} else "auto",
            {
                "auto": QCoreApplication.translate("OpenModelDialog", "Automatic"),
                **{spec.name: spec.label for spec in local},
            },
        )
        self.engine_note = QLabel()
        self.engine_note.setWordWrap(True)
        self.engine_note.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        self.vision_note = QLabel()  # a GGUF's vision projector the engine cannot run
        self.vision_note.setWordWrap(True)
        self.vision_note.setVisible(False)
        # Each engine's own options, by engine name (engines that have some).
        self.engine_options = {
            spec.name: BackendOptions(spec, current, self._availability, self)
            for spec in local
            if spec.options
        }
        self.reasons_label = QLabel(self._reasons_text())
        self.reasons_label.setWordWrap(True)
        self.reasons_label.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        self.reasons_label.setVisible(bool(self.reasons_label.text()))

    def _offered(self, engine: str, settings: LoadSettings) -> bool:
        """Whether the engine list offers ``engine`` for ``settings`` (it accepts the
        source and the worker found it available)."""
        spec = spec_for(engine)
        return spec.accepts(settings) and spec.available(self._availability)

    def _chosen_engine(self) -> str:
        """The engine list's choice, ``auto`` when it cannot run the model chosen."""
        chosen = self.engine_combo.currentData()
        if chosen != "auto" and not self._offered(chosen, self._local_settings("auto", False)):
            return "auto"
        return chosen

    def engine_choice(self) -> EngineChoice:
        """The engine the choices load with, and why (the registry's rule)."""
        return engine_choice(self._local_settings(self._chosen_engine(), False), self._availability)

    def effective_engine(self) -> str:
        """The engine the choices load with (``auto`` resolved as the engine does)."""
        return self.engine_choice().engine

    def _note(self, choice: EngineChoice) -> str:
        """The running engine's sentence for why it runs the model (for another engine's
        absence, the sentence of the engine whose reason it is), translated."""
        spec = spec_for(choice.engine)
        if choice.reason == ENGINE_CRASHED:
            return QCoreApplication.translate(
                "OpenModelDialog",
                "{crashed} crashed while it answered, so Automatic runs this model on {engine}; "
                "choose {crashed} here to use it again.",
            ).format(crashed=spec_for(choice.passed_over).label, engine=spec.label)
        owner = next((other for other in specs() if choice.reason in other.reasons), spec)
        text = spec.notes.get(choice.reason) or owner.notes.get(choice.reason) or spec.notes.get("chosen", "")
        return QCoreApplication.translate("OpenModelDialog", text).format(engine=spec.label) if text else ""

    @Slot()
    def _update_engine(self) -> None:
        """Offer each engine for the sources it runs, say why the engine runs the model,
        and grey out the options of the other engines."""
        combo = self.engine_combo
        source = self._local_settings("auto", False)
        for row in range(combo.count()):
            engine = combo.itemData(row)
            if engine != "auto":
                combo_item(combo, row).setEnabled(self._offered(engine, source))
        if not combo_item(combo, combo.currentIndex()).isEnabled():
            combo.setCurrentIndex(combo.findData("auto"))
        choice = self.engine_choice()
        self.engine_note.setText(self._note(choice))
        spec = spec_for(choice.engine)
        self._update_vision_note(spec, source)
        self.quantization_combo.setEnabled("quantization" in spec.applies)
        self.precision_combo.setEnabled("precision" in spec.applies)
        self.fused_check.setEnabled("fused_decode" in spec.applies)
        form = getattr(self, "options_form", None)  # the other engine's options: hidden, not greyed
        if form is not None:
            for widget, applies in (
                (self.quantization_combo, "quantization"),
                (self.precision_combo, "precision"),
                (self.fused_check, "fused_decode"),
                (self.compile_check, "compile_decode"),
            ):
                form.setRowVisible(widget, applies in spec.applies)
        self.compile_check.setEnabled(
            "compile_decode" in spec.applies and self.fused_check.isChecked() and not self._compile_reason
        )
        for name, box in self.engine_options.items():
            box.set_active(name == choice.engine, self.device_combo.currentData() != "cpu")
            box.setVisible(name == choice.engine)
        self.threads_spin.setSpecialValueText(self._automatic_threads_text(choice.engine))

    def _update_vision_note(self, spec, source: LoadSettings) -> None:
        """Say so when the model's GGUF comes with a vision projector the engine cannot run."""
        text = spec.notes.get("vision_projector")
        projector = vision_projector(source.model) if text else None
        if projector is not None:
            text = QCoreApplication.translate("OpenModelDialog", text)
            self.vision_note.setText(text.format(file=projector.name, engine=spec.label))
        else:
            self.vision_note.clear()
        self.vision_note.setVisible(projector is not None)

    def _automatic_threads_text(self, engine: str) -> str:
        """What threads 0 means for ``engine``: one thread per physical core, or (an engine
        with ``adaptive_threads``) a start there adapted to measured decode steps."""
        if spec_for(engine).adaptive_threads:
            return QCoreApplication.translate("OpenModelDialog", "Automatic (adapts to CPU load)")
        return QCoreApplication.translate("OpenModelDialog", "Automatic (one per core)")
