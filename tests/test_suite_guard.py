"""The test command cannot hang: a worker that dies (a native crash, or a test past the
per-test limit) ends the run within seconds, with its summary naming the test.

Runs pytest with xdist, as ``scripts/run-tests`` does and with the project's own
configuration (``pyproject.toml``: ``--max-worker-restart=0``, the thread timeout) and
the hook ``tests/conftest.py`` takes from ``tests/helpers/time_limits.py``, on three tiny
test files in a subprocess.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

FILES = {
    "test_crash.py": """
        import os, signal
        def test_before():
            pass
        def test_segfault():
            os.kill(os.getpid(), signal.SIGSEGV)
        def test_after_the_crash():
            pass
    """,
    "test_stuck.py": """
        import threading
        def test_waits_for_ever():
            threading.Event().wait()
    """,
    "test_zz_fine.py": """
        def test_fine():
            pass
    """,
}


@pytest.mark.slow  # two xdist workers start in fresh interpreters (~16 s)
def test_a_dying_worker_fails_the_run_within_seconds_naming_its_test(tmp_path):
    for name, source in FILES.items():
        (tmp_path / name).write_text(textwrap.dedent(source))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-c", str(ROOT / "pyproject.toml")]
    command += ["-p", "tests.helpers.time_limits"]  # what tests/conftest.py loads
    command += ["--rootdir", str(tmp_path), "-n", "2", "--dist", "loadfile", "-o", "timeout=4", str(tmp_path)]
    start = time.monotonic()
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240)
    took = time.monotonic() - start
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "worker 'gw" in out and "crashed while running 'test_crash.py::test_segfault'" in out, out
    assert "TIMEOUT: test_stuck.py::test_waits_for_ever ran past the per-test limit of 4 s" in out, out
    assert "crashed while running 'test_stuck.py::test_waits_for_ever'" in out, out
    summary = out[out.index("short test summary info") :]
    assert (
        "FAILED test_crash.py::test_segfault" in summary
        and "FAILED test_stuck.py::test_waits_for_ever" in summary
    )
    assert "test_after_the_crash" not in out  # the run ended at the crash: nothing ran after it in that file
    # Two workers start (imports: ~5-20 s on two busy cores), one crashes at once, one
    # waits for its 4 s limit; no restarts, no hang.
    assert took < 120, f"{took:.0f} s"
