"""Start the desktop app: ``run_app(sys.argv)``."""

from __future__ import annotations

import gc
import sys

from PySide6.QtCore import QCoreApplication, QSize, Qt
from PySide6.QtGui import QColor, QIcon, QPainter, QPixmap
from PySide6.QtWidgets import QApplication, QSplashScreen

from glmdesk import __version__
from glmdesk.core.history import History
from glmdesk.core.run_marker import enable_crash_log
from glmdesk.engine.backends.transformers.warmup import preload_engine
from glmdesk.resources import resource_path
from glmdesk.ui.app.main_window import MainWindow
from glmdesk.ui.app.window_menus import theme_controller
from glmdesk.ui.common.i18n import install_translators
from glmdesk.ui.common.messages import history_set_aside_sentence
from glmdesk.ui.common.settings_store import APPLICATION, ORGANIZATION, SettingsStore
from glmdesk.ui.common.theme import apply_interface_font


def _app_icon() -> QIcon:
    """The window icon from the PNG set in ``resources/icons``."""
    icon = QIcon()
    try:
        folder = resource_path("icons")
    except FileNotFoundError:
        return icon
    for png in sorted(folder.glob("glmdesk-*.png")):
        icon.addFile(str(png))
    return icon


def startup_splash(icon: QIcon) -> QSplashScreen:
    """A splash with the icon and "Starting glmdesk...", shown while the engine imports.

    Importing torch and transformers takes several seconds on a small machine;
    without it nothing appears between the double-click and the window.
    """
    size, caption = 256, 44  # the caption has its own band below the icon
    icon_pixmap = icon.pixmap(QSize(size, size))
    pixmap = QPixmap(size, size + caption)
    pixmap.fill(QColor("#2b2d31"))
    painter = QPainter(pixmap)
    if not icon_pixmap.isNull():
        painter.drawPixmap(0, 0, icon_pixmap)
    painter.end()
    splash = QSplashScreen(pixmap)
    splash.setObjectName("startup_splash")
    splash.showMessage(
        QCoreApplication.translate("app", "Starting glmdesk..."),
        Qt.AlignmentFlag.AlignBottom | Qt.AlignmentFlag.AlignHCenter,
        Qt.GlobalColor.white,
    )
    return splash


def open_history() -> tuple[History | None, str | None]:
    """Open the history database: ``(history, sentence)`` where ``sentence`` (or ``None``)
    is what the window should say about it.

    A damaged file (``PRAGMA quick_check`` at open) is set aside under a new name and
    a new history started; the sentence says where the old file is. A database that
    cannot be opened at all (a newer schema, no permission) gives ``None`` and the
    sentence why; chatting still works, without saving.
    """
    try:
        history = History()
    except Exception as exc:  # sqlite3 errors, SchemaTooNewError, permissions
        return None, QCoreApplication.translate(
            "app", "The chat history could not be opened ({detail}); this session will not be saved."
        ).format(detail=exc)
    if history.set_aside is not None:
        return history, history_set_aside_sentence(str(history.path), str(history.set_aside))
    return history, None


def window_with_history(**window_args) -> MainWindow:
    """The window as the app builds it: the user's history opened (:func:`open_history`)
    and given to a :class:`MainWindow` built with ``window_args``; a problem with the
    history is shown in its notice bar."""
    history, problem = open_history()
    window = MainWindow(history=history, **window_args)  # its history controller is parented to it
    if problem is not None:
        window.notice.show_error(problem)
    return window


def run_app(argv: list[str]) -> int:
    """Create the application and the window, start loading the last model, run.

    Args:
        argv: Command-line arguments for Qt (``sys.argv``).

    Returns:
        The exit status of the Qt event loop.
    """
    enable_crash_log()  # a native crash leaves its traceback for the next start to name
    QCoreApplication.setOrganizationName(ORGANIZATION)
    QCoreApplication.setApplicationName(APPLICATION)
    QCoreApplication.setApplicationVersion(__version__)
    running = QApplication.instance()
    app = running if isinstance(running, QApplication) else QApplication(argv)
    app.setApplicationDisplayName("glmdesk")
    app.setDesktopFileName("glmdesk")
    app.setWindowIcon(_app_icon())
    language = install_translators(app, SettingsStore().language())  # before any widget is built
    apply_interface_font(app, language)
    theme_controller(SettingsStore())  # light or dark before the first paint
    splash = startup_splash(app.windowIcon())
    splash.show()
    app.processEvents()  # paint it before the blocking imports
    # Before the window: importing torch and building the tokenizer would stall its event loop.
    preload_engine(SettingsStore().last_model())
    window = window_with_history()
    # What is built by now (torch, transformers, Qt's wrappers: millions of objects) lives
    # as long as the app: frozen out of the collector's sight, a full collection no longer
    # scans it, which stalled the window 12-43 ms mid-answer (ui_responsiveness --sizes).
    gc.freeze()
    window.show()
    splash.finish(window)
    window.start()
    status = app.exec()
    window.close()  # idempotent: the thread is already down if the user closed the window
    if window.history_controller is not None:
        window.history_controller.close()  # a last try of writes that waited for disk space
    return status


if __name__ == "__main__":
    raise SystemExit(run_app(sys.argv))
