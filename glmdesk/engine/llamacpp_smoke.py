"""Trust a llama.cpp build only after it has answered: the smoke test, in a child process.

llama.cpp can kill the process that runs it with a signal Python cannot catch (its AMX
matrix path on some Xeons, upstream llama.cpp #20824: ``ldtilecfg`` in
``ggml_backend_amx_mul_mat`` on any prompt batch of two tokens or more). So before glmdesk
uses a build it has not used before (built, found in the wheel folder, or installed), a
child process loads the embedded model with it and answers :data:`PROMPT` (more than 64
tokens, decoded in one batch: ``n_batch`` 512) greedily; the answer must hold
:data:`EXPECTED`. The :class:`Verdict` is remembered per build in glmdesk's cache folder
(:func:`glmdesk.core.paths.llamacpp_verdicts_file`), keyed by llama-cpp-python's version and the SHA-256 of the
build's shared libraries, so the test runs once per build and machine.

A build is a folder that holds the ``llama_cpp`` package (and its ``*.dist-info``): the
environment's ``site-packages``, or a wheel unpacked into a temporary folder
(:func:`unpacked_wheel`), which the child puts first on its ``sys.path``; nothing is
installed to test it.

Run as a script (``python -m glmdesk.engine.llamacpp_smoke [--wheel FILE]``) it prints the
verdict of the installed build (or of a wheel) and exits 0 when it passed, 1 when not.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from glmdesk.core.errors import ErrorInfo

#: Facts, then the question: 83 tokens of SmolLM2's vocabulary (at least 64: a batch of
#: many rows, on llama.cpp's matrix-matrix kernels; the AMX crash needs only two).
PROMPT = (
    "Paris is the capital of France. Berlin is the capital of Germany. Rome is the capital "
    "of Italy. Madrid is the capital of Spain. Tokyo is the capital of Japan. Ottawa is the "
    "capital of Canada. Cairo is the capital of Egypt. Lisbon is the capital of Portugal. "
    "Vienna is the capital of Austria. Athens is the capital of Greece.\n"
    "Question: What is the capital of France?\nAnswer:"
)
#: The word a working build answers :data:`PROMPT` with (greedy decoding).
EXPECTED = "Paris"
#: Prompt tokens the test needs at least (one batch: the matrix-matrix path).
MIN_PROMPT_TOKENS = 64
#: Seconds the child may take (load, prompt, 8 tokens) on two busy cores.
TIMEOUT_S = 180.0
_LIBRARY_SUFFIXES = (".so", ".dylib", ".dll")


@dataclass(frozen=True)
class Verdict:
    """What one build did with the smoke test.

    Attributes:
        outcome: ``passed``; ``crashed`` (killed by a signal); ``wrong_answer`` (answered
            without :data:`EXPECTED`); ``failed`` (could not load or answer: an exception,
            an exit status); ``timeout`` (not remembered: a busy machine may pass later).
        build: ``llama-cpp-python VERSION`` and the candidate's name when known
            (``native``, ``noamx``, ``portable``).
        key: ``VERSION:DIGEST`` (the first 16 hex digits of the libraries' SHA-256).
        signal: The signal's name (``SIGSEGV``) when ``crashed``, else ``""``.
        answer: The child's answer (``passed``, ``wrong_answer``) or its last error line.
        seconds: Wall time of the child, in seconds.
    """

    outcome: str
    build: str
    key: str
    signal: str = ""
    answer: str = ""
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return self.outcome == "passed"

    def error(self) -> ErrorInfo:
        """The ``llamacpp_untrusted`` error that says what happened and what to do."""
        if self.outcome == "crashed":
            what = f"crashed ({self.signal})"
        elif self.outcome == "wrong_answer":
            what = f"answered its test prompt wrongly ({self.answer[:60]!r})"
        elif self.outcome == "timeout":
            what = "did not answer its test prompt in time"
        else:
            what = f"could not answer its test prompt ({self.answer[-120:]})"
        message = (
            f"llama.cpp ({self.build}) {what}, so it is not used: transformers answers instead. "
            "Keep transformers, or rebuild llama.cpp with: glmdesk build-llamacpp"
        )
        params = {"build": self.build, "outcome": self.outcome, "signal": self.signal, "answer": self.answer}
        return ErrorInfo("llamacpp_untrusted", message, params)


# Which build ------------------------------------------------------------------------------
def installed_root() -> Path | None:
    """The folder that holds the environment's ``llama_cpp`` package, or ``None``. Nothing
    is imported, and a ``llama_cpp`` this process imported earlier is not taken for it:
    ``sys.path`` is searched as a new process would (a build installed since, or put
    first on the path, is the one a child loads)."""
    import importlib.machinery

    spec = importlib.machinery.PathFinder.find_spec("llama_cpp")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0]).parent


_DIGESTS: dict[tuple, str] = {}


def build_key(root: Path) -> tuple[str, str]:
    """``(version, "VERSION:DIGEST")`` of the build in ``root``.

    The version is llama-cpp-python's, from the ``*.dist-info`` beside the package
    (``unknown`` without one); the digest is the SHA-256 of every shared library in
    ``llama_cpp/lib`` (by name, links followed once), its first 16 hex digits. Hashed once
    per process for each set of files (size and modification time).
    """
    version = "unknown"
    for info in sorted(root.glob("llama_cpp_python-*.dist-info")):  # its own, not all of site-packages
        version = info.name[len("llama_cpp_python-") : -len(".dist-info")]
    lib = root / "llama_cpp" / "lib"
    files = sorted(
        {p.resolve() for p in lib.iterdir() if any(s in p.name for s in _LIBRARY_SUFFIXES)}
        if lib.is_dir()
        else set()
    )
    stamp = tuple((str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in files)
    if stamp not in _DIGESTS:
        digest = hashlib.sha256()
        for path in files:
            digest.update(path.name.encode() + b"\0")
            with path.open("rb") as handle:
                for block in iter(lambda handle=handle: handle.read(1 << 20), b""):
                    digest.update(block)
        _DIGESTS[stamp] = digest.hexdigest()[:16]
    return version, f"{version}:{_DIGESTS[stamp]}"


@contextlib.contextmanager
def unpacked_wheel(wheel: Path) -> Iterator[Path]:
    """A wheel's files in a temporary folder (removed afterwards), to test it uninstalled."""
    with tempfile.TemporaryDirectory(prefix="glmdesk-llamacpp-") as folder:
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(folder)
        yield Path(folder)


# Remembered verdicts ----------------------------------------------------------------------
def _store() -> Path:
    from glmdesk.core.paths import llamacpp_verdicts_file

    return llamacpp_verdicts_file()


def _read_all() -> dict:
    try:
        data = json.loads(_store().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


#: Verdicts that are the build's own (kept): a child that could not run the test at all
#: (``failed``: a missing module, no model) or ran out of time says more about this
#: environment and moment than about the build, so it is tested again next time.
KEPT_OUTCOMES = ("passed", "crashed", "wrong_answer")


def remembered(key: str) -> Verdict | None:
    """The verdict remembered for the build ``key``, or ``None`` (also for an outcome
    that is not kept, :data:`KEPT_OUTCOMES`, written before that rule)."""
    entry = _read_all().get(key)
    if not isinstance(entry, dict):
        return None
    try:
        verdict = Verdict(**entry)
    except TypeError:
        return None
    return verdict if verdict.outcome in KEPT_OUTCOMES else None


def remember(verdict: Verdict) -> None:
    """Keep ``verdict`` for its build when its outcome is the build's own
    (:data:`KEPT_OUTCOMES`); written whole (``os.replace``)."""
    if verdict.outcome not in KEPT_OUTCOMES:
        return
    data = _read_all()
    data[verdict.key] = asdict(verdict)
    path = _store()
    temporary = path.with_suffix(f".{os.getpid()}.tmp")
    temporary.write_text(json.dumps(data, indent=1, sort_keys=True), encoding="utf-8")
    os.replace(temporary, path)


def installed_verdict() -> Verdict | None:
    """The remembered verdict of the environment's llama.cpp build (``None`` when it has
    none, or there is no build). Cheap: the libraries are hashed once per process."""
    root = installed_root()
    if root is None:
        return None
    return remembered(build_key(root)[1])


# The test ---------------------------------------------------------------------------------
def _child_command(root: Path | None, model: Path) -> list[str]:
    """The child's command line: this module's :func:`_child` (the frozen app: its entry
    script's ``--glmdesk-llamacpp-smoke``)."""
    where = [str(root)] if root is not None else [""]
    if getattr(sys, "frozen", False):
        return [sys.executable, "--glmdesk-llamacpp-smoke", *where, str(model)]
    return [sys.executable, "-m", "glmdesk.engine.llamacpp_smoke", "--child", *where, str(model)]


def run_smoke(root: Path | None = None, *, name: str = "", timeout: float = TIMEOUT_S) -> Verdict:
    """Run the smoke test on the build in ``root`` (``None``: the installed one) in a child
    process now, and remember its verdict.

    Args:
        root: A folder holding ``llama_cpp`` (put first on the child's ``sys.path``).
        name: The candidate's name for the verdict's ``build`` (``native``...).
        timeout: Seconds before the child is killed (verdict ``timeout``).

    Raises:
        GlmdeskError: ``model_not_found`` when the embedded model is not installed.
    """
    from glmdesk.engine.files.sources import embedded_gguf_path

    model = embedded_gguf_path()
    package = root if root is not None else installed_root()
    version, key = build_key(package) if package is not None else ("unknown", "unknown:none")
    build = f"llama-cpp-python {version}" + (f", {name} build" if name else "")
    start = time.perf_counter()
    try:
        done = subprocess.run(
            _child_command(root, model),
            capture_output=True,
            text=True,
            errors="replace",
            stdin=subprocess.DEVNULL,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return Verdict("timeout", build, key, seconds=time.perf_counter() - start)
    seconds = round(time.perf_counter() - start, 2)
    if done.returncode < 0:
        try:
            sig = signal.Signals(-done.returncode).name
        except ValueError:
            sig = f"signal {-done.returncode}"
        verdict = Verdict("crashed", build, key, signal=sig, seconds=seconds)
    elif done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        verdict = Verdict("failed", build, key, answer=lines[-1] if lines else "", seconds=seconds)
    else:
        answer = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
        outcome = "passed" if EXPECTED.lower() in answer.lower() else "wrong_answer"
        verdict = Verdict(outcome, build, key, answer=answer, seconds=seconds)
    remember(verdict)
    return verdict


def verdict_for(root: Path | None = None, *, name: str = "") -> Verdict:
    """The remembered verdict of the build in ``root`` (``None``: the installed one), else
    :func:`run_smoke` now."""
    package = root if root is not None else installed_root()
    if package is not None:
        known = remembered(build_key(package)[1])
        if known is not None:
            return known
    return run_smoke(root, name=name)


def _child(argv: list[str]) -> int:
    """In the child: ``[ROOT or "", MODEL]``. Loads ``MODEL`` with the build in ``ROOT`` and
    prints the greedy answer to :data:`PROMPT` on its last line."""
    root, model = argv
    if root:
        sys.path.insert(0, root)
    import llama_cpp  # pyright: ignore[reportMissingImports]  # built on the user's machine; may be absent

    llm = llama_cpp.Llama(model_path=model, n_ctx=512, n_batch=512, seed=0, verbose=False)
    tokens = llm.tokenize(PROMPT.encode("utf-8"))
    if len(tokens) < MIN_PROMPT_TOKENS:
        print(f"the prompt has {len(tokens)} tokens, fewer than {MIN_PROMPT_TOKENS}", file=sys.stderr)
        return 3
    out = llm.create_completion(PROMPT, max_tokens=8, temperature=0.0, top_k=1)
    # llama-cpp-python types the result as a response or a stream whatever stream= says (False here).
    print(out["choices"][0]["text"].replace("\n", " "), flush=True)  # pyright: ignore[reportIndexIssue]
    return 0


def main(argv: list[str]) -> int:
    """``--child ROOT MODEL`` (the test's child), or ``[--wheel FILE]``: print the verdict of
    the installed build or of a wheel; 0 when it passed."""
    if argv[:1] == ["--child"]:
        return _child(argv[1:])
    if argv[:1] == ["--wheel"]:
        with unpacked_wheel(Path(argv[1])) as root:
            verdict = verdict_for(root)
    elif installed_root() is None:
        print("llama-cpp-python is not installed.", file=sys.stderr)
        return 1
    else:
        verdict = verdict_for()
    line = verdict.error().message if not verdict.passed else f"llama.cpp ({verdict.build}) passed"
    print(f"{line} [{verdict.key}; answer {verdict.answer!r}]", file=sys.stderr)
    return 0 if verdict.passed else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
