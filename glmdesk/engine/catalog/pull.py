"""Download a model from the hub into glmdesk's models folder, resumably, checked.

``huggingface_hub`` does the hub's part: the file list with sizes and hashes
(:func:`~glmdesk.engine.catalog.hub_files.list_files`), each file's address
(``hf_hub_url``, ``HF_ENDPOINT``), the request headers with the token
(``build_hf_headers``), its HTTP session (proxies, redirects to the CDN) and its error
mapping (``hf_raise_for_status``: gated, not found). What it does not do, and this
module does:

- resume across calls: ``hf_hub_download`` (2.x) writes each file to a temporary name
  unique to the process and deletes it on any failure, so a cancel, a killed process or
  a restart starts the file again. Here each file grows in ``<name>.part`` in a
  ``.partial/`` folder that outlives the process; the next pull asks for the rest
  with a ``Range`` header. (Its ``http_get`` can start at an offset, but reads 10 MiB
  between two progress calls and sleeps between its retries without a way to stop:
  a pause on a slow line would wait for the next 10 MiB.)
- cancel and pause: checked between chunks of 256 KiB (and during retry waits);
- a hash check of every file against the hub's (SHA-256 of LFS files, the git blob
  id of the others); a mismatch deletes the file and says so;
- a free-disk check of the whole pull before anything is written;
- never a half model: the files stay in ``.partial/`` until every one is checked,
  then the folder is renamed into place with a ``glmdesk-pull.json`` record, which is
  what makes it a pulled model (:mod:`glmdesk.engine.catalog.pulled`);
- reuse of the hub's cache: a file already in it (its blob named by the same hash)
  is linked, not copied.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from glmdesk.engine.catalog.hashes import Digest, file_matches
from glmdesk.engine.catalog.hub_files import (
    PullError,
    RemoteFile,
    hub_endpoint,
    hub_error,
    list_files,
    select_files,
)
from glmdesk.engine.catalog.pulled import RECORD, folder_name, models_dir, partial_dir
from glmdesk.engine.forecast import gib

#: Bytes read from the network between two cancel checks and progress reports.
CHUNK_BYTES = 256 << 10
#: Times a lost connection is resumed within one pull before it stops and says so.
RETRIES = 3
#: Seconds before the first of those retries (doubled each time, at most 8).
RETRY_WAIT_S = 0.5
#: Seconds without a byte before the connection counts as lost.
READ_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class PullPlan:
    """What a pull will fetch.

    Attributes:
        repo: The repository.
        quant: The quantization (``Q4_K_M``; ``bf16`` for a safetensors repository).
        commit: The commit the files are taken at (the hub's answer).
        files: The files, with sizes and hashes.
        target: The folder the finished model will be.
    """

    repo: str
    quant: str
    commit: str
    files: tuple[RemoteFile, ...]
    target: Path

    @property
    def total_bytes(self) -> int:
        """All the files' bytes."""
        return sum(f.size for f in self.files)


@dataclass(frozen=True)
class PullProgress:
    """One progress report.

    Attributes:
        stage: ``resuming`` (once, when bytes are already here), ``downloading``,
            ``verifying`` (hashing a file), ``linked`` (a file taken from the hub's
            cache) or ``done``.
        file: The file's path in the repository.
        file_index: Its number, from 1.
        file_count: Files in the pull.
        done_bytes: Bytes of the pull on disk (already there, linked and fetched).
        total_bytes: Bytes of the pull.
        fetched_bytes: Bytes fetched from the network by this run.
        resumed_bytes: Bytes that were already on disk when this run started.
        bytes_per_s: The transfer rate over the last seconds (0 before it is known).
        eta_s: Seconds left at that rate (``None`` while unknown).
    """

    stage: str
    file: str
    file_index: int
    file_count: int
    done_bytes: int
    total_bytes: int
    fetched_bytes: int = 0
    resumed_bytes: int = 0
    bytes_per_s: float = 0.0
    eta_s: float | None = None


class _Cancelled(Exception):
    """Raised inside the transfer when the pull is cancelled or paused."""


@dataclass
class _Rate:
    """The transfer rate over a sliding window of about :attr:`window_s` seconds."""

    window_s: float = 5.0
    samples: list[tuple[float, int]] = field(default_factory=list)

    def add(self, total: int) -> float:
        now = time.monotonic()
        self.samples.append((now, total))
        while len(self.samples) > 2 and now - self.samples[0][0] > self.window_s:
            self.samples.pop(0)
        (t0, b0), (t1, b1) = self.samples[0], self.samples[-1]
        return (b1 - b0) / (t1 - t0) if t1 > t0 else 0.0


def plan_pull(
    repo: str, quant: str | None = None, *, token: str | None = None, folder: Path | None = None
) -> PullPlan:
    """Ask the hub what pulling ``repo`` (at ``quant``) fetches.

    Raises:
        PullError: ``offline``, ``gated``, ``not_found`` or ``no_quant``.
    """
    commit, files = list_files(repo, token)
    chosen_quant, chosen = select_files(repo, files, quant)
    gguf = any(f.path.lower().endswith(".gguf") for f in chosen)
    target = (folder or models_dir()) / folder_name(repo, chosen_quant if gguf else None)
    return PullPlan(repo, chosen_quant, commit, tuple(chosen), target)


class Puller:
    """Runs pulls into a models folder.

    Args:
        folder: The models folder (default :func:`~glmdesk.engine.catalog.pulled.models_dir`).
        token: The hub token (``None``: none is sent).
        hub_cache: The hub's cache to reuse files from (default: ``huggingface_hub``'s;
            ``False``: none).
        free_bytes: Free bytes at a path (default ``shutil.disk_usage``'s ``free``).
    """

    def __init__(
        self,
        folder: Path | None = None,
        *,
        token: str | None = None,
        hub_cache: Path | bool | None = None,
        free_bytes: Callable[[Path], int] | None = None,
    ) -> None:
        self.folder = Path(folder) if folder else models_dir()
        self.token = token
        self._hub_cache = hub_cache
        self._free = free_bytes or (lambda p: shutil.disk_usage(p).free)

    def plan(self, repo: str, quant: str | None = None) -> PullPlan:
        """:func:`plan_pull` into this folder."""
        return plan_pull(repo, quant, token=self.token, folder=self.folder)

    def pull(
        self,
        plan: PullPlan,
        progress: Callable[[PullProgress], None] = lambda p: None,
        cancel: threading.Event | None = None,
    ) -> Path | None:
        """Fetch what is missing, check it and move the model into place.

        Args:
            plan: From :meth:`plan`.
            progress: Called on the pulling thread for every report.
            cancel: Set it to stop at the next chunk (cancel and pause alike: the
                bytes already fetched stay for the next pull).

        Returns:
            The finished model's folder, or ``None`` when cancelled.

        Raises:
            PullError: ``disk_full`` (nothing written), ``hash_mismatch`` (that file
                deleted), ``busy`` (another glmdesk pulls the same), ``gated``,
                ``not_found``, ``offline`` or ``connection_lost`` (what was fetched
                stays for the next pull).
        """
        from filelock import FileLock, Timeout

        if (plan.target / RECORD).is_file():
            return plan.target
        work = partial_dir(self.folder) / plan.target.name
        work.mkdir(parents=True, exist_ok=True)
        lock = FileLock(str(work) + ".lock")
        try:
            lock.acquire(timeout=0)
        except Timeout as exc:
            raise PullError(
                "busy", f"Another glmdesk is pulling {plan.repo} already.", repo=plan.repo
            ) from exc
        try:
            return self._pull_locked(plan, work, progress, cancel or threading.Event())
        finally:
            lock.release()

    def _forget_changed(self, plan: PullPlan, work: Path) -> None:
        """Delete what an earlier pull at another commit left of files that changed."""
        record = work / RECORD
        if not record.is_file():
            return
        try:
            old = {f["path"]: f for f in json.loads(record.read_text(encoding="utf-8"))["files"]}
        except (OSError, ValueError, KeyError, TypeError):
            old = {}
        for f in plan.files:
            before = old.get(f.path)
            if before and (before.get("sha256"), before.get("blob_id"), before.get("size")) != (
                f.sha256,
                f.blob_id,
                f.size,
            ):
                for stale in (work / f.path, work / (f.path + ".part")):
                    stale.unlink(missing_ok=True)

    def _cached(self, plan: PullPlan, remote: RemoteFile) -> Path | None:
        """The hub cache's blob of ``remote`` (same size, named by the same hash), or ``None``."""
        if self._hub_cache is False:
            return None
        from huggingface_hub import try_to_load_from_cache

        cache = None if self._hub_cache in (None, True) else str(self._hub_cache)
        found = try_to_load_from_cache(plan.repo, remote.path, cache_dir=cache, revision=plan.commit)
        if not isinstance(found, str):
            return None
        blob = Path(found).resolve()
        expected = remote.sha256 or remote.blob_id
        if blob.is_file() and blob.stat().st_size == remote.size and (not expected or blob.name == expected):
            return blob
        return None

    def _pull_locked(self, plan: PullPlan, work: Path, progress, cancel: threading.Event) -> Path | None:
        self._forget_changed(plan, work)
        done = {
            f.path
            for f in plan.files
            if (work / f.path).is_file() and (work / f.path).stat().st_size == f.size
        }
        linked: dict[str, Path] = {}
        for f in plan.files:
            if f.path not in done and (blob := self._cached(plan, f)) is not None:
                linked[f.path] = blob
        have = sum(
            f.size if f.path in done else (work / (f.path + ".part")).stat().st_size
            for f in plan.files
            if f.path in done or (work / (f.path + ".part")).is_file()
        )
        fetch = plan.total_bytes - have - sum(f.size for f in plan.files if f.path in linked)
        free = self._free(work)
        if fetch > free:
            raise PullError(
                "disk_full",
                f"Not enough disk space for {plan.repo} {plan.quant}: {gib(fetch)} more is needed and "
                f"{work.parent.parent} has {gib(free)} free. Free some space or choose another models folder.",
                repo=plan.repo,
                need=fetch,
                free=free,
                folder=str(work.parent.parent),
            )
        (work / RECORD).write_text(json.dumps(_record(plan, complete=False), indent=1), encoding="utf-8")
        count = len(plan.files)
        state = {"done": have, "fetched": 0}
        rate = _Rate()
        if have:
            first = next((f.path for f in plan.files if f.path not in done), plan.files[0].path)
            progress(PullProgress("resuming", first, 1, count, have, plan.total_bytes, resumed_bytes=have))
        for index, f in enumerate(plan.files, start=1):
            final = work / f.path
            final.parent.mkdir(parents=True, exist_ok=True)
            if f.path in done:
                continue
            if f.path in linked:
                _link(linked[f.path], final)
                state["done"] += f.size
                progress(
                    PullProgress(
                        "linked", f.path, index, count, state["done"], plan.total_bytes, resumed_bytes=have
                    )
                )
                continue
            part = work / (f.path + ".part")
            try:
                digest = self._fetch(plan, f, part, index, count, state, rate, have, progress, cancel)
            except _Cancelled:
                return None
            progress(
                PullProgress(
                    "verifying", f.path, index, count, state["done"], plan.total_bytes, state["fetched"], have
                )
            )
            if not (digest.matches() if digest.fed == f.size else file_matches(part, f)):
                part.unlink(missing_ok=True)
                state["done"] -= f.size
                raise PullError(
                    "hash_mismatch",
                    f"{f.path} of {plan.repo} arrived damaged (its {'SHA-256' if f.sha256 else 'git hash'} is not "
                    "the hub's) and was deleted; pull again to fetch it anew.",
                    repo=plan.repo,
                    file=f.path,
                )
            os.replace(part, final)
        (work / RECORD).write_text(json.dumps(_record(plan, complete=True), indent=1), encoding="utf-8")
        if plan.target.exists():
            shutil.rmtree(plan.target)
        plan.target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(work, plan.target)
        progress(
            PullProgress("done", "", count, count, plan.total_bytes, plan.total_bytes, state["fetched"], have)
        )
        return plan.target

    def _fetch(
        self, plan, f: RemoteFile, part: Path, index, count, state, rate, have, progress, cancel
    ) -> Digest:
        """Append the rest of ``f`` to ``part``: a GET with ``Range: bytes=<size of part>-``
        on the hub's own HTTP session, read in :data:`CHUNK_BYTES` pieces (cancel is
        checked between them), resumed after a lost connection up to
        :data:`RETRIES` times with growing waits that a cancel cuts short.

        Returns:
            The file's hash, computed as the bytes arrive (the part already on disk
            hashed first), so a finished file is not read again to check it."""
        import httpx2
        from huggingface_hub import hf_hub_url
        from huggingface_hub.utils import build_hf_headers, get_session, hf_raise_for_status

        url = hf_hub_url(plan.repo, f.path, revision=plan.commit, endpoint=hub_endpoint())
        headers = build_hf_headers(token=self.token or False, library_name="glmdesk")
        tries = 0
        digest: Digest | None = None
        while True:
            start = part.stat().st_size if part.is_file() else 0
            if start > f.size:  # longer than the file: not ours to trust
                part.unlink()
                state["done"] -= start
                start = 0
            if digest is None or digest.fed != start:
                digest = Digest(f, part, start)
            if start == f.size:
                return digest
            if cancel.is_set():
                raise _Cancelled
            asked = dict(headers, Range=f"bytes={start}-") if start else headers
            try:
                with get_session().stream("GET", url, headers=asked, timeout=READ_TIMEOUT_S) as response:
                    hf_raise_for_status(response)
                    mode = "ab" if response.status_code == 206 else "wb"
                    if mode == "wb" and start:  # the server ignored the range: start the file again
                        state["done"] -= start
                        digest = Digest(f)
                    with open(part, mode) as fh:
                        for chunk in response.iter_bytes(CHUNK_BYTES):
                            if cancel.is_set():
                                raise _Cancelled
                            fh.write(chunk)
                            digest.update(chunk)
                            tries = 0
                            state["done"] += len(chunk)
                            state["fetched"] += len(chunk)
                            speed = rate.add(state["fetched"])
                            eta = (plan.total_bytes - state["done"]) / speed if speed > 0 else None
                            progress(
                                PullProgress(
                                    "downloading",
                                    f.path,
                                    index,
                                    count,
                                    state["done"],
                                    plan.total_bytes,
                                    state["fetched"],
                                    have,
                                    speed,
                                    eta,
                                )
                            )
            except (_Cancelled, PullError):
                raise
            except httpx2.TransportError as exc:
                tries += 1
                if tries > RETRIES:
                    raise _lost(plan, part, exc) from exc
                if cancel.wait(min(8.0, RETRY_WAIT_S * 2 ** (tries - 1))):
                    raise _Cancelled from exc
                continue
            except OSError as exc:  # the hub's HTTP errors (HfHubHTTPError is an OSError), a full disk
                if getattr(exc, "response", None) is not None:
                    raise hub_error(exc, plan.repo) from exc
                raise
            if part.stat().st_size == f.size:
                return digest
            tries += 1  # the body ended early without an error
            if tries > RETRIES:
                raise _lost(plan, part, ConnectionError("the file ended early"))


def _lost(plan: PullPlan, part: Path, exc: BaseException) -> PullError:
    kept = part.stat().st_size if part.is_file() else 0
    return PullError(
        "connection_lost",
        f"The connection to the hub was lost while pulling {plan.repo} ({type(exc).__name__}); "
        f"{gib(kept)} of this file is kept: pull again to resume from there.",
        repo=plan.repo,
        kept=kept,
        detail=str(exc),
    )


def _link(blob: Path, final: Path) -> None:
    """Put the hub cache's ``blob`` at ``final`` without a second copy: a symbolic link,
    else a hard link, else (another volume, no links allowed) a copy."""
    final.unlink(missing_ok=True)
    try:
        final.symlink_to(blob)
    except OSError:
        try:
            os.link(blob, final)
        except OSError:
            shutil.copyfile(blob, final)


def _record(plan: PullPlan, complete: bool) -> dict:
    return {
        "repo": plan.repo,
        "quant": plan.quant,
        "commit": plan.commit,
        "complete": complete,
        "files": [asdict(f) for f in plan.files],
        "pulled": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
