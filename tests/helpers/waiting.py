"""Waiting on a condition another thread brings about, with a timeout (never a fixed sleep)."""

from __future__ import annotations

import threading
import time


def wait_until(condition, timeout_s: float = 120.0) -> None:
    """Return once ``condition()`` holds, polling every 20 ms; fail after ``timeout_s`` (s).

    Raises:
        AssertionError: ``condition()`` still false after ``timeout_s``.
    """
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "the condition did not come true in time"
        threading.Event().wait(0.02)
