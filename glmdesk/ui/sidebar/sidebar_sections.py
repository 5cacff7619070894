"""The sidebar as collapsible sections (Sampling, System prompt, Tools, KV cache, Model, Interface),
with the less used rows of Sampling (the table's ``advanced`` rows) and KV cache under an
"Advanced" toggle.

Applied to a built :class:`~glmdesk.ui.sidebar.sidebar.Sidebar` by :func:`fold_sidebar`: each
``QGroupBox`` gets a clickable header with an arrow in place of its title, so the
controls keep their names and signals.
"""

from __future__ import annotations

from typing import cast

from PySide6.QtCore import QCoreApplication, Qt
from PySide6.QtWidgets import QFormLayout, QGroupBox, QSizePolicy, QToolButton, QWidget

#: Sections open at start, by their position (Sampling and System prompt).
OPEN_AT_START = (0, 1)


def _toggle(text: str, open_: bool, parent: QWidget | None = None) -> QToolButton:
    button = QToolButton(parent)
    button.setText(text)
    button.setCheckable(True)
    button.setChecked(open_)
    button.setAutoRaise(True)
    button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
    button.setArrowType(Qt.ArrowType.DownArrow if open_ else Qt.ArrowType.RightArrow)
    button.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
    button.toggled.connect(
        lambda on: button.setArrowType(Qt.ArrowType.DownArrow if on else Qt.ArrowType.RightArrow)
    )
    return button


def _row_of(form: QFormLayout, widget: QWidget) -> int:
    """The row of ``widget`` in ``form`` (PySide6 types ``getWidgetPosition`` as a bare
    object; Qt returns ``(row, role)``)."""
    row, _role = cast(tuple[int, QFormLayout.ItemRole], form.getWidgetPosition(widget))
    return row


def _advanced(form: QFormLayout, widgets: list[QWidget], before: QWidget, text: str) -> QToolButton:
    """Hide the rows of ``widgets`` behind an "Advanced" toggle placed above ``before``'s row."""
    toggle = _toggle(text, False)
    for widget in widgets:  # the advanced rows move below the toggle, in their order
        taken = form.takeRow(widget)
        label = taken.labelItem.widget() if taken.labelItem is not None else None
        if label is None:
            form.insertRow(_row_of(form, before), widget)
        else:
            form.insertRow(_row_of(form, before), label, widget)
    form.insertRow(_row_of(form, widgets[0]), toggle)
    for widget in widgets:
        form.setRowVisible(widget, False)
    toggle.toggled.connect(lambda on: [form.setRowVisible(w, on) for w in widgets])
    return toggle


def fold_sidebar(sidebar) -> dict[str, QToolButton]:
    """Make the sidebar's group boxes collapsible and add the "Advanced" toggles.

    Returns:
        The toggles by name: ``section0``... for the section headers (in order),
        ``sampling_advanced`` and ``cache_advanced``.
    """
    column = sidebar.widget().layout()
    toggles: dict[str, QToolButton] = {}
    boxes = [column.itemAt(i).widget() for i in range(column.count())]
    boxes = [box for box in boxes if isinstance(box, QGroupBox)]
    for number, box in enumerate(boxes):
        header = _toggle(box.title(), number in OPEN_AT_START)
        header.setObjectName(f"section_{number}")
        font = header.font()
        font.setBold(True)
        header.setFont(font)
        box.setTitle("")
        box.setFlat(True)
        column.insertWidget(column.indexOf(box), header)
        box.setVisible(header.isChecked())
        header.toggled.connect(box.setVisible)
        toggles[f"section{number}"] = header
    advanced = QCoreApplication.translate("Sidebar", "Advanced")
    toggles["sampling_advanced"] = _advanced(
        sidebar.refused_label.parentWidget().layout(),
        [c.widget for c in sidebar.sampling_controls.values() if c.row.advanced],
        sidebar.refused_label,
        advanced,
    )
    toggles["cache_advanced"] = _advanced(
        sidebar.cache_combo.parentWidget().layout(),
        [sidebar.sinks_spin, sidebar.budget_spin],
        sidebar.cache_reason,
        advanced,
    )
    return toggles
