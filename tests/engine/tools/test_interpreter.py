"""The code interpreter: state between calls, images, time and memory limits, kill."""

from __future__ import annotations

import threading

import pytest

from glmdesk.core import paths
from glmdesk.engine.tools.interpreter import CodeInterpreter, new_workdir

PNG_CODE = """
import struct, zlib
from IPython.display import Image, display
def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
raw = b"".join(b"\\x00" + b"\\xff\\x00\\x00" * 4 for _ in range(4))
png = b"\\x89PNG\\r\\n\\x1a\\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 4, 4, 8, 2, 0, 0, 0))
png += chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")
display(Image(data=png, format="png"))
print("shown")
"""


@pytest.fixture(scope="module")
def interp(tmp_path_factory):
    workdir = new_workdir(tmp_path_factory.mktemp("interp"), "conversation-1")
    it = CodeInterpreter(workdir, timeout_s=2.0, memory_mib=1024)
    yield it
    it.close()


def test_state_between_calls_home_and_working_folder(interp):
    assert interp.run("x = 41").status == "ok"
    result = interp.run("import os\nprint(x + 1)\nprint(os.path.expanduser('~'))\nos.getcwd()")
    lines = result.text.splitlines()
    assert result.status == "ok" and lines[0] == "42"
    assert lines[1] == str(interp.workdir) and lines[2] == repr(str(interp.workdir))
    assert "42" in result.observation()


def test_tracebacks_and_images_come_back(interp):
    err = interp.run("1 / 0")
    assert err.status == "error" and "ZeroDivisionError" in err.text and "\x1b[" not in err.text
    img = interp.run(PNG_CODE)
    assert img.status == "ok" and img.text == "shown\n"
    assert len(img.images) == 1 and img.images[0].startswith(b"\x89PNG\r\n\x1a\n")
    assert img.observation() == "shown\n[Image]"


def test_time_limit_interrupts_and_keeps_the_kernel(interp):
    interp.run("kept = 'yes'")
    result = interp.run("import time\ntime.sleep(30)")
    assert result.status == "timeout" and result.elapsed_s < 10 and not result.restarted
    assert "KeyboardInterrupt" in result.text and "time limit" in result.observation()
    assert interp.run("print(kept)").text == "yes\n"


def test_memory_limit_refuses_a_huge_allocation(interp):
    result = interp.run("big = bytearray(4 * 1024**3)")
    assert result.status == "error" and "MemoryError" in result.text
    assert interp.run("print('alive')").text == "alive\n"


def test_a_run_that_ignores_interrupts_is_killed_at_the_limit(tmp_path):
    it = CodeInterpreter(new_workdir(tmp_path, "c"), timeout_s=1.0, memory_mib=1024)
    try:
        it.run("y = 1")
        result = it.run("import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\ntime.sleep(60)")
        assert result.status == "timeout" and result.restarted and result.elapsed_s < 15
        after = it.run("print('y' in dir())")
        assert after.text == "False\n"
    finally:
        it.close()


def test_kill_is_one_quick_call_and_the_next_run_starts_fresh(tmp_path):
    it = CodeInterpreter(new_workdir(tmp_path, "k"), timeout_s=60.0, memory_mib=1024)
    try:
        it.run("z = 5")
        done: list = []
        worker = threading.Thread(
            target=lambda: done.append(it.run("open('started', 'w').close()\nwhile True: pass"))
        )
        worker.start()
        started = threading.Event()
        for _ in range(300):  # up to 30 s for the kernel to begin the loop
            if (it.workdir / "started").exists():
                started.set()
                break
            started.wait(0.1)
        assert started.is_set()
        it.kill()  # returns although the run holds the interpreter's lock and never ends
        worker.join(10)
        assert not worker.is_alive() and done[0].status == "killed"
        fresh = it.run("print('z' in dir())")
        assert fresh.text == "False\n" and fresh.status == "ok"
    finally:
        it.close()


def test_interpreter_folders_live_under_the_data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("GLMDESK_HOME", str(tmp_path))
    root = paths.interpreter_root()
    assert root == tmp_path / "data" / "interpreter"
    first = new_workdir(root, "conv/7")
    (first / "left.txt").write_text("x")
    again = new_workdir(root, "conv/7")
    assert again == first and not (again / "left.txt").exists()
