"""The llama.cpp builder on a fake package: pip builds a tiny sdist (an in-tree PEP 517
backend that prints CMake-like steps; its fake ``llama_cpp`` crashes, answers wrongly or
rightly as each candidate's CMAKE_ARGS and the test's environment say) into the wheel
folder, the smoke test runs it in a child process, and the first that answers is
installed with ``--target``, offline (``--no-index --find-links``). Seconds, never a real
compile (tests/helpers/fake_llamacpp.py)."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest
from filelock import FileLock
from packaging.requirements import Requirement

from glmdesk.core.errors import GlmdeskError
from glmdesk.engine import llamacpp_build
from glmdesk.engine.llamacpp_build import BuildProgress, build_unavailable, ensure_llamacpp, stage_of
from tests.helpers.fake_llamacpp import SPEC, fake_sdist, fake_wheel

NATIVE, NOAMX, PORTABLE = llamacpp_build.CANDIDATES


def _imports(target: Path) -> str:
    """What the installed fake says it was built as (``native``, ``noamx``...)."""
    code = "import llama_cpp; print(llama_cpp.BUILT_AS)"
    env = {"PYTHONPATH": str(target), "PATH": ""}
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True).stdout


@pytest.fixture
def buildable(monkeypatch):
    """A compiler 'found' whatever the machine has (the fake build needs none)."""
    monkeypatch.setattr(llamacpp_build.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.delenv("GLMDESK_LLAMACPP_BUILD", raising=False)
    monkeypatch.delenv("GLMDESK_LLAMACPP_VERDICTS", raising=False)  # this test's own verdicts


def test_builds_once_with_stages_then_reuses_the_wheel(tmp_path, buildable) -> None:
    sources, wheels = fake_sdist(tmp_path / "index"), tmp_path / "wheels"
    seen: list[BuildProgress] = []
    offline = ("--no-index", "--find-links", str(sources))
    only = (NATIVE,)
    wheel = ensure_llamacpp(
        seen.append, folder=wheels, spec=SPEC, pip_args=offline, target=tmp_path / "a", tried=only
    )
    assert wheel.parent == wheels / "native" and wheel.name.startswith("llama_cpp_python-0.3.36")
    assert [p.stage for p in seen][0] == "downloading" and [p.stage for p in seen][-2:] == [
        "testing",
        "installing",
    ]
    compiling = [p for p in seen if p.stage == "compiling" and p.units]
    assert [(p.done, p.units, p.index) for p in compiling] == [(1, 3, 2), (2, 3, 2), (3, 3, 2)]
    assert _imports(tmp_path / "a").strip() == "native"

    # A second checkout: the kept wheel, whose verdict is remembered, installs with no
    # source to build from and no test run again.
    again: list[BuildProgress] = []
    empty = ("--no-index", "--find-links", str(tmp_path / "nothing"))
    assert (
        ensure_llamacpp(
            again.append, folder=wheels, spec=SPEC, pip_args=empty, target=tmp_path / "b", tried=only
        )
        == wheel
    )
    assert [p.stage for p in again] == ["installing"]
    assert _imports(tmp_path / "b").strip() == "native"


def test_a_failed_build_names_the_compiler_error(tmp_path, buildable, monkeypatch) -> None:
    monkeypatch.setenv("FAKE_BUILD_FAIL", "1")
    offline = ("--no-index", "--find-links", str(fake_sdist(tmp_path / "index")))
    with pytest.raises(GlmdeskError) as caught:
        ensure_llamacpp(folder=tmp_path / "wheels", spec=SPEC, pip_args=offline, target=tmp_path / "t")
    assert caught.value.kind == "llamacpp_build_failed"
    assert "error: no compiler for this" in caught.value.message
    assert not list((tmp_path / "wheels").rglob("*.whl"))


def test_a_candidate_that_does_not_compile_is_passed_over(tmp_path, buildable, monkeypatch) -> None:
    monkeypatch.setenv("FAKE_BUILD_FAIL", "native")
    offline = ("--no-index", "--find-links", str(fake_sdist(tmp_path / "index")))
    verdicts: list = []
    wheel = ensure_llamacpp(
        folder=tmp_path / "wheels",
        spec=SPEC,
        pip_args=offline,
        target=tmp_path / "t",
        tried=llamacpp_build.CANDIDATES,
        verdicts=verdicts,
    )
    assert wheel.parent.name == "noamx" and [v.build for v in verdicts] == [
        "llama-cpp-python 0.3.36, noamx build"
    ]


def test_a_second_process_waits_for_the_lock_then_installs(tmp_path, buildable) -> None:
    sources, wheels = fake_sdist(tmp_path / "index"), tmp_path / "wheels"
    offline = ("--no-index", "--find-links", str(sources))
    wheels.mkdir()
    other = FileLock(str(wheels / ".build.lock"))
    other.acquire()
    waiting, seen, result = threading.Event(), [], {}

    def report(progress: BuildProgress) -> None:
        seen.append(progress.stage)
        if progress.stage == "waiting":
            waiting.set()

    def run() -> None:
        result["wheel"] = ensure_llamacpp(
            report, folder=wheels, spec=SPEC, pip_args=offline, target=tmp_path / "t", tried=(NATIVE,)
        )

    thread = threading.Thread(target=run)
    thread.start()
    assert waiting.wait(30), "the builder did not say it waits for the other build"
    assert seen == ["waiting"]
    other.release()
    thread.join(120)
    assert not thread.is_alive() and result["wheel"].exists()
    assert seen[:2] == ["waiting", "downloading"] and seen[-1] == "installing"


def test_why_it_cannot_build(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("GLMDESK_LLAMACPP_BUILD", raising=False)
    monkeypatch.delenv("CC", raising=False)
    monkeypatch.delenv("CXX", raising=False)
    monkeypatch.setattr(llamacpp_build.shutil, "which", lambda name: None)
    assert build_unavailable().params["reason"] == "no_compiler"
    assert ensure_llamacpp(folder=tmp_path / "wheels", spec=SPEC, build=False) is None  # _venv.sh: kept only
    with pytest.raises(GlmdeskError) as caught:  # no wheel kept and no compiler: said, not tried
        ensure_llamacpp(folder=tmp_path / "wheels", spec=SPEC)
    assert caught.value.kind == "llamacpp_unbuildable" and "compiler" in caught.value.message
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    assert build_unavailable().params["reason"] == "packaged"
    monkeypatch.setenv("GLMDESK_LLAMACPP_BUILD", "0")
    assert build_unavailable().params["reason"] == "turned_off"


def test_progress_lines_and_the_requirement() -> None:
    assert stage_of("[ 45%] Building CXX object src/llama.cpp.o") == BuildProgress(
        "compiling", 2, done=45, units=100
    )
    assert stage_of("  [12/150] Building C object ggml.c.o") == BuildProgress(
        "compiling", 2, done=12, units=150
    )
    assert stage_of("Collecting llama-cpp-python") is None
    wanted = Requirement(llamacpp_build.requirement())  # pyproject's llamacpp extra
    assert (
        wanted.name == "llama-cpp-python" and "0.3.36" in wanted.specifier and "0.4.0" not in wanted.specifier
    )


def test_looking_for_pip_leaves_setuptools_importable_for_the_compiler(tmp_path) -> None:
    """The window checks whether llama.cpp can be built (is pip there?) before a load that
    compiles the decode step; torch.compile imports setuptools, which failed with an
    AssertionError on Python 3.11 once the import system had been asked for pip."""
    import os

    code = (
        "from glmdesk.engine.llamacpp_build import build_unavailable\n"
        "build_unavailable()\n"
        "import setuptools\n"
        "print('importable')\n"
    )
    env = {**os.environ, "GLMDESK_LLAMACPP_BUILD": "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "importable", out.stderr[-2000:]


def test_the_candidates_for_this_cpu() -> None:
    assert [c.name for c in llamacpp_build.candidates(amx=True)] == ["native", "noamx", "portable"]
    assert [c.name for c in llamacpp_build.candidates(amx=False)] == ["native", "portable"]
    assert "GGML_AMX_TILE" not in NATIVE.cmake_args and "-DLLAVA_BUILD=OFF" in NATIVE.cmake_args
    assert "-DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF" in NOAMX.cmake_args
    assert "-DGGML_NATIVE=OFF" in PORTABLE.cmake_args and "-DGGML_AMX_TILE=OFF" in PORTABLE.cmake_args
    assert [c.name for c in llamacpp_build.candidates(amx=None)] in (
        ["native", "portable"],
        ["native", "noamx", "portable"],
    )


def test_native_without_amx_tells_the_compiler(monkeypatch) -> None:
    """ggml's GGML_AMX_* options act only on a non-native build: -march=native turns AMX on
    where the CPU has it, so the compiler itself is told -mno-amx-*, after the user's flags."""
    monkeypatch.setenv("CFLAGS", "-O2")
    monkeypatch.setenv("CMAKE_ARGS", "-DGGML_CUDA=on")
    env = llamacpp_build._build_env(NOAMX)
    assert env["CFLAGS"] == "-O2 -mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
    assert env["CXXFLAGS"] == "-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
    assert env["CMAKE_ARGS"].endswith("-DGGML_AMX_BF16=OFF -DGGML_CUDA=on")
    assert llamacpp_build._build_env(NATIVE)["CFLAGS"] == "-O2"


def test_the_first_candidate_that_answers_is_installed(tmp_path, buildable, monkeypatch) -> None:
    """native crashes (SIGSEGV in the smoke child, as the AMX path does), noamx answers:
    noamx is installed, portable is never built."""
    monkeypatch.setenv("FAKE_NATIVE", "crash")
    sources, wheels = fake_sdist(tmp_path / "index"), tmp_path / "wheels"
    offline = ("--no-index", "--find-links", str(sources))
    seen: list[BuildProgress] = []
    verdicts: list = []
    wheel = ensure_llamacpp(
        seen.append,
        folder=wheels,
        spec=SPEC,
        pip_args=offline,
        target=tmp_path / "t",
        tried=llamacpp_build.CANDIDATES,
        verdicts=verdicts,
    )
    assert wheel.parent == wheels / "noamx" and _imports(tmp_path / "t").strip() == "noamx"
    assert [(v.outcome, v.signal) for v in verdicts] == [("crashed", "SIGSEGV"), ("passed", "")]
    assert verdicts[0].build == "llama-cpp-python 0.3.36, native build"
    assert not (wheels / "portable").exists()
    stages = [p.stage for p in seen if p.stage != "compiling"]
    assert stages == ["downloading", "testing", "downloading", "testing", "installing"]

    # Again: both verdicts are remembered; the crashing native wheel is neither tested
    # again nor installed.
    again: list = []
    assert (
        ensure_llamacpp(
            folder=wheels,
            spec=SPEC,
            pip_args=offline,
            target=tmp_path / "u",
            tried=llamacpp_build.CANDIDATES,
            verdicts=again,
        )
        == wheel
    )
    assert [v.outcome for v in again] == ["crashed", "passed"] and again == verdicts


@pytest.mark.parametrize(
    ("behaviour", "outcome", "words"),
    [
        ("crash", "crashed", "crashed (SIGSEGV)"),
        ("wrong", "wrong_answer", "answered its test prompt wrongly ('London.')"),
    ],
)
def test_no_candidate_answers_so_nothing_is_installed(
    tmp_path, buildable, monkeypatch, behaviour, outcome, words
) -> None:
    for name in ("NATIVE", "NOAMX", "PORTABLE"):
        monkeypatch.setenv(f"FAKE_{name}", behaviour)
    offline = ("--no-index", "--find-links", str(fake_sdist(tmp_path / "index")))
    verdicts: list = []
    with pytest.raises(GlmdeskError) as caught:
        ensure_llamacpp(
            folder=tmp_path / "wheels",
            spec=SPEC,
            pip_args=offline,
            target=tmp_path / "t",
            tried=(NATIVE, PORTABLE),
            verdicts=verdicts,
        )
    assert [v.outcome for v in verdicts] == [outcome, outcome]
    error = caught.value
    assert error.kind == "llamacpp_untrusted" and error.info.params["outcome"] == outcome
    assert error.message.startswith(
        f"llama.cpp (llama-cpp-python 0.3.36, portable build) {words}, so it is not used"
    )
    assert "rebuild llama.cpp with: glmdesk build-llamacpp" in error.message
    assert not (tmp_path / "t").exists()


def test_a_kept_wheel_without_a_verdict_is_tested_before_use(tmp_path, buildable) -> None:
    """A wheel kept in the wheel folder before the candidates existed (a native build)."""
    wheels = tmp_path / "wheels"
    fake_wheel(wheels, "crash")
    offline = ("--no-index", "--find-links", str(tmp_path / "nothing"))
    seen: list[BuildProgress] = []
    verdicts: list = []
    # scripts/_venv.sh --kept-only: the kept wheel crashes its test, so nothing is installed.
    with pytest.raises(GlmdeskError) as caught:
        ensure_llamacpp(
            seen.append,
            folder=wheels,
            spec=SPEC,
            pip_args=offline,
            target=tmp_path / "t",
            build=False,
            verdicts=verdicts,
            tried=llamacpp_build.CANDIDATES,
        )
    assert caught.value.info.params["signal"] == "SIGSEGV" and not (tmp_path / "t").exists()
    assert [p.stage for p in seen] == ["testing"] and [v.outcome for v in verdicts] == ["crashed"]

    # A kept wheel that answers is tested once, then installed.
    (wheels / "noamx").mkdir()
    fake_wheel(wheels / "noamx", "answer", built_as="noamx")
    seen.clear()
    wheel = ensure_llamacpp(
        seen.append,
        folder=wheels,
        spec=SPEC,
        pip_args=offline,
        target=tmp_path / "t",
        build=False,
        tried=llamacpp_build.CANDIDATES,
    )
    assert wheel.parent == wheels / "noamx" and [p.stage for p in seen] == ["testing", "installing"]
    assert _imports(tmp_path / "t").strip() == "noamx"
