"""UI test fixtures: isolated QSettings, the embedded model loaded once, a ready window.

``tests/conftest.py`` already points ``GLMDESK_HOME`` at ``tmp_path`` and shares
converted models through ``GLMDESK_MODEL_CACHE``; this file adds QSettings
isolation (autouse) and the window fixtures. Other UI test files (the history
panel's) may add fixtures here too.
"""

from __future__ import annotations

import gc
import os

import pytest
from PySide6.QtCore import QCoreApplication, QSettings

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

#: Generous timeouts: CI machines with two busy cores decode at a few tokens/s.
LOAD_TIMEOUT_MS = 180_000
ANSWER_TIMEOUT_MS = 120_000


@pytest.fixture(autouse=True)
def isolated_qsettings(tmp_path, monkeypatch):
    """Every test writes QSettings as INI files under ``tmp_path`` and nowhere else."""
    folder = tmp_path / "qsettings"
    folder.mkdir(exist_ok=True)
    old_format = QSettings.defaultFormat()
    QSettings.setDefaultFormat(QSettings.Format.IniFormat)
    for scope in (QSettings.Scope.UserScope, QSettings.Scope.SystemScope):
        QSettings.setPath(QSettings.Format.IniFormat, scope, str(folder))
    monkeypatch.setenv("GLMDESK_HOME", str(tmp_path / "glmdesk-home"))
    QCoreApplication.setOrganizationName("glmdesk-tests")
    QCoreApplication.setApplicationName("glmdesk-tests")
    yield folder
    QSettings.setDefaultFormat(old_format)


@pytest.fixture(autouse=True)
def windows_collected_at_the_end():
    """After each test, once qtbot has closed its widgets: collect the cycles its windows
    and sessions left, here, so a fault in freeing them shows in the test that made them
    (a closed session freed by the cycle collector in an arbitrary order once crashed the
    process in a later test's constructor)."""
    yield
    gc.collect()


@pytest.fixture(scope="session")
def shared_model(embedded):
    """The session's embedded model (``tests/conftest.py``); the windows do not close it."""
    return embedded


@pytest.fixture
def make_window(qtbot):
    """Factory: a shown :class:`MainWindow`; with ``model``, started and ready to chat.

    A window given a model answers greedily with at most 24 new tokens unless the
    test changes the sidebar.
    """
    from glmdesk.core.settings import SamplingParams
    from glmdesk.ui.app.main_window import MainWindow

    windows: list[MainWindow] = []  # strong references: qtbot keeps only weak ones

    def make(model=None, start: bool = True, history=None) -> MainWindow:
        window = MainWindow(model=model, history=history)
        windows.append(window)
        qtbot.addWidget(window)
        window.resize(1100, 760)
        window.show()
        if model is not None and start:
            with qtbot.waitSignal(window.loader.model_ready, timeout=LOAD_TIMEOUT_MS):
                window.start()
            window.sidebar.set_params(SamplingParams(temperature=0.0, top_p=1.0, max_new_tokens=24))
        return window

    yield make
    for window in windows:
        window.close()  # closeEvent ends the worker thread before the window is destroyed


@pytest.fixture
def window(make_window, shared_model):
    """A window using the shared embedded model, ready to chat."""
    return make_window(shared_model)


def history_window(make_window, path, model=None):
    """A window built with a history file at ``path``, as the app builds it (panel,
    controller, version actions); returns ``(window, history, panel, controller)``. Close
    the controller, then the history."""
    from glmdesk.core.history import History

    history = History(path)
    window = make_window(model, history=history)
    controller = window.history_controller
    return window, history, controller.panel, controller


@pytest.fixture
def wired(make_window, shared_model, tmp_path):
    """A shared-model window with a history: ``(window, history, panel, controller)``."""
    window, history, panel, controller = history_window(
        make_window, tmp_path / "history.sqlite3", shared_model
    )
    yield window, history, panel, controller
    controller.close()
    history.close()
