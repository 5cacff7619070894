"""Markers of answers in progress, crash logs and distrusted engines (core/run_marker.py),
with real child processes that crash (SIGSEGV) or are killed (SIGKILL)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap

from glmdesk.core import run_marker
from glmdesk.core.distrusted_engines import distrust_engine, distrusted_engines, is_distrusted, trust_engine
from glmdesk.core.run_marker import begin_run, dead_runs, describe_dead_run, end_run, marker_dir
from glmdesk.core.settings import LoadSettings

#: A child that writes its marker the way a front end does, then ends as ``HOW`` says.
CHILD = textwrap.dedent(
    """
    import os, signal, sys
    from glmdesk.core import run_marker
    run_marker.enable_crash_log()
    run_marker.begin_run("llamacpp", "SmolLM2", sys.argv[2], conversation_id=7, message_id=12)
    print("ready", flush=True)
    how = sys.argv[1]
    if how == "segv":
        os.kill(os.getpid(), signal.SIGSEGV)
    elif how == "wait":
        sys.stdin.readline()
    os.kill(os.getpid(), signal.SIGKILL)
    """
)


def _child(how: str, front_end: str = "window") -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    env.pop("PYTHONFAULTHANDLER", None)
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, how, front_end],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _ended(how: str, front_end: str = "window") -> int:
    child = _child(how, front_end)
    child.communicate(timeout=60)
    return child.returncode


def test_a_marker_lives_while_the_answer_runs_and_this_process_never_takes_its_own():
    path = begin_run("transformers", "SmolLM2", "chat", conversation_id=3, message_id=4)
    data = json.loads(path.read_text())
    assert (data["engine"], data["model"], data["front_end"]) == ("transformers", "SmolLM2", "chat")
    assert (data["conversation_id"], data["message_id"], data["pid"]) == (3, 4, os.getpid())
    assert data["started"] > 0 and data["process_started"] > 0
    assert dead_runs() == []  # this process still runs
    assert path.exists()
    end_run(path)
    assert not path.exists()
    assert list(marker_dir().iterdir()) == []


def test_a_segfault_while_generating_is_told_once_with_its_crash_log_and_distrusts_the_engine():
    assert _ended("segv") == -signal.SIGSEGV
    runs = dead_runs()
    assert len(runs) == 1
    run = runs[0]
    assert (run.engine, run.model, run.front_end) == ("llamacpp", "SmolLM2", "window")
    assert (run.conversation_id, run.message_id) == (7, 12)
    assert run.signal_name() == "Segmentation fault"
    log = run.crash_log_text()
    assert "Fatal Python error: Segmentation fault" in log and "most recent call first" in log
    line = describe_dead_run(run)
    assert "crashed (Segmentation fault)" in line and run.crash_log in line and "llamacpp" in line
    assert "\n" not in line
    assert is_distrusted("llamacpp") and distrusted_engines()["llamacpp"]["signal"] == "Segmentation fault"
    assert dead_runs() == []  # told once
    trust_engine("llamacpp")
    assert not is_distrusted("llamacpp")


def test_a_kill_is_told_without_a_crash_log_and_distrusts_nothing():
    assert _ended("kill") == -signal.SIGKILL
    (run,) = dead_runs()
    assert run.signal_name() == "" and run.crash_log_text() == ""
    assert "was killed or lost power" in describe_dead_run(run)
    assert "no crash log was written" in describe_dead_run(run)
    assert distrusted_engines() == {}
    assert list(run_marker.crash_dir().glob("*.log")) == []  # its empty log is cleaned up


def test_a_run_of_another_live_process_is_left_alone():
    child = _child("wait")
    try:
        assert child.stdout.readline().strip() == "ready"
        assert dead_runs() == []  # a second window or a terminal beside it
        assert len(list(marker_dir().glob("*.json"))) == 1
    finally:
        child.communicate("\n", timeout=60)
    assert len(dead_runs()) == 1  # once it is gone


def test_the_terminal_leaves_a_windows_run_to_the_window():
    _ended("kill", "window")
    _ended("kill", "chat")
    (chat,) = dead_runs(front_ends=("chat", "serve"))
    assert chat.front_end == "chat"
    (window,) = dead_runs()
    assert window.front_end == "window"


def test_a_stale_marker_with_a_reused_pid_is_a_dead_run():
    path = begin_run("llamacpp", "m", "chat")
    data = json.loads(path.read_text())
    data["process_started"] -= 3600  # this pid belonged to a process that started an hour ago
    other = path.with_name("reused.json")
    other.write_text(json.dumps(data))
    end_run(path)
    (run,) = dead_runs()
    assert run.pid == os.getpid()


def test_auto_passes_a_crashed_engine_over_until_it_is_picked_by_name():
    from glmdesk.engine.backends import ENGINE_CRASHED, engine_choice, wants_llamacpp

    settings = LoadSettings()  # the embedded GGUF: auto's engine is llama.cpp
    before = engine_choice(settings)
    distrust_engine("llamacpp")
    choice = engine_choice(settings)
    assert (choice.engine, choice.reason, choice.passed_over) == ("transformers", ENGINE_CRASHED, "llamacpp")
    assert not wants_llamacpp(settings)  # the window does not switch to it after a build
    named = engine_choice(LoadSettings(engine="llamacpp"))
    assert named.engine == "llamacpp"
    trust_engine("llamacpp")
    assert engine_choice(settings) == before


def test_only_the_newest_crash_logs_are_kept(monkeypatch):
    monkeypatch.setattr(run_marker, "_alive", lambda marker: False)  # their processes are gone
    for n in range(run_marker.KEEP_LOGS + 3):
        log = run_marker.crash_dir() / f"{1000 + n}.log"
        log.write_text("Fatal Python error: Segmentation fault\n")
        os.utime(log, (1_000_000 + n, 1_000_000 + n))
    (run_marker.crash_dir() / "999.log").write_text("")  # a kill: nothing was written
    dead_runs()
    left = sorted(int(p.stem) - 1000 for p in run_marker.crash_dir().glob("*.log"))
    assert left == list(range(3, run_marker.KEEP_LOGS + 3))
