"""Fake llama.cpp builds for the smoke test and the builder: a ``llama_cpp`` package whose
``Llama`` answers the smoke prompt rightly (``answer``), wrongly (``wrong``), or kills its
process with SIGSEGV on the prompt batch as llama.cpp's AMX path does (``crash``), with a
``lib/libllama.so`` whose bytes name the build (the verdict's key hashes them) and the
``llama_cpp_python`` dist-info that gives the version.

Three forms, all real files a child process imports: a folder (:func:`fake_build`), a
wheel (:func:`fake_wheel`), and an sdist whose PEP 517 backend prints CMake-like steps
and picks the behaviour from ``CMAKE_ARGS`` as the candidates set them
(:func:`fake_sdist`; ``FAKE_NATIVE``, ``FAKE_NOAMX``, ``FAKE_PORTABLE`` in the
environment of the build say what each candidate does; ``FAKE_BUILD_FAIL`` is ``1`` for
a build that fails to compile, or the one candidate that does). No compiler runs.
"""

from __future__ import annotations

import importlib
import io
import os
import tarfile
import zipfile
from pathlib import Path

VERSION = "0.3.36"
SPEC = f"llama-cpp-python=={VERSION}"
DIST_INFO = f"llama_cpp_python-{VERSION}.dist-info"
WHEEL_NAME = f"llama_cpp_python-{VERSION}-py3-none-any.whl"

ENGINE = """
import os, signal

BEHAVIOUR = {behaviour!r}
BUILT_AS = {built_as!r}


class Llama:
    def __init__(self, model_path, **kwargs):
        self.model_path = model_path

    def tokenize(self, text):
        return list(range(len(text.split())))

    def create_completion(self, prompt, **kwargs):
        if BEHAVIOUR == "crash":
            os.kill(os.getpid(), signal.SIGSEGV)
        return {{"choices": [{{"text": " London." if BEHAVIOUR == "wrong" else " Paris."}}]}}
"""


def build_files(behaviour: str, built_as: str) -> dict[str, bytes]:
    """The files of a fake build: relative path -> contents."""
    metadata = f"Metadata-Version: 2.1\nName: llama_cpp_python\nVersion: {VERSION}\n"
    return {
        "llama_cpp/__init__.py": ENGINE.format(behaviour=behaviour, built_as=built_as).encode(),
        "llama_cpp/lib/libllama.so": f"fake library: {behaviour} {built_as}".encode(),
        f"{DIST_INFO}/METADATA": metadata.encode(),
        f"{DIST_INFO}/WHEEL": b"Wheel-Version: 1.0\nGenerator: fake\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }


def fake_build(root: Path, behaviour: str, built_as: str = "test") -> Path:
    """A fake build in ``root`` (the folder to put on ``sys.path``); returns ``root``."""
    for name, data in build_files(behaviour, built_as).items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return root


def install_on_path(root: Path, monkeypatch) -> Path:
    """Make the build in ``root`` the installed one: first on this process's ``sys.path``
    and on its children's ``PYTHONPATH`` (undone by ``monkeypatch``)."""
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, (str(root), os.environ.get("PYTHONPATH")))))
    importlib.invalidate_caches()
    return root


def write_wheel(path: Path, files: dict[str, bytes]) -> Path:
    """A wheel at ``path`` holding ``files`` and their RECORD."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
        record = "".join(f"{name},,\n" for name in files) + f"{DIST_INFO}/RECORD,,\n"
        archive.writestr(f"{DIST_INFO}/RECORD", record)
    return path


def fake_wheel(folder: Path, behaviour: str, built_as: str = "kept") -> Path:
    """A fake build's wheel in ``folder`` (as a wheel kept from an earlier build)."""
    return write_wheel(folder / WHEEL_NAME, build_files(behaviour, built_as))


BACKEND = """
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import engine_files


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    args = os.environ.get("CMAKE_ARGS", "")
    if "GGML_NATIVE=OFF" in args:
        name = "portable"
    elif "GGML_AMX_TILE=OFF" in args:
        name = "noamx"
    else:
        name = "native"
    if os.environ.get("FAKE_BUILD_FAIL") in ("1", name):
        print("ggml.c:1:10: error: no compiler for this", flush=True)
        sys.exit(1)
    behaviour = os.environ.get("FAKE_" + name.upper(), "answer")
    for n in (1, 2, 3):
        print(f"[{n}/3] Building C object ggml-{n}.c.o", flush=True)
    files = engine_files.build_files(behaviour, name)
    engine_files.write_wheel(engine_files.Path(wheel_directory) / engine_files.WHEEL_NAME, files)
    return engine_files.WHEEL_NAME
"""

PYPROJECT = f"""
[build-system]
requires = []
build-backend = "fake_backend"
backend-path = ["."]

[project]
name = "llama_cpp_python"
version = "{VERSION}"
"""


def fake_sdist(folder: Path) -> Path:
    """An sdist of the fake build in ``folder`` (for ``--no-index --find-links``); returns
    ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"llama_cpp_python-{VERSION}.tar.gz"
    own = Path(__file__).read_text(encoding="utf-8")
    with tarfile.open(path, "w:gz") as tar:
        for name, text in (
            ("pyproject.toml", PYPROJECT),
            ("fake_backend.py", BACKEND),
            ("engine_files.py", own),
            ("PKG-INFO", f"Metadata-Version: 2.1\nName: llama_cpp_python\nVersion: {VERSION}\n"),
        ):
            data = text.encode()
            member = tarfile.TarInfo(f"llama_cpp_python-{VERSION}/{name}")
            member.size = len(data)
            tar.addfile(member, io.BytesIO(data))
    return folder
