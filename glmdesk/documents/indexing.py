"""Indexing files and library folders: what changed is read again, what vanished is
dropped, progress (files, pages, ETA) is reported and a cancel event is honoured between
pages. Runs on any thread but the window's (the window's documents worker; the terminal's
own thread).
"""

from __future__ import annotations

import functools
import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from glmdesk.documents.chunking import HEADING_KINDS, chunk_pages
from glmdesk.documents.extract import DOCX_SUFFIXES, HTML_SUFFIXES, PDF_SUFFIXES, extract
from glmdesk.documents.problems import DocumentError, DocumentProblem
from glmdesk.documents.store import DocumentIndex, DocumentRow

#: Suffixes a library folder's files are indexed by (a file attached on its own is read
#: whatever its suffix, when its bytes are text). Other files in a folder are passed over.
TEXT_SUFFIXES = (
    ".txt", ".text", ".md", ".markdown", ".rst", ".org", ".tex", ".csv", ".tsv", ".log", ".json",
    ".yaml", ".yml", ".toml", ".ini", ".cfg", ".xml",
)  # fmt: skip
CODE_SUFFIXES = (
    ".py", ".pyi", ".c", ".h", ".cc", ".cpp", ".hpp", ".cu", ".rs", ".go", ".java", ".kt", ".js",
    ".ts", ".tsx", ".jsx", ".rb", ".php", ".swift", ".m", ".cs", ".scala", ".lua", ".r", ".jl",
    ".sh", ".bash", ".ps1", ".sql", ".css", ".scss", ".vue", ".dart", ".zig", ".hs", ".ml",
)  # fmt: skip
LIBRARY_SUFFIXES = TEXT_SUFFIXES + CODE_SUFFIXES + PDF_SUFFIXES + DOCX_SUFFIXES + HTML_SUFFIXES


def document_kind(path: str, extracted_kind: str) -> str:
    """The kind shown and chunked by: ``pdf``, ``docx``, ``html``, ``markdown``, ``code`` or ``text``."""
    suffix = Path(path).suffix.lower()
    if extracted_kind != "text":
        return extracted_kind
    if suffix in (".md", ".markdown"):
        return "markdown"
    if suffix in CODE_SUFFIXES:
        return "code"
    return "text"


@dataclass(frozen=True)
class IndexProgress:
    """How far an indexing run is.

    Attributes:
        files_done: Files finished (read, unchanged, or failed).
        files_total: Files in the run.
        pages_done: Pages read so far (a file without pages counts 1).
        bytes_done: Bytes of the finished files.
        bytes_total: Bytes of all the run's files.
        elapsed_s: Seconds since the run began.
        current: The file being read (``""`` when none).
    """

    files_done: int
    files_total: int
    pages_done: int
    bytes_done: int
    bytes_total: int
    elapsed_s: float
    current: str = ""

    @property
    def eta_s(self) -> float | None:
        """Seconds left, from the bytes read so far (``None`` before any)."""
        if self.bytes_done <= 0 or self.elapsed_s <= 0:
            return None
        return self.elapsed_s * max(self.bytes_total - self.bytes_done, 0) / self.bytes_done


@dataclass
class IndexReport:
    """What an indexing run did.

    Attributes:
        indexed: Documents read and stored.
        unchanged: Documents whose size and time were as stored (not read again).
        forgotten: Paths dropped because their files are gone from a library folder.
        problems: Files that could not be read or stored, each with its sentence.
        pages: Pages read.
        seconds: The run's wall time, in s.
        cancelled: True when the cancel event ended it early.
    """

    indexed: list[DocumentRow] = field(default_factory=list)
    unchanged: list[DocumentRow] = field(default_factory=list)
    forgotten: list[str] = field(default_factory=list)
    problems: list[DocumentProblem] = field(default_factory=list)
    pages: int = 0
    seconds: float = 0.0
    cancelled: bool = False

    @property
    def rows(self) -> list[DocumentRow]:
        """The usable documents: read now or unchanged."""
        return self.indexed + self.unchanged


def folder_files(folder: str | Path) -> list[Path]:
    """The files a library folder indexes: every file below it with a
    :data:`LIBRARY_SUFFIXES` suffix, hidden files and folders left out, sorted."""
    found: list[Path] = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        found += [
            Path(root, f)
            for f in files
            if not f.startswith(".") and Path(f).suffix.lower() in LIBRARY_SUFFIXES
        ]
    return sorted(found)


def index_paths(
    index: DocumentIndex,
    files: Iterable[str | Path] = (),
    folders: Iterable[str] = (),
    cancel: threading.Event | None = None,
    progress: Callable[[IndexProgress], None] | None = None,
) -> IndexReport:
    """Index ``files`` (attached alone) and the library's ``folders`` (each file below
    them; a file gone since the last run is dropped). A file whose size and modification
    time are as stored is not read again.

    Every problem is collected in the report, never raised: one bad file leaves the rest
    going. A full disk ends the run (what was stored stays); so does ``cancel``.
    """
    started = time.perf_counter()
    report = IndexReport()
    work: list[tuple[Path, str | None, int]] = []  # (file, folder, size)
    known: dict[str, DocumentRow] = {}  # the folders' rows, read in one query each
    for folder in folders:
        on_disk = [p.resolve() for p in folder_files(folder)]
        seen = {str(p) for p in on_disk}
        for row in index.documents(folder=folder):
            if row.path not in seen:
                index.forget(row.path)
                report.forgotten.append(row.path)
            else:
                known[row.path] = row
        work += [(p, folder, _size(p)) for p in on_disk]
    work += [(Path(f).expanduser(), None, _size(Path(f).expanduser())) for f in files]
    total_bytes = sum(max(size, 0) for _, _, size in work)
    done_bytes = pages = 0

    def tell(done: int, current: str, pages_now: int) -> None:
        if progress is not None:
            progress(
                IndexProgress(
                    done,
                    len(work),
                    pages_now,
                    done_bytes,
                    total_bytes,
                    time.perf_counter() - started,
                    current,
                )
            )

    for done, (path, folder, size) in enumerate(work):
        if cancel is not None and cancel.is_set():
            report.cancelled = True
            break
        tell(done, str(path), pages)
        row = known.get(str(path)) if folder is not None else index.document(path)
        if row is not None and row.problem is None and _unchanged(path, row):
            report.unchanged.append(row)
        else:
            try:
                extracted = extract(path, cancel, functools.partial(_page_read, tell, done, str(path), pages))
                kind = document_kind(extracted.path, extracted.kind)
                chunks = chunk_pages(extracted.pages, headings=kind in HEADING_KINDS)
                report.indexed.append(index.store(extracted, kind, chunks, folder))
                pages += len(extracted.pages)
            except DocumentError as exc:
                problem = exc.problem
                if problem.kind == "missing" and size >= 0:  # it was there when the run listed it
                    problem = DocumentProblem("vanished", problem.path)
                if problem.kind == "cancelled":
                    report.cancelled = True
                    break
                report.problems.append(problem)
                if problem.kind == "disk_full":
                    break
                index.store_problem(problem, folder)
                if (kept := index.document(problem.path)) is not None and kept.chunks:
                    report.unchanged.append(kept)  # its earlier chunks still answer
        done_bytes += max(size, 0)
    finished = len(report.indexed) + len(report.unchanged) + len(report.problems)
    tell(min(finished, len(work)), "", pages)
    report.pages = pages
    report.seconds = time.perf_counter() - started
    return report


def _page_read(
    tell: Callable[[int, str, int], None], done: int, current: str, base: int, page: int, _total: int
) -> None:
    tell(done, current, base + page)


def _size(path: Path) -> int:
    """The file's size in bytes, -1 when it is not there."""
    try:
        return path.stat().st_size
    except OSError:
        return -1


def _unchanged(path: Path, row: DocumentRow) -> bool:
    try:
        stat = path.stat()
    except OSError:
        return False
    return stat.st_size == row.size and stat.st_mtime_ns == row.mtime_ns
