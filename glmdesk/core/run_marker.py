"""A run that dies is told on the next start: crash logs, "engine was generating" markers,
and the engines glmdesk no longer chooses by itself.

A native engine (llama.cpp, a CUDA kernel, a driver) can end the process with a signal
that Python cannot catch. Three files in glmdesk's data folder (:func:`paths.data_dir`)
let the next start say what happened:

- ``crashes/<pid>.log``: Python's :mod:`faulthandler` writes the native traceback of
  every thread there on SIGSEGV, SIGFPE, SIGABRT, SIGBUS and SIGILL
  (:func:`enable_crash_log`). A run that ends normally removes its empty log; a kill
  (SIGKILL, a power cut) leaves it empty, which says that nothing crashed inside.
- ``running/<pid>-<front end>.json``: the marker, written when an engine starts an
  answer and removed when it stops (:class:`RunMarker`: engine, model, conversation and
  message ids, pid, the process's start time, when the answer began). One file per
  process and front end, so two windows, a window and ``glmdesk chat``, or a window and
  the server it runs never touch each other's marker.
  A marker whose process no longer runs (:func:`dead_runs`; the pid's start time tells
  a reused pid from the process that wrote it) is a run that did not end.
- ``distrusted_engines.json``: engines that were generating when their process crashed
  (:mod:`glmdesk.core.distrusted_engines`). ``auto`` does not choose them again until
  the user picks one by name.

Markers are written with ``os.replace`` (never half a file) without ``fsync``: the
answer does not wait for the disk, so a power cut may lose a marker written in the
seconds before it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import faulthandler
import functools
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

from glmdesk.core import paths
from glmdesk.core.distrusted_engines import distrust_engine

#: The marker file's format version (``version`` in the JSON).
MARKER_VERSION = 1

_log_file = None  # the open crash log of this process (faulthandler writes into it)


@dataclasses.dataclass(frozen=True)
class RunMarker:
    """One process's answer in progress, as its marker file stores it.

    Attributes:
        engine: The engine's name (``llamacpp``, ``transformers``, ``remote``...).
        model: The model's name as the history records it.
        front_end: ``window``, ``chat`` (the terminal) or ``serve``.
        pid: The process that writes the answer.
        process_started: That process's start, s since the Unix epoch (psutil's
            ``create_time``; 0.0 when unknown), to tell it from a later process with
            the same pid.
        started: When the answer began, s since the Unix epoch.
        conversation_id: The history's conversation id (``None``: not saved).
        message_id: The history's id of the answer being written (``None``: not saved).
        crash_log: Path of the process's crash log (``""``: none).
    """

    engine: str
    model: str
    front_end: str
    pid: int = 0
    process_started: float = 0.0
    started: float = 0.0
    conversation_id: int | None = None
    message_id: int | None = None
    crash_log: str = ""

    def crash_log_text(self) -> str:
        """What the crash log holds (``""`` when it is empty, missing or unreadable)."""
        if not self.crash_log:
            return ""
        try:
            return Path(self.crash_log).read_text(encoding="utf-8", errors="replace").strip()
        except OSError:
            return ""

    def signal_name(self) -> str:
        """The fatal signal the crash log names (``"Segmentation fault"``), or ``""``
        when it names none (a kill from outside, a power cut). faulthandler's first line
        is ``Fatal Python error: Segmentation fault``."""
        for line in self.crash_log_text().splitlines():
            if line.startswith("Fatal Python error:"):
                return line.partition(":")[2].strip()
        return ""


# -- crash log ---------------------------------------------------------------------------
def crash_dir() -> Path:
    """Folder of the crash logs (``<data>/crashes``), created owner-only."""
    path = paths.data_dir() / "crashes"
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return path


def crash_log_path(pid: int | None = None) -> Path:
    """The crash log of process ``pid`` (default: this one)."""
    return crash_dir() / f"{os.getpid() if pid is None else pid}.log"


def enable_crash_log() -> Path | None:
    """Have :mod:`faulthandler` write native tracebacks (all threads) into this process's
    crash log, and remove that log at a normal exit when nothing was written.

    Idempotent. Returns the log's path, or ``None`` when faulthandler was enabled
    before (``PYTHONFAULTHANDLER``, ``python -X faulthandler``, pytest: it keeps writing
    where it was told) or the log cannot be opened (a read-only data folder: then it
    writes to stderr, as Python would).
    """
    global _log_file
    if _log_file is not None and not _log_file.closed:
        return Path(_log_file.name)
    if faulthandler.is_enabled():
        return None
    path = crash_log_path()
    try:
        _log_file = open(path, "a", encoding="utf-8")  # noqa: SIM115 (open for the process's life)
    except OSError:
        faulthandler.enable(all_threads=True)
        return None
    faulthandler.enable(_log_file, all_threads=True)
    import atexit

    atexit.register(_close_crash_log)
    return path


def _close_crash_log() -> None:
    global _log_file
    log, _log_file = _log_file, None
    if log is None or log.closed:
        return
    faulthandler.disable()
    log.close()
    with contextlib.suppress(OSError):
        if os.path.getsize(log.name) == 0:
            os.remove(log.name)


# -- markers -----------------------------------------------------------------------------
def marker_dir() -> Path:
    """Folder of the markers (``<data>/running``), created owner-only."""
    path = paths.data_dir() / "running"
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return path


@functools.lru_cache(maxsize=4)
def _process_started(pid: int) -> float:
    """Process ``pid``'s start time (psutil's ``create_time``; this process's is asked
    once per answer, so it is cached), 0.0 when unknown."""
    try:
        import psutil

        return float(psutil.Process(pid).create_time())
    except Exception:  # psutil missing, no such process, not permitted
        return 0.0


def _alive(marker: RunMarker) -> bool:
    """Whether the process that wrote ``marker`` still runs (the same process, not a
    later one that was given its pid)."""
    if marker.pid <= 0:
        return False
    try:
        import psutil

        process = psutil.Process(marker.pid)
        if not process.is_running() or process.status() == psutil.STATUS_ZOMBIE:
            return False
        started = process.create_time()
    except Exception:  # NoSuchProcess, AccessDenied (alive, someone else's), psutil missing
        if os.name == "nt":  # os.kill would end the process there
            return True
        try:
            os.kill(marker.pid, 0)
        except (ProcessLookupError, OverflowError):  # no such process, or no such pid
            return False
        except OSError:
            return True
        return True
    return not marker.process_started or abs(started - marker.process_started) < 1.0


def begin_run(
    engine: str,
    model: str,
    front_end: str,
    conversation_id: int | None = None,
    message_id: int | None = None,
) -> Path | None:
    """Write this process's marker: an engine starts an answer.

    Returns:
        The marker's path (give it to :func:`end_run`), or ``None`` when it could not be
        written (the answer goes on; only the next start's notice is lost).
    """
    pid = os.getpid()
    log = crash_log_path(pid) if _log_file is not None else ""
    marker = RunMarker(
        engine,
        model,
        front_end,
        pid,
        _process_started(pid),
        time.time(),
        conversation_id,
        message_id,
        str(log),
    )
    try:
        folder = marker_dir()
        path = folder / f"{pid}-{front_end}.json"
        part = path.with_name(path.name + ".part")
        data = {"version": MARKER_VERSION, **dataclasses.asdict(marker)}
        part.write_text(json.dumps(data), encoding="utf-8")
        os.replace(part, path)
    except OSError:
        return None
    return path


def end_run(path: Path | None) -> None:
    """Remove a marker written by :func:`begin_run` (the answer stopped). Never raises."""
    if path is not None:
        with contextlib.suppress(OSError):
            os.remove(path)


@contextlib.contextmanager
def generating(engine: str, model: str, front_end: str, **ids: int | None) -> Iterator[Path | None]:
    """A marker for the duration of the ``with`` block (:func:`begin_run`, :func:`end_run`)."""
    path = begin_run(engine, model, front_end, **ids)
    try:
        yield path
    finally:
        end_run(path)


def _read_marker(path: Path) -> RunMarker | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        fields = {f.name for f in dataclasses.fields(RunMarker)}
        return RunMarker(**{k: v for k, v in data.items() if k in fields})
    except (OSError, ValueError, TypeError):
        return None


def dead_runs(front_ends: tuple[str, ...] | None = None) -> list[RunMarker]:
    """Take the markers of runs that did not end (their process is gone), oldest first.

    ``front_ends``: take only the markers of these front ends (``None``: all). The
    terminal leaves a window's marker to the window, which marks its conversation.

    Each is taken once: its file is renamed before it is read, so of two processes
    starting together one tells it. Markers of processes that still run (another
    window, a ``glmdesk chat`` beside it) are left alone; an unreadable marker is
    removed. The engine of a run whose crash log names a fatal signal is distrusted
    (:func:`distrust_engine`); a kill from outside or a power cut is no fault of it.
    Never raises.
    """
    out: list[RunMarker] = []
    try:
        candidates = sorted(marker_dir().glob("*.json"))
    except OSError:
        return out
    for path in candidates:
        marker = _read_marker(path)
        if marker is not None and (_alive(marker) or (front_ends and marker.front_end not in front_ends)):
            continue
        taken = path.with_name(f"{path.name}.{os.getpid()}.taken")
        try:
            os.replace(path, taken)
        except OSError:
            continue  # another process took it first
        marker = _read_marker(taken)
        with contextlib.suppress(OSError):
            os.remove(taken)
        if marker is not None:
            out.append(marker)
            if marker.signal_name():  # it crashed (a kill or a power cut is no fault of the engine)
                distrust_engine(marker.engine, marker.model, marker.signal_name(), marker.crash_log)
    _remove_empty_logs()
    return sorted(out, key=lambda m: m.started)


#: Crash logs kept (the newest); older ones are removed at a start.
KEEP_LOGS = 20


def _remove_empty_logs() -> None:
    """Empty crash logs of processes that no longer run (killed from outside) are
    removed once a start has read their markers, and all but the newest
    :data:`KEEP_LOGS` crash logs."""
    with contextlib.suppress(OSError):
        kept = []
        for log in crash_dir().glob("*.log"):
            with contextlib.suppress(OSError, ValueError):
                if _alive(RunMarker("", "", "", int(log.stem))):
                    continue
                if log.stat().st_size == 0:
                    log.unlink()
                else:
                    kept.append((log.stat().st_mtime, log))
        for _, log in sorted(kept, reverse=True)[KEEP_LOGS:]:
            with contextlib.suppress(OSError):
                log.unlink()


def describe_dead_run(marker: RunMarker) -> str:
    """One English line about a run that died (the terminal's; the window words its own):
    engine, model, signal or kill, crash log."""
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(marker.started)) if marker.started else "?"
    how = marker.signal_name()
    cause = f"crashed ({how})" if how else "was killed or lost power"
    log = marker.crash_log if marker.crash_log_text() else ""
    where = f"; crash log: {log}" if log else "; no crash log was written"
    return (
        f"note: a previous glmdesk {marker.front_end} (pid {marker.pid}) {cause} while the "
        f"{marker.engine} engine was answering with {marker.model or 'a model'} at {when}{where}"
    )
