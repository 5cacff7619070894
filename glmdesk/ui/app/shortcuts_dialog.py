"""Help -> Keyboard shortcuts: every shortcut of the window's actions, and the input box's keys."""

from __future__ import annotations

import re

from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)


def action_label(action: QAction) -> str:
    """An action's text without its accelerator marks (``&Open model...`` -> ``Open model...``;
    the Chinese form ``打开模型(&O)...`` -> ``打开模型...``, the letter in brackets too)."""
    text = re.sub(r"\s?\(&[^&\s]\)", "", action.text())
    return text.replace("&&", "\0").replace("&", "").replace("\0", "&")


class ShortcutsDialog(QDialog):
    """A two-column table: what, and which keys (in the platform's notation).

    Args:
        actions: The window's actions; those without a shortcut are left out.
        parent: Parent widget.
    """

    def __init__(self, actions: list[QAction], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("shortcuts_dialog")
        self.setWindowTitle(self.tr("Keyboard shortcuts"))
        rows = [
            (action_label(a), a.shortcut().toString(QKeySequence.SequenceFormat.NativeText))
            for a in actions
            if not a.shortcut().isEmpty()
        ]
        rows += [
            (self.tr("Send the message"), self.tr("Enter")),
            (self.tr("New line in the message"), self.tr("Shift+Enter")),
        ]
        self.table = QTableWidget(len(rows), 2)
        self.table.setHorizontalHeaderLabels([self.tr("Action"), self.tr("Keys")])
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        for row, (what, keys) in enumerate(rows):
            self.table.setItem(row, 0, QTableWidgetItem(what))
            self.table.setItem(row, 1, QTableWidgetItem(keys))
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.table)
        layout.addWidget(buttons)
        self.resize(460, 420)

    def rows(self) -> list[tuple[str, str]]:
        """The table's rows as text (tests)."""
        return [(self._cell(r, 0), self._cell(r, 1)) for r in range(self.table.rowCount())]

    def _cell(self, row: int, column: int) -> str:
        item = self.table.item(row, column)
        return item.text() if item is not None else ""
