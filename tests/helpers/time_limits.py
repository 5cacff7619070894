"""The per-test time limit, told by name (a pytest plugin; ``tests/conftest.py`` imports its hook).

pytest-timeout (``timeout`` and ``timeout_method = "thread"`` in ``pyproject.toml``)
ends a test that runs past the limit. Its signal method cannot: a test waiting in Qt's
event loop or on a thread runs no Python code in the main thread, so SIGALRM's handler
never runs (and an exception raised in a Qt slot does not leave the slot). Its thread
method ends the process with ``os._exit(1)``, which works anywhere; but it prints the
test's name through pytest's terminal writer, which in a pytest-xdist worker goes
nowhere. This hook does what the thread method does and writes the name and every
thread's stack to file descriptor 2, which reaches the terminal of the run; xdist
then reports the worker's test as crashed and, with ``--max-worker-restart=0``
(``scripts/run-tests``), ends the run with its summary.
"""

from __future__ import annotations

import contextlib
import faulthandler
import os
import threading

import pytest


def _timed_out(item, settings) -> None:
    from pytest_timeout import is_debugging

    if not settings.disable_debugger_detection and is_debugging():
        return  # someone steps through the test in a debugger (pytest-timeout's own rule)
    limit = settings.timeout
    capture = item.config.pluginmanager.getplugin("capturemanager")
    with contextlib.suppress(Exception):  # fd 2 back to the terminal, as pytest-timeout does
        if capture is not None:
            capture.suspend_global_capture(item)
    os.write(
        2,
        f"\n+++ TIMEOUT: {item.nodeid} ran past the per-test limit of {limit:g} s "
        f"(timeout in pyproject.toml); the stacks of its threads follow +++\n".encode(),
    )
    with contextlib.suppress(Exception):
        faulthandler.dump_traceback(2, all_threads=True)
    os.write(2, f"+++ TIMEOUT: {item.nodeid} +++\n".encode())
    os._exit(1)


@pytest.hookimpl(tryfirst=True)
def pytest_timeout_set_timer(item, settings):
    """Start the limit's timer for ``item`` (pytest-timeout's hook; ``thread`` method only)."""
    if settings.method != "thread":
        return None
    timer = threading.Timer(settings.timeout, _timed_out, (item, settings))
    timer.daemon = True
    timer.name = f"test limit {item.nodeid}"

    def cancel() -> None:
        timer.cancel()
        timer.join()

    item.cancel_timeout = cancel  # pytest-timeout's cancel hook calls it
    timer.start()
    return True
