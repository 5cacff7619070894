"""The history panel's file dialogs (export, import) and its Markdown export headings.

Their words keep the panel's translation context (``HistoryPanel``): they are the
panel's, written here to keep the panel's module to the list and its operations.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Protocol

from PySide6.QtCore import QCoreApplication
from PySide6.QtWidgets import QFileDialog, QMessageBox, QWidget

from glmdesk.ui.tools.tool_memory import tools_markdown_labels


class ExportingPanel(Protocol):
    """What the dialogs need of the history panel (:class:`~glmdesk.ui.history.history_panel.HistoryPanel`)."""

    def export_conversation(self, conversation_id: int, path: str | Path, fmt: str) -> None: ...

    def import_conversation(self, path: str | Path) -> int | None: ...


def markdown_labels() -> dict[str, str]:
    """Translated headings for Markdown export (roles, unfinished answers, thinking, tools)."""
    return {
        "system": QCoreApplication.translate("HistoryPanel", "System"),
        "user": QCoreApplication.translate("HistoryPanel", "User"),
        "assistant": QCoreApplication.translate("HistoryPanel", "Assistant"),
        "untitled": QCoreApplication.translate("HistoryPanel", "Untitled"),
        "partial": QCoreApplication.translate("HistoryPanel", "(unfinished)"),
        "cancelled": QCoreApplication.translate("HistoryPanel", "(stopped)"),
        "error": QCoreApplication.translate("HistoryPanel", "(failed)"),
        "thinking": QCoreApplication.translate("HistoryPanel", "Thinking"),
        "documents": QCoreApplication.translate("HistoryPanel", "Documents"),
        **tools_markdown_labels(),
    }


def ask_export(parent: QWidget, panel: ExportingPanel, conversation_id: int, title: str, fmt: str) -> None:
    """Ask (over ``parent``) where to export the conversation (``"markdown"`` or
    ``"json"``) and write it with ``panel.export_conversation``; a failure is said in a
    message box."""
    title = title or QCoreApplication.translate("HistoryPanel", "conversation")
    stem = re.sub(r'[\\/:*?"<>|\s]+', "_", title).strip("_")[:60] or "conversation"
    if fmt == "markdown":
        suffix, kind = ".md", QCoreApplication.translate("HistoryPanel", "Markdown (*.md)")
    else:
        suffix, kind = ".json", QCoreApplication.translate("HistoryPanel", "JSON (*.json)")
    caption = QCoreApplication.translate("HistoryPanel", "Export conversation")
    path, _ = QFileDialog.getSaveFileName(parent, caption, stem + suffix, kind)
    if not path:
        return
    try:
        panel.export_conversation(conversation_id, path, fmt)
    except OSError as exc:
        QMessageBox.warning(
            parent,
            QCoreApplication.translate("HistoryPanel", "Export failed"),
            QCoreApplication.translate("HistoryPanel", "Could not write {path}: {error}").format(
                path=path, error=exc.strerror or exc
            ),
        )


def ask_import(parent: QWidget, panel: ExportingPanel) -> None:
    """Ask (over ``parent``) for a JSON export and import it with
    ``panel.import_conversation``; a failure is said in a message box."""
    path, _ = QFileDialog.getOpenFileName(
        parent,
        QCoreApplication.translate("HistoryPanel", "Import conversation"),
        "",
        QCoreApplication.translate("HistoryPanel", "JSON (*.json)"),
    )
    if not path:
        return
    try:
        panel.import_conversation(path)
    except (OSError, ValueError) as exc:
        QMessageBox.warning(
            parent,
            QCoreApplication.translate("HistoryPanel", "Import failed"),
            QCoreApplication.translate("HistoryPanel", "Could not import {path}: {error}").format(
                path=path, error=exc
            ),
        )
