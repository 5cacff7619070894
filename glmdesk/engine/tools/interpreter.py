"""The code interpreter: model-written Python run in a separate IPython kernel process.

One :class:`CodeInterpreter` per conversation: an ``ipykernel`` process started and
driven with ``jupyter_client`` (the demos' choice too), so variables persist
between calls of one conversation. Guards:

- a time limit per run (default 60 s): the kernel is interrupted (SIGINT), and killed
  and restarted if it does not stop within :data:`INTERRUPT_GRACE_S`;
- an address-space limit (``RLIMIT_AS``) set on the kernel process before it execs
  Python (a launcher command in the kernel spec, no ``preexec_fn``);
- a fresh working folder per conversation (``paths.interpreter_dir``) that is the
  kernel's working directory and ``HOME``, so ``~`` and relative paths land there;
- :meth:`CodeInterpreter.kill` sends SIGKILL to the kernel's process group and
  returns at once; a run in progress on another thread ends within ~0.1 s.

What this does not prevent: the kernel runs as the user, with the user's file
permissions and network access. Absolute paths (``/home/you/...``) can be read and
written, and sockets can be opened. It is not a sandbox; OS isolation (a container,
a separate user, seccomp/landlock) would be needed for that.

Output comes back as a :class:`RunResult` (text, tracebacks without ANSI colours,
PNG images) and :meth:`RunResult.observation` words it for the model.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import queue
import re
import shutil
import signal
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from glmdesk.core.errors import GlmdeskError
from glmdesk.kernel_entry import kernel_argv

#: Seconds a run may take after an interrupt before the kernel is killed, in s.
INTERRUPT_GRACE_S = 3.0
#: Characters of output kept per run (the rest is cut, as THUDM's demo does).
MAX_OUTPUT_CHARS = 16_000
#: How often a run checks for kill and timeout, in s.
POLL_S = 0.1

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# Runs in the kernel's process before Python starts ipykernel: limit, then exec.
_LAUNCHER = (
    "import os, resource, sys; b = int(sys.argv[1]); "
    "resource.setrlimit(resource.RLIMIT_AS, (b, b)); "
    "os.execv(sys.executable, [sys.executable] + sys.argv[2:])"
)


def app_entry() -> list[str] | None:
    """``[sys.executable]`` in a packaged (PyInstaller) app, whose executable runs a
    kernel when given :data:`~glmdesk.kernel_entry.KERNEL_FLAG`; ``None`` from source."""
    return [sys.executable] if getattr(sys, "frozen", False) else None


@dataclass(frozen=True)
class RunResult:
    """What one run produced.

    Attributes:
        text: stdout, stderr, results and tracebacks in order (ANSI colours removed).
        images: PNG images displayed, each the file's bytes.
        status: ``ok``, ``error`` (an exception), ``timeout`` (time limit; the kernel
            was interrupted or restarted), ``killed`` (by :meth:`CodeInterpreter.kill`)
            or ``failed`` (the kernel died or could not start).
        restarted: True when the kernel was restarted, so earlier variables are gone.
        elapsed_s: Wall time of the run, in s.
    """

    text: str
    images: tuple[bytes, ...] = ()
    status: str = "ok"
    restarted: bool = False
    elapsed_s: float = 0.0

    def observation(self) -> str:
        """The result as the model reads it: the text, ``[Image]`` per image, and a
        sentence when the run was stopped."""
        parts = [self.text.rstrip("\n")] if self.text.strip() else []
        parts += ["[Image]"] * len(self.images)
        if self.status == "timeout":
            parts.append("Execution stopped: the time limit was reached.")
        elif self.status == "killed":
            parts.append("Execution was stopped by the user.")
        elif self.status == "failed":
            parts.append("The Python kernel stopped unexpectedly.")
        if self.restarted:
            parts.append("The kernel was restarted: variables defined earlier are gone.")
        return "\n".join(parts)


class CodeInterpreter:
    """A persistent IPython kernel for one conversation.

    Args:
        workdir: The conversation's working folder (created if missing); the
            kernel's cwd and ``HOME``.
        timeout_s: Default time limit per run, in s.
        memory_mib: Address-space limit of the kernel process, in MiB.
        entry: The command that starts the app's entry script, to run the kernel as
            ``entry --glmdesk-kernel ...`` (:mod:`glmdesk.kernel_entry`); default
            :func:`app_entry` (the executable in a packaged app, else ``python -m
            ipykernel_launcher``).

    The kernel starts on the first :meth:`run` (about 1-2 s). :meth:`run` blocks
    its caller (call it from a worker thread); :meth:`kill` may be called from any
    thread and never blocks for long.
    """

    def __init__(
        self, workdir: Path, timeout_s: float = 60.0, memory_mib: int = 2048, entry: list[str] | None = None
    ) -> None:
        self.workdir = Path(workdir)
        self.entry = app_entry() if entry is None else list(entry)
        self.timeout_s = float(timeout_s)
        self.memory_mib = int(memory_mib)
        self._km = None
        self._kc = None
        self._lock = threading.Lock()  # one run at a time
        self._killed = threading.Event()

    # -- lifecycle -------------------------------------------------------------------
    def _spec_dir(self) -> Path:
        spec = self.workdir / ".glmdesk-kernel" / "kernels" / "glmdesk-python"
        spec.mkdir(parents=True, exist_ok=True)
        limit = self.memory_mib * 1024 * 1024
        if self.entry is not None:  # the packaged app: it runs the kernel itself (kernel_entry)
            argv = kernel_argv(self.entry, limit)
        else:
            argv = [
                sys.executable,
                "-c",
                _LAUNCHER,
                str(limit),
                "-m",
                "ipykernel_launcher",
                "-f",
                "{connection_file}",
            ]
        kernel = {"argv": argv, "display_name": "glmdesk interpreter", "language": "python"}
        (spec / "kernel.json").write_text(json.dumps(kernel), encoding="utf-8")
        return spec.parent

    def _env(self) -> dict[str, str]:
        keep = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "SYSTEMROOT", "VIRTUAL_ENV", "PYTHONPATH")
        env = {k: os.environ[k] for k in keep if k in os.environ}
        home = str(self.workdir)
        env.update(HOME=home, USERPROFILE=home, IPYTHONDIR=str(self.workdir / ".ipython"))
        env.update(MPLBACKEND="module://matplotlib_inline.backend_inline", MALLOC_ARENA_MAX="2")
        env["PYTHONNOUSERSITE"] = "1"
        return env

    def start(self) -> None:
        """Start the kernel (no-op when running).

        Raises:
            GlmdeskError: ``interpreter_failed`` when it cannot start.
        """
        if self._km is not None and self._km.is_alive():
            return
        self._shutdown()
        from jupyter_client.kernelspec import KernelSpecManager
        from jupyter_client.manager import KernelManager

        self.workdir.mkdir(parents=True, exist_ok=True, mode=0o700)
        runtime = self.workdir / ".glmdesk-kernel"
        ksm = KernelSpecManager(kernel_dirs=[str(self._spec_dir())])
        km = KernelManager(kernel_name="glmdesk-python", kernel_spec_manager=ksm)
        km.connection_file = str(runtime / f"connection-{os.getpid()}-{id(self)}.json")
        try:
            km.start_kernel(cwd=str(self.workdir), env=self._env())
            kc = km.client()
            kc.start_channels()
            kc.wait_for_ready(timeout=60)
        except Exception as exc:
            with contextlib.suppress(Exception):
                km.shutdown_kernel(now=True)
            raise GlmdeskError(
                "interpreter_failed",
                f"The Python interpreter could not start: {exc.__class__.__name__}: {exc}",
                detail=f"{exc.__class__.__name__}: {exc}",
            ) from exc
        self._km, self._kc = km, kc

    @property
    def running(self) -> bool:
        """True while the kernel process is alive."""
        return self._km is not None and self._km.is_alive()

    def kill(self) -> None:
        """Kill the kernel now (SIGKILL to its process group); returns at once.

        A run in progress (or one about to begin) ends with status ``killed``; the
        run after it starts a fresh kernel (earlier variables are gone).
        """
        self._killed.set()
        km = self._km
        provisioner = getattr(km, "provisioner", None) if km is not None else None
        pgid = getattr(provisioner, "pgid", None)
        process = getattr(provisioner, "process", None)
        if pgid and hasattr(os, "killpg"):
            with contextlib.suppress(OSError):
                os.killpg(pgid, signal.SIGKILL)
        if process is not None:
            with contextlib.suppress(OSError):
                process.kill()

    def close(self) -> None:
        """Stop the kernel and forget it (the working folder stays)."""
        self.kill()
        self._shutdown()

    def _shutdown(self) -> None:
        kc, km, self._kc, self._km = self._kc, self._km, None, None
        if kc is not None:
            with contextlib.suppress(Exception):
                kc.stop_channels()
        if km is not None:
            with contextlib.suppress(Exception):
                km.shutdown_kernel(now=True)
            with contextlib.suppress(Exception):
                km.cleanup_resources()

    # -- running code ----------------------------------------------------------------
    def run(self, code: str, timeout_s: float | None = None) -> RunResult:
        """Run ``code`` in the kernel and collect its output.

        Args:
            code: Python source (IPython syntax).
            timeout_s: Time limit for this run, in s (default: the interpreter's).

        Returns:
            A :class:`RunResult`; never raises for errors in the code.

        Raises:
            GlmdeskError: ``interpreter_failed`` when the kernel cannot start.
        """
        with self._lock:
            try:
                if self._killed.is_set():  # killed before this run began: it does not run
                    self._shutdown()
                    return RunResult("", status="killed", restarted=True)
                restarted = self._km is not None and not self._km.is_alive()
                self.start()
                return self._run(code, timeout_s or self.timeout_s, restarted)
            finally:
                self._killed.clear()

    def _run(self, code: str, limit: float, restarted: bool) -> RunResult:
        start = time.monotonic()
        out = _Collector()
        kc, km = self._kc, self._km  # start() made them; only _shutdown (this thread) drops them
        if kc is None or km is None:
            raise RuntimeError("the kernel is not running")
        msg_id = kc.execute(code, store_history=True, allow_stdin=False)
        deadline = start + limit
        status, interrupted_at, lost = "ok", None, False
        while True:
            if self._killed.is_set():
                self.kill()  # the kernel this run started, too
                status = "killed"
                break
            now = time.monotonic()
            if interrupted_at is None and now > deadline:
                status, interrupted_at = "timeout", now
                with contextlib.suppress(Exception):
                    km.interrupt_kernel()
            if interrupted_at is not None and now - interrupted_at > INTERRUPT_GRACE_S:
                self.kill()
                lost = True
                break
            try:
                msg = kc.get_iopub_msg(timeout=POLL_S)
            except queue.Empty:
                if not km.is_alive():
                    status = "killed" if self._killed.is_set() else "failed"
                    break
                continue
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            if out.add(msg) and msg["msg_type"] == "status":
                break
        if status == "ok" and out.error:
            status = "error"
        if status in ("killed", "failed") or lost:
            self._shutdown()
            restarted = True  # the next run starts a fresh kernel
        return RunResult(out.text(), tuple(out.images), status, restarted, time.monotonic() - start)


class _Collector:
    """Collects iopub messages of one execution."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.images: list[bytes] = []
        self.error = False

    def add(self, msg: dict) -> bool:
        """Record ``msg``; True when it is the kernel going idle (the run ended)."""
        kind, content = msg["msg_type"], msg.get("content", {})
        if kind == "stream":
            self.parts.append(content.get("text", ""))
        elif kind in ("execute_result", "display_data"):
            data = content.get("data", {})
            if "image/png" in data:
                with contextlib.suppress(ValueError):
                    self.images.append(base64.b64decode(data["image/png"]))
            elif "text/plain" in data:
                self.parts.append(data["text/plain"] + "\n")
        elif kind == "error":
            self.error = True
            self.parts.append(_ANSI.sub("", "\n".join(content.get("traceback", []))) + "\n")
        return kind == "status" and content.get("execution_state") == "idle"

    def text(self) -> str:
        text = "".join(self.parts)
        if len(text) > MAX_OUTPUT_CHARS:
            text = text[:MAX_OUTPUT_CHARS] + "\n[TRUNCATED]"
        return text


def new_workdir(root: Path, key: str) -> Path:
    """A fresh, empty working folder ``root/key`` (an old one is removed), owner-only."""
    folder = Path(root) / re.sub(r"[^A-Za-z0-9._-]+", "_", key)[:64]
    if folder.exists():
        shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True, mode=0o700)
    return folder
