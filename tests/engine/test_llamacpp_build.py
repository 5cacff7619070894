"""The llama.cpp builder on a fake package: pip builds a tiny sdist (an in-tree PEP 517
backend that prints CMake-like steps) into the wheel folder and installs it with
``--target``, offline (``--no-index --find-links``). Seconds, never a real compile."""

from __future__ import annotations

import io
import subprocess
import sys
import tarfile
import threading
from pathlib import Path

import pytest
from filelock import FileLock
from packaging.requirements import Requirement

from glmdesk.core.errors import GlmdeskError
from glmdesk.engine import llamacpp_build
from glmdesk.engine.llamacpp_build import BuildProgress, build_unavailable, ensure_llamacpp, stage_of

SPEC = "fake-llama-engine>=1,<2"

BACKEND = """
import os, sys, zipfile

def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    if os.environ.get("FAKE_BUILD_FAIL"):
        print("ggml.c:1:10: error: no compiler for this", flush=True)
        sys.exit(1)
    for n in (1, 2, 3):
        print(f"[{n}/3] Building C object ggml-{n}.c.o", flush=True)
    name = "fake_llama_engine-1.0-py3-none-any.whl"
    info = "fake_llama_engine-1.0.dist-info"
    files = {
        "fake_llama_engine/__init__.py": "ANSWER = 42\\n",
        f"{info}/METADATA": "Metadata-Version: 2.1\\nName: fake-llama-engine\\nVersion: 1.0\\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\\nGenerator: fake\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n",
    }
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w") as zf:
        for path, text in files.items():
            zf.writestr(path, text)
        zf.writestr(f"{info}/RECORD", "".join(f"{p},,\\n" for p in files) + f"{info}/RECORD,,\\n")
    return name
"""

PYPROJECT = """
[build-system]
requires = []
build-backend = "fake_backend"
backend-path = ["."]

[project]
name = "fake-llama-engine"
version = "1.0"
"""


def _sdist(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "fake_llama_engine-1.0.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        for name, text in (
            ("pyproject.toml", PYPROJECT),
            ("fake_backend.py", BACKEND),
            ("PKG-INFO", "Metadata-Version: 2.1\nName: fake-llama-engine\nVersion: 1.0\n"),
        ):
            data = text.encode()
            member = tarfile.TarInfo(f"fake_llama_engine-1.0/{name}")
            member.size = len(data)
            tar.addfile(member, io.BytesIO(data))
    return folder


def _imports(target: Path) -> str:
    code = "import fake_llama_engine; print(fake_llama_engine.ANSWER)"
    env = {"PYTHONPATH": str(target), "PATH": ""}
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True).stdout


@pytest.fixture
def buildable(monkeypatch):
    """A compiler 'found' whatever the machine has (the fake build needs none)."""
    monkeypatch.setattr(llamacpp_build.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.delenv("GLMDESK_LLAMACPP_BUILD", raising=False)


def test_builds_once_with_stages_then_reuses_the_wheel(tmp_path, buildable) -> None:
    sources, wheels = _sdist(tmp_path / "index"), tmp_path / "wheels"
    seen: list[BuildProgress] = []
    offline = ("--no-index", "--no-cache-dir", "--find-links", str(sources))
    wheel = ensure_llamacpp(seen.append, folder=wheels, spec=SPEC, pip_args=offline, target=tmp_path / "a")
    assert wheel.parent == wheels and wheel.name.startswith("fake_llama_engine-1.0")
    assert [p.stage for p in seen][0] == "downloading" and seen[-1].stage == "installing"
    compiling = [p for p in seen if p.stage == "compiling" and p.units]
    assert [(p.done, p.units, p.index) for p in compiling] == [(1, 3, 2), (2, 3, 2), (3, 3, 2)]
    assert _imports(tmp_path / "a").strip() == "42"

    # A second checkout: the kept wheel installs with no source to build from at all.
    again: list[BuildProgress] = []
    empty = ("--no-index", "--no-cache-dir", "--find-links", str(tmp_path / "nothing"))
    assert (
        ensure_llamacpp(again.append, folder=wheels, spec=SPEC, pip_args=empty, target=tmp_path / "b")
        == wheel
    )
    assert [p.stage for p in again] == ["installing"]
    assert _imports(tmp_path / "b").strip() == "42"


def test_a_failed_build_names_the_compiler_error(tmp_path, buildable, monkeypatch) -> None:
    monkeypatch.setenv("FAKE_BUILD_FAIL", "1")
    offline = ("--no-index", "--no-cache-dir", "--find-links", str(_sdist(tmp_path / "index")))
    with pytest.raises(GlmdeskError) as caught:
        ensure_llamacpp(folder=tmp_path / "wheels", spec=SPEC, pip_args=offline, target=tmp_path / "t")
    assert caught.value.kind == "llamacpp_build_failed"
    assert "error: no compiler for this" in caught.value.message
    assert not list((tmp_path / "wheels").glob("*.whl"))


def test_a_second_process_waits_for_the_lock_then_installs(tmp_path, buildable) -> None:
    sources, wheels = _sdist(tmp_path / "index"), tmp_path / "wheels"
    offline = ("--no-index", "--no-cache-dir", "--find-links", str(sources))
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
            report, folder=wheels, spec=SPEC, pip_args=offline, target=tmp_path / "t"
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
