"""A combo box's rows as items (to grey out or explain one choice)."""

from __future__ import annotations

from PySide6.QtGui import QStandardItem, QStandardItemModel
from PySide6.QtWidgets import QComboBox


def combo_item(combo: QComboBox, row: int) -> QStandardItem:
    """The item of ``combo``'s ``row`` (its own model: a :class:`QStandardItemModel`).

    Raises:
        TypeError: for a combo box given another model (``setModel``).
        IndexError: for a row it does not have.
    """
    model = combo.model()
    if not isinstance(model, QStandardItemModel):
        raise TypeError(f"the combo box's rows are not items: its model is a {type(model).__name__}")
    item = model.item(row)
    if item is None:
        raise IndexError(f"the combo box has no row {row}")
    return item
