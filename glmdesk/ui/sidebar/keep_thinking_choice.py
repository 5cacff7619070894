"""The sidebar's "Keep earlier thinking" choice: whether the thinking of earlier answers
stays in the prompt of the next one.

A combo box under Reasoning effort: "Model default" (what the loaded model's chat
template does when not told: GLM-4.7 and GLM-5.2 drop it, GLM-5.3 keeps it; the item
says which, from ``ModelInfo.keeps_thinking``), "Keep" or "Drop". A choice other than the
default goes to the chat template as ``clear_thinking`` (``SamplingParams.template_kwargs``;
Keep is ``clear_thinking=false``) from the next answer. The choice belongs to the
conversation: :class:`~glmdesk.ui.app.keep_thinking_memory.KeepThinkingMemory` keeps it
in the history and shows it again when the chat is reopened. For a model whose template
does not read ``clear_thinking`` the box is greyed, and its tooltip and caption say why;
the chat's choice is kept while greyed.
"""

from __future__ import annotations

from PySide6.QtCore import Signal, Slot
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from glmdesk.ui.sidebar.slider_spin import ReasonLine

#: The template value this choice sets (``True``: drop earlier thinking).
CLEAR_THINKING = "clear_thinking"
#: The box's items in order: the model's default, Keep, Drop.
_ITEMS: tuple[bool | None, ...] = (None, True, False)


class KeepThinkingChoice(QWidget):
    """The Keep / Drop box and the caption that says why it is greyed.

    Signals:
        changed(): The value in force changed (the user's pick, or a chat's choice shown).
        chosen(object): The user picked ``True`` (keep), ``False`` (drop) or ``None``
            (the model's default); not emitted for a choice shown by :meth:`show_choice`.
    """

    changed = Signal()
    chosen = Signal(object)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.box = QComboBox()
        self.box.setObjectName("keep_thinking")
        self.label = QLabel(self.tr("Earlier thinking"))
        self.reason = ReasonLine("")
        self.reason.setObjectName("keep_thinking_reason")
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.label)
        row.addWidget(self.box, 1)
        column = QVBoxLayout(self)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(0)
        column.addLayout(row)
        column.addWidget(self.reason)
        self._updating = False
        self._choice: bool | None = None  # the chat's choice, kept while greyed
        self.box.currentIndexChanged.connect(self._on_changed)
        self.set_model(False, False, self.tr("Load a model first."))

    def set_model(
        self, available: bool, keeps_by_default: bool, reason: str = "", server: bool = False
    ) -> None:
        """Offer the choice for a model whose template reads ``clear_thinking``
        (``available``), its default item saying what the template does when not told
        (``keeps_by_default``; ``server``: a remote server's template, not known here);
        else grey the box with ``reason``. The chat's choice stays; emits ``changed``
        when the value in force changes."""
        before = self.value()
        if server:
            default = self.tr("Server default")
        elif keeps_by_default:
            default = self.tr("Model default (keep)")
        else:
            default = self.tr("Model default (drop)")
        self._updating = True
        try:
            self.box.clear()
            self.box.addItems([default, self.tr("Keep"), self.tr("Drop")])  # as _ITEMS
            self.box.setCurrentIndex(_ITEMS.index(self._choice))
        finally:
            self._updating = False
        self.box.setEnabled(available)
        tip = (
            self.tr(
                "Keep: the thinking of earlier answers stays in the prompt (the model sees how it "
                "reasoned, the prompt grows). Drop: only their answers stay. This chat only; from the next answer."
            )
            if available
            else reason
        )
        self.box.setToolTip(tip)
        self.reason.setText("" if available else reason)
        self.reason.setVisible(not available and bool(reason))
        if self.value() != before:
            self.changed.emit()

    def value(self) -> bool | None:
        """Whether earlier thinking is kept (``True``), dropped (``False``), or ``None``
        (the model's default, or greyed)."""
        return self._choice if self.box.isEnabled() else None

    def choice(self) -> bool | None:
        """The chat's choice, also while greyed (``None``: the model's default)."""
        return self._choice

    def show_choice(self, keep: bool | None) -> None:
        """Show a chat's stored choice (``None``: the model's default); emits ``changed``
        when the value in force changes, never ``chosen``."""
        before = self.value()
        self._choice = keep
        self._updating = True
        try:
            self.box.setCurrentIndex(_ITEMS.index(keep))
        finally:
            self._updating = False
        if self.value() != before:
            self.changed.emit()

    def template_kwargs(self, kwargs: tuple[tuple[str, object], ...]) -> tuple[tuple[str, object], ...]:
        """``kwargs`` with :data:`CLEAR_THINKING` set by the choice (left out for the
        model's default)."""
        rest = tuple((k, v) for k, v in kwargs if k != CLEAR_THINKING)
        keep = self.value()
        return rest if keep is None else (*rest, (CLEAR_THINKING, not keep))

    @Slot(int)
    def _on_changed(self, index: int) -> None:
        if self._updating or index < 0:
            return
        self._choice = _ITEMS[index]
        self.changed.emit()
        self.chosen.emit(self._choice)
