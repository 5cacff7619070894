"""The window's actions and menus: File (with Get a model and Recent models), Chat, View (with Theme),
Help -> About and Keyboard shortcuts."""

from __future__ import annotations

import dataclasses
import functools

from PySide6.QtCore import QObject, Qt, Slot
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QApplication, QMenu, QMessageBox

from glmdesk.core.settings import LoadSettings
from glmdesk.ui.app.about_dialog import AboutDialog
from glmdesk.ui.app.shortcuts_dialog import ShortcutsDialog
from glmdesk.ui.common.icons import ui_icon
from glmdesk.ui.common.theme import ThemeController, build_theme_menu
from glmdesk.ui.models.get_model_dialog import GetModelDialog
from glmdesk.ui.models.recent_models import RecentModelsMenu


def theme_controller(store) -> ThemeController:
    """The application's theme controller, created (from the saved choice) on first use."""
    app = QApplication.instance()
    if not isinstance(app, QApplication):
        raise RuntimeError("the theme needs the running QApplication")
    controller = app.findChild(ThemeController)
    return controller if controller is not None else ThemeController(app, store.theme(), store)


class ProductMenus(QObject):
    """Builds a :class:`MainWindow`'s actions (its attributes ``open_action``,
    ``new_chat_action``, ``quit_action``, ``stop_action``, ``regenerate_action``,
    ``continue_action``, ``copy_action``, ``sidebar_action``; ``file_menu``; the window
    keeps them as its own) and its menu bar.

    Args:
        window: The main window.
    """

    def __init__(self, window) -> None:
        super().__init__(window)
        self.window = window
        self.server_menu: QMenu | None = None  # add_server_menu
        self.tools_menu: QMenu | None = None  # add_tools_menu
        self.theme = theme_controller(window.store)
        self._build_actions(window)
        bar = window.menuBar()
        file_menu = self.file_menu
        self.recent_menu = RecentModelsMenu(window.store, window)
        self.recent_menu.model_chosen.connect(self.open_recent)
        file_menu.insertMenu(self.new_chat_action, self.recent_menu)
        self.get_model_dialog = None
        self.get_model_action = QAction(self.tr("&Get a model..."), window)
        self.get_model_action.setObjectName("get_model_action")
        self.get_model_action.triggered.connect(self.show_get_model)
        file_menu.insertAction(self.recent_menu.menuAction(), self.get_model_action)
        view_menu = self.view_menu
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

    def _action(self, window, text: str, shortcut, slot) -> QAction:
        act = QAction(text, window)
        act.setShortcut(QKeySequence(shortcut))
        act.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        act.triggered.connect(slot)
        window.addAction(act)
        return act

    def _build_actions(self, w) -> None:
        action = functools.partial(self._action, w)
        self.open_action = action(
            self.tr("&Open model..."), QKeySequence.StandardKey.Open, w.open_model_dialog
        )
        self.new_chat_action = action(self.tr("&New chat"), QKeySequence.StandardKey.New, w.new_chat)
        self.quit_action = action(self.tr("&Quit"), QKeySequence.StandardKey.Quit, w.close)
        self.stop_action = action(self.tr("&Stop answer"), Qt.Key.Key_Escape, w.stop_answer)
        self.regenerate_action = action(self.tr("&Regenerate last answer"), "Ctrl+R", w.regenerate)
        self.continue_action = action(
            self.tr("C&ontinue the cut answer"), "Ctrl+Shift+Return", w.continue_answer
        )
        self.copy_action = action(self.tr("&Copy last answer"), "Ctrl+Shift+C", w.copy_last_answer)
        self.sidebar_action = action(self.tr("Show &settings"), "Ctrl+Shift+S", w.toggle_sidebar)
        self.sidebar_action.setObjectName("settings_action")
        self.sidebar_action.setCheckable(True)
        self.sidebar_action.setChecked(True)
        self.sidebar_action.setIcon(ui_icon("settings"))
        self.sidebar_action.setToolTip(self.tr("Show or hide the settings (Ctrl+Shift+S)"))
        menu = self.file_menu = w.menuBar().addMenu(self.tr("&File"))
        for act in (self.open_action, self.new_chat_action, self.quit_action):
            menu.addAction(act)
        chat = w.menuBar().addMenu(self.tr("&Chat"))
        for act in (self.stop_action, self.regenerate_action, self.continue_action, self.copy_action):
            chat.addAction(act)
        self.view_menu = w.menuBar().addMenu(self.tr("&View"))
        self.view_menu.addAction(self.sidebar_action)

    def add_server_menu(self, serve) -> QMenu:
        """The Server menu, before View: serve on localhost (checkable) and where it
        serves (``serve``: the window's
        :class:`~glmdesk.ui.session.serve_controller.ServeController`)."""
        menu = QMenu(self.tr("&Server"), self.window)
        menu.setObjectName("server_menu")
        menu.addAction(serve.action)
        menu.addAction(serve.address_action)
        self.window.menuBar().insertMenu(self.view_menu.menuAction(), menu)
        self.server_menu = menu
        return menu

    def add_tools_menu(self, *actions: QAction) -> QMenu:
        """The Tools menu, before Server (or View): ``actions`` (MCP servers...)."""
        menu = QMenu(self.tr("&Tools"), self.window)
        menu.setObjectName("tools_menu")
        for action in actions:
            menu.addAction(action)
        before = self.server_menu or self.view_menu
        self.window.menuBar().insertMenu(before.menuAction(), menu)
        self.tools_menu = menu
        return menu

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
    def show_get_model(self) -> None:
        """File -> Get a model: the catalog page, made once and kept (its downloads go on
        while it is hidden)."""
        if self.get_model_dialog is None:
            try:
                self.get_model_dialog = GetModelDialog(self.window.store, self.window)
            except (OSError, ValueError) as exc:  # a missing or damaged catalog file
                QMessageBox.warning(
                    self.window,
                    self.tr("Get a model"),
                    self.tr("The model catalog cannot be read: {error}").format(error=exc),
                )
                return
            self.get_model_dialog.load_requested.connect(self.window.load_model)
        self.get_model_dialog.show()
        self.get_model_dialog.raise_()
        self.get_model_dialog.activateWindow()

    @Slot()
    def show_about(self) -> None:
        """Help -> About."""
        AboutDialog(self.window).exec()

    @Slot()
    def show_shortcuts(self) -> None:
        """Help -> Keyboard shortcuts."""
        ShortcutsDialog(self.window.actions(), self.window).exec()
