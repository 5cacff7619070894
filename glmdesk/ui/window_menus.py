"""The window's product menus: File -> Recent models, View -> Theme, Help -> About and
Keyboard shortcuts; and what the welcome's buttons do."""

from __future__ import annotations

import dataclasses

from PySide6.QtCore import QObject, Slot
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QApplication

from glmdesk.core.settings import LoadSettings
from glmdesk.ui.about_dialog import AboutDialog
from glmdesk.ui.recent_models import RecentModelsMenu
from glmdesk.ui.shortcuts_dialog import ShortcutsDialog
from glmdesk.ui.theme import ThemeController, build_theme_menu


def theme_controller(store) -> ThemeController:
    """The application's theme controller, created (from the saved choice) on first use."""
    app = QApplication.instance()
    controller = app.findChild(ThemeController)
    return controller if controller is not None else ThemeController(app, store.theme(), store)


class ProductMenus(QObject):
    """Adds the menus to a :class:`MainWindow` (after its own File, Chat and View menus).

    Args:
        window: The main window.
    """

    def __init__(self, window) -> None:
        super().__init__(window)
        self.window = window
        self.theme = theme_controller(window.store)
        bar = window.menuBar()
        file_menu = bar.actions()[0].menu()  # File, Chat, View so far
        self.recent_menu = RecentModelsMenu(window.store, window)
        self.recent_menu.model_chosen.connect(self.open_recent)
        file_menu.insertMenu(window.new_chat_action, self.recent_menu)
        view_menu = bar.actions()[-1].menu()
        view_menu.addMenu(build_theme_menu(self.theme, window))
        help_menu = bar.addMenu(self.tr("&Help"))
        self.shortcuts_action = QAction(self.tr("&Keyboard shortcuts"), window)
        self.shortcuts_action.setShortcut(QKeySequence("Ctrl+/"))
        self.shortcuts_action.triggered.connect(self.show_shortcuts)
        self.about_action = QAction(self.tr("&About glmdesk"), window)
        self.about_action.triggered.connect(self.show_about)
        window.addAction(self.shortcuts_action)
        help_menu.addAction(self.shortcuts_action)
        help_menu.addAction(self.about_action)

    @Slot(object)
    def open_recent(self, model: str | None) -> None:
        """Load a recent model with the current load options (trust in a folder's code is
        never carried over to another folder)."""
        current = self.window.load_settings or self.window.store.last_model() or LoadSettings()
        same = (current.model or None) == (model or None)
        settings = dataclasses.replace(
            current, model=model, trust_remote_code=current.trust_remote_code and same
        )
        self.window.load_model(settings)

    @Slot()
    def show_about(self) -> None:
        """Help -> About."""
        AboutDialog(self.window).exec()

    @Slot()
    def show_shortcuts(self) -> None:
        """Help -> Keyboard shortcuts."""
        ShortcutsDialog(self.window.actions(), self.window).exec()
