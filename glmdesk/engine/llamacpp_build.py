"""Build llama-cpp-python once, keep its wheel, install it into the running environment,
and only a build that has answered: the fastest candidate that passes the smoke test.

PyPI has llama-cpp-python as an sdist only, so the llama.cpp engine needs a C/C++
compiler and several minutes the first time. :func:`ensure_llamacpp` does it without Qt,
for the window (on a thread of its own), ``glmdesk build-llamacpp`` and the test
environment (``scripts/_venv.sh dev``) alike, trying :func:`candidates` in order (the
fastest first: ``native``, AMX where the CPU has it; ``noamx``, native with AMX compiled
out; ``portable``, ``GGML_NATIVE=OFF``). For each one:

1. **downloading**: ``pip wheel --no-deps --no-cache-dir`` fetches the sdist and its build
   tools (never pip's cached wheel: it may have been built with other flags);
2. **compiling**: the same pip run compiles llama.cpp (CMake's ``[n/m]`` or ``[ p%]``
   lines give the progress); the wheel goes to ``wheel_dir()/CANDIDATE/``, where another
   checkout (another ``.venv``) finds it;
3. **testing**: :mod:`glmdesk.engine.llamacpp_smoke` answers a prompt batch with the
   wheel unpacked in a temporary folder, in a child process (a kept wheel with a
   remembered verdict skips it); a crash or a wrong answer moves on to the next candidate;
4. **installing**: ``pip install`` of the first wheel that passed (a kept wheel that
   passed skips 1 to 3: seconds).

A wheel in the wheel folder itself (kept before the candidates existed: a native build)
is the ``native`` candidate's, tested like any other before use. A lock file in the wheel
folder (``filelock``) keeps two glmdesk processes from building at once; the second waits
and then installs the first one's wheel. The requirement is the ``llamacpp`` extra of
glmdesk's own metadata, so the range stays in pyproject.toml.

Run as a script: ``--kept-only`` installs a kept wheel that passes (builds nothing),
``--install`` builds what it must and installs (``scripts/_venv.sh dev``).
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from glmdesk.core.errors import ErrorInfo, GlmdeskError
from glmdesk.engine import llamacpp_smoke
from glmdesk.engine.llamacpp_smoke import Verdict

#: The build's stages, in order (``BuildProgress.index`` counts from 1).
STAGES = ("downloading", "compiling", "testing", "installing")
#: Used when glmdesk's metadata cannot be read (a source tree run without installing).
FALLBACK_REQUIREMENT = "llama-cpp-python>=0.3.36,<0.4"
_STEP = re.compile(r"^\s*\[\s*(\d+)\s*/\s*(\d+)\s*\]")  # ninja: [12/150]
_PERCENT = re.compile(r"^\s*\[\s*(\d{1,3})%\s*\]")  # make: [ 45%]
_TOOL_ERROR = re.compile(r": (fatal )?error:|CMake Error|No CMAKE_C(XX)?_COMPILER")
_ANY_ERROR = re.compile(r"error", re.IGNORECASE)


@dataclass(frozen=True)
class BuildProgress:
    """One step of the build, for a status bar or a terminal line.

    Attributes:
        stage: ``waiting`` (another process holds the lock), or one of :data:`STAGES`.
        index: The stage's number, 1 to ``total`` (0 while waiting).
        total: Number of stages (``len(STAGES)``).
        done: Compile steps done (or percent when ``units`` is 100); 0 when unknown.
        units: Compile steps in all (0 when unknown).
    """

    stage: str
    index: int
    total: int = len(STAGES)
    done: int = 0
    units: int = 0


@dataclass(frozen=True)
class Candidate:
    """One way to build llama.cpp, tried in :func:`candidates`' order.

    Attributes:
        name: ``native``, ``noamx`` or ``portable`` (also the wheel's subfolder).
        cmake_args: CMake options for llama.cpp (``CMAKE_ARGS``), before the user's own.
        cflags: Compiler flags (``CFLAGS`` and ``CXXFLAGS``), after the user's own.
    """

    name: str
    cmake_args: str
    cflags: str = ""


_NO_AMX = "-DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
#: Every candidate, fastest first. ``-DLLAVA_BUILD=OFF``: not the multimodal library.
#: ggml's ``GGML_AMX_*`` options act only when ``GGML_NATIVE`` is off: a native build
#: compiles with ``-march=native``, which turns AMX on where the CPU has it (ggml's AMX
#: path is built on ``__AMX_INT8__``), so ``noamx`` also tells the compiler
#: ``-mno-amx-*`` (GCC and Clang: an explicit ``-mno-`` flag wins over ``-march``).
CANDIDATES = (
    Candidate("native", "-DLLAVA_BUILD=OFF -DGGML_NATIVE=ON"),
    Candidate(
        "noamx",
        f"-DLLAVA_BUILD=OFF -DGGML_NATIVE=ON {_NO_AMX}",
        "-mno-amx-tile -mno-amx-int8 -mno-amx-bf16",
    ),
    Candidate("portable", f"-DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF {_NO_AMX}"),
)


def cpu_has_amx(cpuinfo: Path = Path("/proc/cpuinfo")) -> bool | None:
    """Whether the CPU lists AMX (``amx_tile``) in ``/proc/cpuinfo``; ``None`` when that
    file cannot be read (not Linux)."""
    try:
        text = cpuinfo.read_text(errors="replace")
    except OSError:
        return None
    return "amx_tile" in text


def candidates(amx: bool | None = None) -> tuple[Candidate, ...]:
    """The candidates for this CPU, in order: ``noamx`` only where the CPU lists AMX
    (elsewhere it is the same build as ``native``, and ``-mno-amx-*`` is an x86 flag).

    Args:
        amx: Whether the CPU has AMX; ``None`` reads :func:`cpu_has_amx`.
    """
    amx = cpu_has_amx() if amx is None else amx
    return tuple(c for c in CANDIDATES if c.name != "noamx" or amx)


def requirement() -> str:
    """glmdesk's ``llamacpp`` extra (``llama-cpp-python>=...,<...``), from its installed
    metadata; :data:`FALLBACK_REQUIREMENT` when glmdesk is not installed."""
    from importlib.metadata import PackageNotFoundError, requires

    try:
        lines = requires("glmdesk") or []
    except PackageNotFoundError:
        return FALLBACK_REQUIREMENT
    for line in lines:
        spec, _, marker = line.partition(";")
        if "llama-cpp-python" in spec and "llamacpp" in marker:
            return spec.strip().replace(" ", "")
    return FALLBACK_REQUIREMENT


def build_unavailable() -> ErrorInfo | None:
    """Why llama.cpp cannot be built here (kind ``llamacpp_unbuildable``), or ``None``.

    Reasons: the packaged app (``sys.frozen``: no pip, no build tools), no pip in this
    environment, no C and C++ compiler on ``PATH`` (``cc``/``gcc``/``clang`` and
    ``c++``/``g++``/``clang++``; ``CC``/``CXX`` are honoured), or the build turned off
    with ``GLMDESK_LLAMACPP_BUILD=0``.
    """

    def why(reason: str, message: str) -> ErrorInfo:
        return ErrorInfo("llamacpp_unbuildable", message, {"reason": reason})

    if os.environ.get("GLMDESK_LLAMACPP_BUILD", "1").strip() == "0":
        return why("turned_off", "Building llama.cpp is turned off (GLMDESK_LLAMACPP_BUILD=0).")
    if getattr(sys, "frozen", False):
        return why("packaged", "The packaged app cannot build llama.cpp (it has no Python build tools).")
    # Looked up on sys.path directly: asking the import system for "pip" makes setuptools'
    # distutils hook (Python < 3.12) stand down for the whole process, and torch.compile's
    # later import of setuptools then fails (the decode step could no longer compile).
    if importlib.machinery.PathFinder.find_spec("pip") is None:
        return why("no_pip", "This Python environment has no pip to build llama.cpp with.")

    def found(env: str, names: Sequence[str]) -> bool:
        given = os.environ.get(env, "").split()
        return any(shutil.which(name) for name in ([given[0]] if given else names))

    if not (found("CC", ("cc", "gcc", "clang")) and found("CXX", ("c++", "g++", "clang++"))):
        return why(
            "no_compiler",
            "llama.cpp cannot be built: no C/C++ compiler was found (install gcc and g++, or clang).",
        )
    return None


def cached_wheel(folder: Path, spec: str) -> Path | None:
    """The newest wheel in ``folder`` that satisfies ``spec`` and installs on this
    Python (its tags among ``packaging.tags.sys_tags()``), or ``None``."""
    from packaging.requirements import Requirement
    from packaging.tags import sys_tags
    from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename

    wanted = Requirement(spec)
    supported = set(sys_tags())
    best: tuple | None = None
    for path in folder.glob("*.whl") if folder.is_dir() else ():
        try:
            name, version, _build, tags = parse_wheel_filename(path.name)
        except InvalidWheelFilename:
            continue
        if canonicalize_name(name) != canonicalize_name(wanted.name) or not (tags & supported):
            continue
        if wanted.specifier.contains(version, prereleases=True) and (best is None or version > best[0]):
            best = (version, path)
    return None if best is None else best[1]


def stage_of(line: str) -> BuildProgress | None:
    """The stage a line of ``pip wheel -v`` output shows, or ``None`` for other lines."""
    if m := _STEP.match(line):
        return BuildProgress("compiling", 2, done=int(m.group(1)), units=int(m.group(2)))
    if m := _PERCENT.match(line):
        return BuildProgress("compiling", 2, done=int(m.group(1)), units=100)
    if line.startswith("Building wheel for") or "Configuring done" in line:
        return BuildProgress("compiling", 2)
    return None


class _Runner:
    """Runs pip, reports parsed stages, keeps the last lines for an error sentence."""

    def __init__(self, report: Callable[[BuildProgress], None], cancel: threading.Event | None) -> None:
        self.report, self.cancel = report, cancel
        self.tail: deque[str] = deque(maxlen=60)

    def run(self, args: list[str], env: dict[str, str], parse: bool) -> None:
        # The compile runs at a lower priority: the answers meanwhile keep their cores.
        preexec = _lower_priority if os.name == "posix" else None
        creationflags = 0  # Popen's default
        if os.name == "nt":
            creationflags = subprocess.BELOW_NORMAL_PRIORITY_CLASS
        process = subprocess.Popen(
            args,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
            errors="replace",
            env=env,
            preexec_fn=preexec,
            creationflags=creationflags,
        )
        if self.cancel is not None:
            threading.Thread(target=self._kill_on_cancel, args=(process, self.cancel), daemon=True).start()
        try:
            last = None
            for raw in process.stdout or ():  # a pipe (stdout=PIPE): never None
                line = raw.rstrip()
                if line:
                    self.tail.append(line)
                progress = stage_of(line) if parse else None
                if progress is not None and progress != last:
                    last = progress
                    self.report(progress)
            code = process.wait()
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        if self.cancel is not None and self.cancel.is_set():
            raise GlmdeskError("build_cancelled", "Building llama.cpp was cancelled.")
        if code != 0:
            error = self._last_error()
            raise GlmdeskError(
                "llamacpp_build_failed",
                f"llama.cpp could not be built (pip exited with {code}): {error}",
                detail=error,
                output="\n".join(self.tail),
            )

    @staticmethod
    def _kill_on_cancel(process: subprocess.Popen, cancel: threading.Event) -> None:
        while process.poll() is None:
            if cancel.wait(0.5):
                process.terminate()
                return

    def _last_error(self) -> str:
        """The compiler's or CMake's last error line, else pip's, else the last line."""
        for pattern in (_TOOL_ERROR, _ANY_ERROR):
            for line in reversed(self.tail):
                if pattern.search(line):
                    return line.strip()
        return self.tail[-1].strip() if self.tail else "no output"


def _lower_priority() -> None:
    """In the pip child before it runs (POSIX): nice 10, so decoding keeps priority."""
    os.nice(10)


def _build_env(candidate: Candidate | None = None) -> dict[str, str]:
    env = dict(os.environ)
    # Only the libraries glmdesk loads (not the multimodal one), with every core; the
    # user's own CMAKE_ARGS (a CUDA build...) come after the candidate's.
    if candidate is not None:
        env["CMAKE_ARGS"] = f"{candidate.cmake_args} {os.environ.get('CMAKE_ARGS', '')}".strip()
        for name in ("CFLAGS", "CXXFLAGS") if candidate.cflags else ():
            env[name] = f"{os.environ.get(name, '')} {candidate.cflags}".strip()
    env.setdefault("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 1))
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def _build_lock(folder: Path, report: Callable[[BuildProgress], None], cancel: threading.Event | None):
    """The wheel folder's build lock, acquired: at once, or after another glmdesk's build
    (``waiting`` reported while it runs).

    Raises:
        GlmdeskError: ``build_cancelled`` when ``cancel`` is set while waiting.
    """
    from filelock import FileLock, Timeout

    lock = FileLock(str(folder / ".build.lock"))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        report(BuildProgress("waiting", 0))
        while True:  # another glmdesk is building: wait for its wheel
            if cancel is not None and cancel.is_set():
                raise GlmdeskError("build_cancelled", "Building llama.cpp was cancelled.") from None
            try:
                lock.acquire(timeout=1)
                break
            except Timeout:
                continue
    return lock


def _build_wheel(
    runner: _Runner,
    pip: list[str],
    folder: Path,
    spec: str,
    pip_args: Sequence[str],
    report: Callable[[BuildProgress], None],
    candidate: Candidate,
) -> Path:
    """Build ``spec``'s wheel the ``candidate``'s way into ``folder`` with pip (source
    downloaded, compiled; pip's cache of built wheels is not used).

    Raises:
        GlmdeskError: ``llamacpp_unbuildable``, ``llamacpp_build_failed`` (pip's last
            error line, or no wheel for this Python), ``build_cancelled``.
    """
    error = build_unavailable()
    if error is not None:
        raise GlmdeskError(error.kind, error.message, **error.params)
    report(BuildProgress("downloading", 1))
    folder.mkdir(parents=True, exist_ok=True)
    args = [*pip, "wheel", "-v", "--no-deps", "--no-cache-dir", "--wheel-dir", str(folder), *pip_args, spec]
    runner.run(args, _build_env(candidate), parse=True)
    wheel = cached_wheel(folder, spec)
    if wheel is None:
        raise GlmdeskError(
            "llamacpp_build_failed",
            "llama.cpp was built, but no wheel that fits this Python came out of it.",
            detail="no wheel that fits this Python came out of the build",
            output="\n".join(runner.tail),
        )
    return wheel


def kept_wheel(folder: Path, candidate: Candidate, spec: str) -> Path | None:
    """The candidate's kept wheel (``folder/NAME/``); for ``native`` also a wheel kept in
    ``folder`` itself before the candidates existed (a native build). ``None`` when none."""
    found = cached_wheel(folder / candidate.name, spec)
    if found is None and candidate.name == "native":
        found = cached_wheel(folder, spec)
    return found


def wheel_verdict(wheel: Path, candidate: Candidate, report: Callable[[BuildProgress], None]) -> Verdict:
    """The smoke verdict of ``wheel``: remembered, else tested now (``testing`` reported),
    unpacked in a temporary folder: nothing is installed to test it."""
    with llamacpp_smoke.unpacked_wheel(wheel) as root:
        known = llamacpp_smoke.remembered(llamacpp_smoke.build_key(root)[1])
        if known is not None:
            return known
        report(BuildProgress("testing", 3))
        return llamacpp_smoke.run_smoke(root, name=candidate.name)


def ensure_llamacpp(
    report: Callable[[BuildProgress], None] | None = None,
    cancel: threading.Event | None = None,
    *,
    folder: Path | None = None,
    spec: str | None = None,
    pip_args: Sequence[str] = (),
    target: Path | None = None,
    build: bool = True,
    tried: Sequence[Candidate] | None = None,
    verdicts: list[Verdict] | None = None,
) -> Path | None:
    """Install the first candidate's llama-cpp-python that passes the smoke test, from its
    kept wheel when there is one, else built now.

    Args:
        report: Called with each :class:`BuildProgress` (on the calling thread).
        cancel: Set it to stop: the pip process is terminated.
        folder: Where wheels are kept (default :func:`glmdesk.core.paths.wheel_dir`).
        spec: The requirement (default :func:`requirement`).
        pip_args: More pip options for both steps (tests: ``--no-index --find-links``).
        target: Install into this folder (``pip --target``) instead of this environment.
        build: ``False``: only install a kept wheel that passes (``--kept-only``).
        tried: The candidates, in order (default :func:`candidates`).
        verdicts: When given, each candidate's :class:`Verdict` is appended to it.

    Returns:
        The wheel that was installed; ``None`` when ``build`` is off and no kept wheel passes.

    Raises:
        GlmdeskError: ``llamacpp_unbuildable`` (see :func:`build_unavailable`),
            ``llamacpp_build_failed`` with pip's last error line when no candidate
            compiled (one that does not compile is passed over), ``build_cancelled``,
            ``llamacpp_untrusted`` when no candidate passed (the last one's verdict).
    """
    from glmdesk.core.paths import wheel_dir

    report = report or (lambda _progress: None)
    folder = folder or wheel_dir()
    folder.mkdir(parents=True, exist_ok=True)
    spec = spec or requirement()
    runner = _Runner(report, cancel)
    pip = [sys.executable, "-m", "pip"]
    seen: list[Verdict] = [] if verdicts is None else verdicts
    lock = _build_lock(folder, report, cancel)
    try:
        chosen, failed = None, None
        for candidate in candidates() if tried is None else tried:
            wheel = kept_wheel(folder, candidate, spec)
            if wheel is None and not build:
                continue
            if wheel is None:
                try:
                    wheel = _build_wheel(
                        runner, pip, folder / candidate.name, spec, pip_args, report, candidate
                    )
                except GlmdeskError as exc:
                    if exc.kind != "llamacpp_build_failed":
                        raise  # no compiler, cancelled: no other candidate builds either
                    failed = exc  # this candidate's flags do not compile here: the next one
                    continue
            verdict = wheel_verdict(wheel, candidate, report)
            seen.append(verdict)
            if verdict.passed:
                chosen = wheel
                break
        if chosen is None and failed is not None and not seen:
            raise failed
        if chosen is None and (build or seen):
            if not seen:
                raise GlmdeskError("llamacpp_build_failed", "No llama.cpp build was tried.", detail="none")
            error = seen[-1].error()
            raise GlmdeskError(error.kind, error.message, **error.params)
        if chosen is None:
            return None
        report(BuildProgress("installing", 4))
        where = ["--target", str(target), "--upgrade"] if target is not None else []
        install = [*pip, "install", "-q", "--no-deps", "--force-reinstall", *where, *pip_args, str(chosen)]
        runner.run(install, _build_env(), parse=False)
    finally:
        lock.release()
    importlib.invalidate_caches()
    return chosen


def _main(argv: Sequence[str]) -> int:
    """``--kept-only``: install a kept wheel that passes, build nothing (always 0);
    ``--install``: build what it must and install (``scripts/_venv.sh dev``): 0 when a
    build passed, 1 when none did or none could be built."""

    def report(p: BuildProgress) -> None:
        if p.stage != "compiling":
            print(f"llama.cpp: {p.stage}", file=sys.stderr, flush=True)

    verdicts: list[Verdict] = []
    if "--install" in argv and llamacpp_smoke.installed_root() is not None:
        installed = llamacpp_smoke.verdict_for()
        print(f"llama.cpp: the installed build {installed.outcome} its test", file=sys.stderr)
        if installed.passed:
            return 0
    try:
        found = ensure_llamacpp(report, build="--install" in argv, verdicts=verdicts)
    except GlmdeskError as exc:
        print(f"glmdesk: llama.cpp is not installed: {exc.message}", file=sys.stderr)
        return 0 if "--kept-only" in argv else 1
    finally:
        for verdict in verdicts:
            print(f"  {verdict.build}: {verdict.outcome} {verdict.signal}".rstrip(), file=sys.stderr)
    if found is not None:
        print(f"llama.cpp installed from {found}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))
