"""An engine's own load options in Open model, built from its spec's option schema.

Each :class:`~glmdesk.engine.backends.spec.OptionField` of a backend becomes a spin
box (whole numbers) or a check box (on/off), with its range, special value, label and
tooltip translated in the spec's context. A field that needs an availability key
(``llamacpp:gpu``) is disabled with the reason as its tooltip when the worker found
one, and a GPU-only field is offered only while the device is not the CPU.
"""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication
from PySide6.QtWidgets import QCheckBox, QFormLayout, QSpinBox, QWidget

from glmdesk.core.settings import LoadSettings
from glmdesk.engine.backends.spec import BackendSpec, OptionField
from glmdesk.ui.common.messages import option_reason


class BackendOptions(QWidget):
    """One engine's options (object name ``NAME_options``).

    Args:
        spec: The engine's spec (its :attr:`~BackendSpec.options` are shown).
        current: Settings to start from.
        availability: The worker's option availability.
        parent: Parent widget.
    """

    def __init__(self, spec: BackendSpec, current: LoadSettings, availability: dict, parent=None) -> None:
        super().__init__(parent)
        self.setObjectName(f"{spec.name}_options")
        self.spec = spec
        self._reasons = {o.name: availability.get(o.needs) if o.needs else None for o in spec.options}
        self._widgets: dict[str, QSpinBox | QCheckBox] = {}
        form = QFormLayout(self)
        form.setContentsMargins(0, 0, 0, 0)
        for option in spec.options:
            widget = self._build(option, current.option(option.name))
            self._widgets[option.name] = widget
            if isinstance(widget, QCheckBox):
                form.addRow("", widget)
            else:
                form.addRow(self._tr(option.label), widget)

    def _tr(self, text: str) -> str:
        return QCoreApplication.translate(self.spec.context, text) if text else ""

    def _build(self, option: OptionField, value) -> QSpinBox | QCheckBox:
        reason = self._reasons[option.name]
        if option.is_bool():
            widget = QCheckBox(self._tr(option.label))
            widget.setChecked(bool(value))
        else:
            widget = QSpinBox()
            widget.setRange(option.minimum, option.maximum)
            widget.setSingleStep(option.step)
            if option.special_text:
                widget.setSpecialValueText(self._tr(option.special_text).format(**option.special_values))
            widget.setValue(int(value))
        widget.setToolTip(option_reason(reason) if reason else self._tr(option.tooltip))
        return widget

    def field(self, name: str) -> QSpinBox | QCheckBox:
        """The control of the option ``name`` (a ``LoadSettings`` field).

        Raises:
            KeyError: for an option this engine does not have.
        """
        return self._widgets[name]

    def values(self) -> dict[str, int | bool]:
        """``{LoadSettings field: value}`` as chosen."""
        return {
            name: w.isChecked() if isinstance(w, QCheckBox) else w.value()
            for name, w in self._widgets.items()
        }

    def set_active(self, on: bool, gpu_device: bool) -> None:
        """Enable the options while this engine is the one that loads (a GPU-only option:
        with a device other than the CPU; an option with a reason: never)."""
        for option in self.spec.options:
            usable = (gpu_device or not option.gpu_only) and not self._reasons[option.name]
            self._widgets[option.name].setEnabled(on and usable)
