"""The packaged app runs the interpreter's kernel itself: the launch command, and a real
kernel started through the app's entry script with the kernel flag (as the bundle does)."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
import threading
import zlib
from pathlib import Path

import pytest

from glmdesk.engine.tools.interpreter import CodeInterpreter, app_entry, new_workdir
from glmdesk.interpreter_check import PNG_SIGNATURE, png_size
from glmdesk.kernel_entry import KERNEL_FLAG, is_kernel_launch, kernel_argv, run_kernel

ENTRY_SCRIPT = Path(__file__).parents[3] / "packaging" / "glmdesk_main.py"
PROBE = (
    "import resource, sys\n"
    "print(resource.getrlimit(resource.RLIMIT_AS)[0] // 2**20)\n"
    "print(sorted(m for m in ('glmdesk.cli', 'torch', 'PySide6') if m in sys.modules))"
)


def test_the_launch_command_in_a_bundle_is_the_app_itself_with_the_flag(tmp_path, monkeypatch) -> None:
    assert app_entry() is None  # from source: python -m ipykernel_launcher
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    assert app_entry() == [sys.executable]
    it = CodeInterpreter(tmp_path / "w", memory_mib=512)
    spec = json.loads((it._spec_dir() / "glmdesk-python" / "kernel.json").read_text(encoding="utf-8"))
    assert spec["argv"] == [sys.executable, KERNEL_FLAG, str(512 * 2**20), "-f", "{connection_file}"]
    assert spec["argv"] == kernel_argv([sys.executable], 512 * 2**20)
    assert is_kernel_launch(spec["argv"]) and not is_kernel_launch([sys.executable, "chat"])
    monkeypatch.delattr(sys, "frozen")
    source = json.loads(
        (CodeInterpreter(tmp_path / "v")._spec_dir() / "glmdesk-python" / "kernel.json").read_text()
    )
    assert source["argv"][-4:] == ["-m", "ipykernel_launcher", "-f", "{connection_file}"]


def test_a_kernel_runs_through_the_entry_script_with_its_limit_and_nothing_of_the_app(tmp_path) -> None:
    workdir = new_workdir(tmp_path, "bundle-kernel")
    it = CodeInterpreter(workdir, timeout_s=20.0, memory_mib=1024, entry=[sys.executable, str(ENTRY_SCRIPT)])
    try:
        result = it.run(PROBE)
        assert result.status == "ok", result.text
        assert result.text.splitlines() == ["1024", "[]"]  # limited; no window, no torch loaded
        assert it.run("x = 6 * 7").status == "ok" and it.run("print(x)").text == "42\n"  # one kernel
        command = Path(f"/proc/{it._km.provisioner.process.pid}/cmdline").read_bytes().split(b"\0")
        assert command[1].decode() == str(ENTRY_SCRIPT) and command[2].decode() == KERNEL_FLAG
        done: list = []
        worker = threading.Thread(
            target=lambda: done.append(it.run("open('go', 'w').close()\nwhile True: pass"))
        )
        worker.start()
        started = threading.Event()
        for _ in range(300):  # up to 30 s for the kernel to begin the loop
            if (workdir / "go").exists():
                started.set()
                break
            started.wait(0.1)
        it.kill()  # one call ends the runaway kernel (the entry script's process group)
        worker.join(10)
        assert started.is_set() and not worker.is_alive() and done[0].status == "killed"
        again = it.run("print('x' in dir())")  # a fresh kernel, started the same way
        assert again.status == "ok" and again.text == "False\n"
    finally:
        it.close()


def test_a_bad_kernel_launch_says_what_it_needs() -> None:
    with pytest.raises(SystemExit, match="memory limit in bytes"):
        run_kernel(["-f", "x.json"])
    done = subprocess.run(
        [sys.executable, str(ENTRY_SCRIPT), KERNEL_FLAG], capture_output=True, text=True, timeout=60
    )
    assert done.returncode != 0 and "memory limit in bytes" in done.stderr


def test_check_interpreter_runs_one_cell_in_a_kernel_started_as_the_app_does(capsys) -> None:
    from glmdesk.cli import main

    assert main(["--check-interpreter"]) == 0  # what packaging/check_bundle.sh runs in the bundle
    line, plot = capsys.readouterr().out.strip().splitlines()
    assert line.startswith("check-interpreter: ok: kernel started as python -m ipykernel_launcher")
    assert "output '42 2048'" in line
    assert plot.startswith("check-interpreter: plot ok: matplotlib returned a PNG of ")


def _chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def test_png_size_reads_the_header_and_refuses_anything_else() -> None:
    # A 7x5 grey PNG written by hand after the specification (8-bit greyscale, filter 0 rows).
    header = struct.pack(">IIBBBBB", 7, 5, 8, 0, 0, 0, 0)
    pixels = zlib.compress(b"".join(b"\x00" + bytes(7) for _ in range(5)))
    data = PNG_SIGNATURE + _chunk(b"IHDR", header) + _chunk(b"IDAT", pixels) + _chunk(b"IEND", b"")
    assert png_size(data) == (7, 5)
    assert png_size(data[:20]) is None and png_size(b"GIF89a" + data[6:]) is None
