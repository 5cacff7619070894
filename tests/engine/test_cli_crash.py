"""``glmdesk chat`` killed while it answers: the next start says so in one line."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from glmdesk.core.run_marker import marker_dir


@pytest.mark.slow
def test_a_chat_killed_while_answering_is_told_by_the_next_start(embedded_folder, glmdesk_home):
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    # transformers by name: llama.cpp's AMX build crashes by itself on some Xeons, and
    # this test kills the run from outside.
    proc = subprocess.Popen(
        [sys.executable, "-m", "glmdesk", "chat", "--engine", "transformers", "--temperature", "0"]
        + ["--max-new-tokens", "400", "--prompt", "Write a long story about a lighthouse keeper."],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout.read(1)  # the answer is streaming
        (marker,) = marker_dir().glob("*.json")  # the engine is generating
        assert marker.name == f"{proc.pid}-chat.json"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == -signal.SIGKILL
    assert marker.exists()  # a kill leaves it: nothing ran to take it away

    again = subprocess.run(
        [sys.executable, "-m", "glmdesk", "chat", "--prompt", " "],
        capture_output=True,
        text=True,
        env=env,
        timeout=240,
    )
    first = again.stderr.splitlines()[0]
    assert first.startswith(f"note: a previous glmdesk chat (pid {proc.pid}) was killed or lost power")
    assert "while the transformers engine was answering with SmolLM2-135M-Instruct" in first
    assert "no crash log was written" in first
    assert not marker.exists()
    assert again.returncode == 2 and "the prompt is empty" in again.stderr  # it went on as usual

    third = subprocess.run(
        [sys.executable, "-m", "glmdesk", "chat", "--prompt", " "], capture_output=True, text=True, env=env
    )
    assert "previous glmdesk" not in third.stderr  # told once


def test_naming_the_engine_on_the_command_line_trusts_it_again():
    from glmdesk.core.distrusted_engines import distrust_engine, is_distrusted
    from tests.helpers.cli import run_cli

    distrust_engine("llamacpp")
    assert run_cli("chat", "--prompt", " ").returncode == 2
    assert is_distrusted("llamacpp")  # auto: still passed over
    assert run_cli("chat", "--engine", "llamacpp", "--prompt", " ").returncode == 2
    assert not is_distrusted("llamacpp")


def test_glmdesk_serve_tells_a_terminal_run_that_crashed():
    from glmdesk.core.distrusted_engines import distrusted_engines
    from glmdesk.core.run_marker import crash_dir
    from tests.helpers.cli import run_cli

    child = (
        "import os, signal; from glmdesk.core import run_marker; run_marker.enable_crash_log(); "
        "run_marker.begin_run('llamacpp', 'GLM-4-9B-Chat', 'serve'); print(os.getpid(), flush=True); "
        "os.kill(os.getpid(), signal.SIGSEGV)"
    )
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    env.pop("PYTHONFAULTHANDLER", None)
    crashed = subprocess.run(
        [sys.executable, "-c", child], env=env, capture_output=True, text=True, timeout=120
    )
    assert crashed.returncode == -signal.SIGSEGV
    pid = int(crashed.stdout)
    out = run_cli("serve", "--max-body-mib", "-1")  # refused after the start's line
    assert out.returncode == 2
    first = out.stderr.splitlines()[0]
    assert first.startswith(f"note: a previous glmdesk serve (pid {pid}) crashed (Segmentation fault)")
    assert "while the llamacpp engine was answering with GLM-4-9B-Chat" in first
    assert first.endswith(f"; crash log: {crash_dir() / f'{pid}.log'}")
    assert "llamacpp" in distrusted_engines()
