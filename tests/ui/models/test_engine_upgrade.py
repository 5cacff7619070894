"""The window on a machine without llama.cpp: it opens on transformers at once, builds
llama.cpp with its stages shown, and answers on llama.cpp from the next message, never
cutting the answer being written. The build and the backends are fakes (the UI's own
behaviour); the builder itself is tested in tests/engine/test_llamacpp_build.py."""

from __future__ import annotations

import dataclasses
import threading
from pathlib import Path

import pytest

from glmdesk.core.errors import ErrorInfo, GlmdeskError
from glmdesk.engine import llamacpp_build
from glmdesk.engine.llamacpp_build import BuildProgress
from glmdesk.engine.llamacpp_smoke import Verdict
from glmdesk.ui.models import engine_upgrade
from tests.helpers.fake_backend import FakeBackend
from tests.ui.conftest import LOAD_TIMEOUT_MS


class EngineFake(FakeBackend):
    """The embedded model as one engine or the other would report it."""

    def __init__(self, engine: str, gate: threading.Event) -> None:
        super().__init__(name="SmolLM2-135M-Instruct", gate=gate)
        quantization = "int4-wo" if engine == "transformers" else "Q4_1"
        self._info = dataclasses.replace(
            self._info, engine=engine, source_kind="embedded", quantization=quantization
        )


@pytest.fixture
def machine(monkeypatch):
    """No llama.cpp until the fake build installs it; ``backends`` records each load's engine."""
    installed, release = threading.Event(), threading.Event()
    answer_gate = threading.Event()
    backends: list[EngineFake] = []

    def fake_build(report, cancel):
        report(BuildProgress("downloading", 1))
        report(BuildProgress("compiling", 2, done=45, units=100))
        while not release.wait(0.01):
            if cancel.is_set():
                raise GlmdeskError("build_cancelled", "Building llama.cpp was cancelled.")
        report(BuildProgress("testing", 3))
        report(BuildProgress("installing", 4))
        installed.set()
        return Path("/wheels/llama_cpp_python-0.3.36-cp311-cp311-linux_x86_64.whl")

    def factory(settings):
        backends.append(EngineFake("llamacpp" if installed.is_set() else "transformers", answer_gate))
        return backends[-1]

    monkeypatch.setattr(engine_upgrade, "llama_cpp_available", installed.is_set)
    monkeypatch.setattr(llamacpp_build, "build_unavailable", lambda: None)
    monkeypatch.setattr(llamacpp_build, "ensure_llamacpp", fake_build)
    return factory, backends, release, answer_gate


def _window(qtbot, factory):
    from glmdesk.ui.app.main_window import MainWindow

    checks = []

    def options():
        checks.append(1)
        return {"engine:llamacpp": None} if len(checks) > 1 else {"engine:llamacpp": "missing"}

    window = MainWindow(factory=factory, options=options)
    qtbot.addWidget(window)
    window.show()
    with qtbot.waitSignal(window.loader.model_ready, timeout=LOAD_TIMEOUT_MS):
        window.start()
    return window


def test_builds_then_switches_to_llamacpp_after_the_answer(qtbot, machine) -> None:
    factory, backends, release, answer_gate = machine
    window = _window(qtbot, factory)
    try:
        status, welcome = window.status.engine_label, window.chat_area.welcome.model_label
        assert window.engine_upgrade.state == "building"
        qtbot.waitUntil(lambda: "compiling 45%" in status.text(), timeout=10_000)
        line = "Engine: transformers, int4-wo until llama.cpp is built (stage 2/4: compiling 45%)"
        assert status.text() == line and welcome.text().endswith("\n" + line)
        assert status.toolTip() == line
        assert window.minimumSizeHint().width() <= 1024  # the long line never widens the window

        assert window.send_message("What is the capital of Japan?")
        qtbot.waitUntil(window.is_streaming, timeout=10_000)
        with qtbot.waitSignal(window.engine_upgrade.build_finished, timeout=10_000) as done:
            release.set()
        assert done.args == [True]
        # Built while an answer is written: that answer goes on, on transformers.
        assert window.is_streaming() and not window.is_loading() and len(backends) == 1
        assert "llama.cpp is built and answers from the next message" in status.text()

        with qtbot.waitSignal(window.loader.model_ready, timeout=LOAD_TIMEOUT_MS):
            answer_gate.set()
        assert [b.info.engine for b in backends] == ["transformers", "llamacpp"]
        assert window.state.messages[-1].content == "Hello, world."  # the answer was not cut
        assert status.text() == "Engine: llama.cpp, the fastest here for a GGUF file"
        # Open model offers llama.cpp now (read again on the worker, after the answer).
        qtbot.waitUntil(lambda: window.availability == {"engine:llamacpp": None}, timeout=10_000)
    finally:
        window.close()


def test_a_build_that_crashed_its_test_is_not_adopted_and_the_facts_say_why(
    qtbot, machine, monkeypatch
) -> None:
    """Every candidate crashed in its smoke child (the builder's own test shows that on
    fake builds): the window stays on transformers and says which build, the signal, and
    what to do, once, in the model facts."""
    factory, backends, _release, _gate = machine
    verdict = Verdict("crashed", "llama-cpp-python 0.3.36, portable build", "0.3.36:0", signal="SIGSEGV")

    def crashed_build(report, cancel):
        report(BuildProgress("testing", 3))
        error = verdict.error()
        raise GlmdeskError(error.kind, error.message, **error.params)

    monkeypatch.setattr(llamacpp_build, "ensure_llamacpp", crashed_build)
    window = _window(qtbot, factory)
    try:
        line = (
            "Engine: transformers, int4-wo. llama.cpp (llama-cpp-python 0.3.36, portable build) crashed "
            "(SIGSEGV) on its test answer, so it is not used and transformers answers. Keep transformers, "
            "or rebuild llama.cpp: glmdesk build-llamacpp"
        )
        qtbot.waitUntil(lambda: window.engine_upgrade.state == "failed", timeout=10_000)
        assert window.status.engine_label.text() == line
        assert window.chat_area.welcome.model_label.text().endswith("\n" + line)
        assert [b.info.engine for b in backends] == ["transformers"] and not window.is_loading()
    finally:
        window.close()


def test_without_a_compiler_it_says_so_and_stays_on_transformers(qtbot, machine, monkeypatch) -> None:
    factory, backends, _release, _gate = machine
    reason = ErrorInfo("llamacpp_unbuildable", "no compiler", {"reason": "no_compiler"})
    monkeypatch.setattr(llamacpp_build, "build_unavailable", lambda: reason)
    window = _window(qtbot, factory)
    try:
        assert window.status.engine_label.text() == (
            "Engine: transformers, int4-wo. llama.cpp cannot be built here: no C/C++ compiler was found "
            "(install gcc and g++, or clang)."
        )
        assert window.engine_upgrade.state == "unavailable" and window.engine_upgrade._thread is None
        assert [b.info.engine for b in backends] == ["transformers"]
    finally:
        window.close()
