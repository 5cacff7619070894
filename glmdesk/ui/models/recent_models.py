"""File -> Recent models: the models loaded lately, one click away (the list lives in QSettings)."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QCoreApplication, Signal, Slot
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QMenu, QWidget


def recent_label(model: str | None) -> str:
    """How a recent model is named in menus: the folder or file name, or the embedded model."""
    if not model:
        return QCoreApplication.translate("recent_models", "Embedded model (SmolLM2-135M-Instruct)")
    name = Path(model).name
    return name or model


class RecentModelsMenu(QMenu):
    """A menu of recent models, newest first, with "Clear the list" at the end.

    Args:
        store: The ``SettingsStore`` holding the list.
        parent: Parent widget.

    Signals:
        model_chosen(object): A model was picked: a path or hub id, or ``None`` for the
            embedded model.
    """

    model_chosen = Signal(object)

    def __init__(self, store, parent: QWidget | None = None) -> None:
        super().__init__(self.tr("Recent &models"), parent)
        self.setObjectName("recent_models_menu")
        self._store = store
        self.aboutToShow.connect(self.refresh)
        self.refresh()

    @Slot()
    def refresh(self) -> None:
        """Rebuild the entries from the store."""
        self.clear()
        models = self._store.recent_models()
        for number, model in enumerate(models, start=1):
            label = recent_label(model)
            action = QAction(f"&{number} {label.replace('&', '&&')}" if number < 10 else label, self)
            action.setData(model or "")
            action.setToolTip(model or label)
            action.setStatusTip(model or label)
            action.triggered.connect(self._on_triggered)
            self.addAction(action)
        if not models:
            empty = self.addAction(self.tr("No models opened yet"))
            empty.setEnabled(False)
        self.addSeparator()
        clear = self.addAction(self.tr("&Clear the list"))
        clear.setEnabled(bool(models))
        clear.triggered.connect(self._on_clear)
        self.setToolTipsVisible(True)

    def models(self) -> list[str | None]:
        """The models the menu offers, in order (tests)."""
        return [(a.data() or None) for a in self.actions() if a.data() is not None and a.isEnabled()]

    @Slot()
    def _on_triggered(self) -> None:
        action = self.sender()
        if isinstance(action, QAction):
            self.model_chosen.emit(str(action.data()) or None)

    @Slot()
    def _on_clear(self) -> None:
        for model in self._store.recent_models():
            self._store.remove_recent_model(model)
        self.refresh()
