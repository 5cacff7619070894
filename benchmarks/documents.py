"""Chat with documents, in one run: indexing speed, query latency at 10,000 files, and the
window's longest stall while it indexes.

Builds (once, cached in the temp directory) a folder of 10,000 text and Markdown files of
mixed English and Chinese (2-6 KB each; 30,000 made-up words and 2,000 characters used as
Zipf's law has it, so a question has common and rare words as real ones do) and a 1,000-page PDF (fpdf2), then, offscreen:

* indexing: the window's :class:`DocumentLibrary` indexes the PDF and then the folder
  while a 5 ms timer ticks on the window's thread; the longest gap between ticks is the
  longest GUI stall (goal: under 50 ms). Pages per second for the PDF, files per second
  for the folder.
* the same run's controls, since a busy machine stalls any process: the same timer with
  nothing indexing (``--idle`` seconds before), a witness process that only sleeps 5 ms at a
  time (its gaps are the machine's), and for each gap the CPU time the GUI thread and the
  window's whole process used within it (a gap with no CPU used is time the process was
  not given a core, not work of ours; the most CPU used within one gap is the window's own
  stall). A sampling thread names what the GUI thread was running in gaps over 40 ms.
* queries: :meth:`DocumentIndex.search` over all 10,000 files, and the whole
  :func:`documents_for_turn` with the folder on (3,000-token budget), p50 and p99 of 200
  questions each.

Run: ``python benchmarks/documents.py [--files N] [--pdf-pages N] [--idle S]``.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from PySide6.QtCore import QEventLoop, Qt, QTimer  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from glmdesk.documents import TokenBudget, documents_for_turn  # noqa: E402
from glmdesk.documents.store import DocumentIndex, match_query  # noqa: E402


def _vocabulary(rng: random.Random, n: int = 30_000) -> list[str]:
    """``n`` made-up words of two to four syllables (a real text's many rare words)."""
    syllables = [c + v for c in "bcdfghklmnprstvwz" for v in ("a", "e", "i", "o", "u", "ai", "ou")]
    words: set[str] = set()
    while len(words) < n:
        words.add("".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))))
    return sorted(words)


_RNG = random.Random(3)
WORDS = _vocabulary(_RNG)
#: Zipf's law: the word of rank r is used about 1/r as often as the commonest.
WEIGHTS = [1 / rank for rank in range(1, len(WORDS) + 1)]
HANZI = [chr(0x4E00 + i) for i in _RNG.sample(range(6000), 2000)]
HANZI_WEIGHTS = [1 / rank for rank in range(1, len(HANZI) + 1)]


def _paragraph(rng: random.Random) -> str:
    if rng.random() < 0.3:
        return "".join(rng.choices(HANZI, HANZI_WEIGHTS, k=rng.randint(40, 120))) + "。"
    return " ".join(rng.choices(WORDS, WEIGHTS, k=rng.randint(30, 90))).capitalize() + "."


def corpus(files: int, pdf_pages: int) -> tuple[Path, Path]:
    """The cached folder of ``files`` files and the ``pdf_pages``-page PDF."""
    root = Path(tempfile.gettempdir()) / f"glmdesk-bench-documents-zipf-{files}-{pdf_pages}"
    folder, pdf = root / "library", root / "book.pdf"
    if not (root / "done").exists():
        rng = random.Random(41)
        folder.mkdir(parents=True, exist_ok=True)
        for i in range(files):
            sub = folder / f"part{i // 500:02d}"
            sub.mkdir(exist_ok=True)
            text = f"# Note {i}\n\n" + "\n\n".join(_paragraph(rng) for _ in range(rng.randint(4, 12)))
            text += f"\n\nThe tracking number of note {i} is TRK{i:05d}.\n"
            (sub / f"note{i:05d}.{'md' if i % 2 else 'txt'}").write_text(text, encoding="utf-8")
        from fpdf import FPDF

        book = FPDF()
        book.set_font("Helvetica", size=10)
        for page in range(1, pdf_pages + 1):
            book.add_page()
            english = " ".join(rng.choices(WORDS, WEIGHTS, k=220))
            book.multi_cell(0, 5, f"Chapter {page}. {english.capitalize()}.")
        book.output(str(pdf))
        (root / "done").write_text("ok")
    return folder, pdf


def index_in_window(folder: Path, pdf: Path, database: Path, idle_s: float) -> dict:
    """Index the PDF, then the folder, with the window's library; the GUI's gaps while it
    indexes, while it is idle for ``idle_s`` before, and the witness's gaps (see
    :func:`_witness`) over the same time. Times in ms of ``time.monotonic()``."""
    import multiprocessing

    from glmdesk.ui.documents.document_library import DocumentLibrary
    from glmdesk.ui.documents.documents_panel import DocumentsPanel

    app = QApplication.instance() or QApplication([])
    context = multiprocessing.get_context("spawn")
    witness_stop, (witness_in, witness_out) = context.Event(), context.Pipe(duplex=False)
    witness = context.Process(target=_witness, args=(witness_stop, witness_out), daemon=True)
    witness.start()
    library = DocumentLibrary(database)
    panel = DocumentsPanel(library)
    panel.resize(900, 80)
    panel.show()
    ticks: list[float] = []
    sampler = _StallSampler(ticks)
    timer = QTimer()
    timer.setTimerType(Qt.TimerType.PreciseTimer)
    timer.setInterval(5)
    # tick -> CPU time of the GUI thread, of the process, and the GUI thread's time spent
    # runnable but waiting for a core (Linux schedstat), all in ms
    cpu: dict[float, tuple[float, float, float]] = {}

    def tick() -> None:
        now = time.monotonic() * 1e3
        ticks.append(now)
        cpu[now] = (time.thread_time() * 1e3, time.process_time() * 1e3, _runqueue_ms())

    timer.timeout.connect(tick)
    reports = []
    loop = QEventLoop()

    def finished(report) -> None:
        reports.append(report)
        if len(reports) == 2:
            loop.quit()

    library.indexing_finished.connect(finished)
    timer.start()
    sampler.start()
    idle_begun = time.monotonic() * 1e3
    idle = QEventLoop()  # the same timer with nothing indexing: the machine's own stalls
    QTimer.singleShot(int(idle_s * 1000), idle.quit)
    idle.exec()
    idle_spans = _spans([idle_begun, *ticks, time.monotonic() * 1e3])
    ticks.clear()
    _cpu_pressure()
    begun = time.monotonic() * 1e3
    library.attach([str(pdf)])
    library.add_folder(str(folder))
    loop.exec()
    ended = time.monotonic() * 1e3
    timer.stop()
    sampler.stop()
    spans = _spans([begun, *ticks, ended])
    witness_stop.set()
    witness_gaps = [(a, g) for a, g in witness_in.recv() if begun <= a + g and a <= ended]
    witness.join(10)
    library.shutdown()
    panel.close()
    app.processEvents()
    pdf_report, folder_report = reports

    def explained(at: float, gap: float) -> bool:
        """A witness gap covered at least half of it: the whole machine stalled."""
        return any(min(at + gap, w + wg) - max(at, w) >= gap / 2 for w, wg in witness_gaps)

    def working(at: float, gap: float) -> tuple[float, float, float]:
        """CPU time the GUI thread, and the window's whole process, used within the gap,
        and the time the GUI thread was runnable but given no core (ms): the GUI thread's
        CPU near the gap, it was busy; the process's, another of its threads held the
        interpreter lock; the wait near the gap, the machine had no core for it."""
        before, after = cpu.get(at), cpu.get(at + gap)
        if before is None or after is None:
            return 0.0, 0.0, 0.0
        return after[0] - before[0], after[1] - before[1], after[2] - before[2]

    ours = [(g, a) for a, g in spans if not explained(a, g)]
    busiest = max(((working(a, g)[0], g) for a, g in spans), default=(0.0, 0.0))
    # The window's own stalls: the most CPU its process used within one gap (all its
    # threads, so an upper bound of what held the GUI thread): what the gap would be on a
    # machine that gave it a core at once.
    own = max((working(a, g)[1] for a, g in spans), default=0.0)
    # Each gap less the GUI thread's wait for a core: the gap a machine with a free core
    # would have shown (the timer's own 5 ms included).
    unqueued = max((g - working(a, g)[2] for a, g in spans), default=0.0)
    pressure = _cpu_pressure()
    gaps = sorted(g for _, g in spans)
    return {
        "pdf_pages": pdf_report.pages,
        "pdf_s": pdf_report.seconds,
        "files": len(folder_report.indexed) + len(folder_report.unchanged),
        "folder_s": folder_report.seconds,
        "problems": len(pdf_report.problems) + len(folder_report.problems),
        "gap_ms": gaps[-1],
        "gap_p99_ms": gaps[int(len(gaps) * 0.99)],
        "ours_ms": max((g for g, _ in ours), default=0.0),
        "busy_ms": busiest[0],
        "own_ms": own,
        "unqueued_ms": unqueued,
        "pressure": pressure,
        "busy_gap_ms": busiest[1],
        "idle_gap_ms": max(g for _, g in idle_spans),
        "witness_ms": max((g for _, g in witness_gaps), default=0.0),
        "worst": sorted(((g, a - begun, explained(a, g), working(a, g)) for a, g in spans), reverse=True)[:5],
        "stacks": sampler.stacks,
        "others": sampler.others,
        "pdf_done_ms": pdf_report.seconds * 1e3,
        "seconds": (ended - begun) / 1e3,
    }


def _runqueue_ms() -> float:
    """The calling thread's time spent runnable but waiting for a core, in ms (Linux
    ``/proc/thread-self/schedstat``, second field, ns; 0.0 elsewhere)."""
    try:
        with open("/proc/thread-self/schedstat") as f:
            return int(f.read().split()[1]) / 1e6
    except (OSError, IndexError, ValueError):
        return 0.0


_PRESSURE = [0.0, 0.0]  # (time.monotonic s, cumulative stall us) at the last call


def _cpu_pressure() -> float | None:
    """The share of the time since the last call in which some task of the machine waited
    for a core (Linux pressure stall information, ``/proc/pressure/cpu``, ``some``);
    ``None`` where it is not available."""
    try:
        with open("/proc/pressure/cpu") as f:
            total = float(f.readline().rsplit("total=", 1)[1])
    except (OSError, IndexError, ValueError):
        return None
    now = time.monotonic()
    share = (total - _PRESSURE[1]) / 1e6 / (now - _PRESSURE[0]) if _PRESSURE[0] else None
    _PRESSURE[:] = [now, total]
    return share


def _spans(marks: list[float]) -> list[tuple[float, float]]:
    """``(start, length)`` of each gap between consecutive ``marks`` (ms)."""
    return [(a, b - a) for a, b in zip(marks, marks[1:], strict=False)]


def _witness(stop, conn) -> None:
    """Another process that only sleeps 5 ms at a time: its gaps over 20 ms (start and
    length, ms of ``time.monotonic()``) are the machine's own stalls (other processes,
    the scheduler), which no change to the window can remove."""
    import os

    os.nice(0)
    gaps: list[tuple[float, float]] = []
    last = time.monotonic() * 1e3
    while not stop.is_set():
        time.sleep(0.005)
        now = time.monotonic() * 1e3
        if now - last > 20:
            gaps.append((last, now - last))
        last = now
    conn.send(gaps)
    conn.close()


class _StallSampler:
    """A thread of the window's process that, when the GUI's last tick is over 40 ms old,
    records what the GUI thread is running (its innermost frames): the profiler of a stall."""

    def __init__(self, ticks: list[float]) -> None:
        import threading

        self.ticks, self.stacks, self.others = ticks, {}, {}
        self._stop = threading.Event()
        self._gui = threading.main_thread().ident or 0
        self._thread = threading.Thread(target=self._run, name="stall-sampler", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        import threading
        import traceback

        while not self._stop.wait(0.01):
            if self.ticks and time.monotonic() * 1e3 - self.ticks[-1] > 40:
                frames = sys._current_frames()
                frame = frames.get(self._gui)
                if frame is None:
                    continue
                for ident, other in frames.items():  # the window's other threads then
                    if ident not in (self._gui, threading.get_ident()):
                        here = (
                            f"{Path(other.f_code.co_filename).name}:{other.f_lineno} {other.f_code.co_name}"
                        )
                        self.others[here] = self.others.get(here, 0) + 1
                where = " < ".join(
                    f"{Path(f.filename).name}:{f.lineno} {f.name}"
                    for f in reversed(traceback.extract_stack(frame)[-4:])
                )
                self.stacks[where] = self.stacks.get(where, 0) + 1


def queries(database: Path, repeat: int) -> dict:
    """Search and documents_for_turn latencies over the whole library, in ms."""
    rng = random.Random(5)
    index = DocumentIndex(database)
    rows = index.documents()
    questions = []
    for _ in range(repeat):  # words drawn as the text uses them: mostly common, some rare
        if rng.random() < 0.3:
            questions.append("".join(rng.choices(HANZI, HANZI_WEIGHTS, k=4)) + "是什么？")
        else:
            words = " ".join(rng.choices(WORDS, WEIGHTS, k=rng.randint(2, 5)))
            questions.append(f"What does the note say about {words}?")
    search_ms, turn_ms = [], []
    for question in questions:
        t0 = time.perf_counter()
        index.search(match_query(question), limit=50)
        search_ms.append((time.perf_counter() - t0) * 1e3)
        t0 = time.perf_counter()
        documents_for_turn(
            question, [], rows, TokenBudget(8192, 200, 512, 3000), lambda t: len(t) // 4, index
        )
        turn_ms.append((time.perf_counter() - t0) * 1e3)
    index.close()

    def p(values, q):
        return statistics.quantiles(values, n=100)[q - 1]

    return {
        "documents": len(rows),
        "search_p50": p(search_ms, 50),
        "search_p99": p(search_ms, 99),
        "turn_p50": p(turn_ms, 50),
        "turn_p99": p(turn_ms, 99),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--pdf-pages", type=int, default=1_000)
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--idle", type=float, default=10.0, help="seconds the GUI is timed idle first")
    args = parser.parse_args()
    t0 = time.perf_counter()
    folder, pdf = corpus(args.files, args.pdf_pages)
    print(f"corpus ready in {time.perf_counter() - t0:.1f} s: {folder} ({args.files} files), {pdf}")
    with tempfile.TemporaryDirectory() as tmp:
        database = Path(tmp) / "documents.sqlite3"
        i = index_in_window(folder, pdf, database, args.idle)
        print(
            f"indexing  PDF: {i['pdf_pages']} pages in {i['pdf_s']:.1f} s = {i['pdf_pages'] / i['pdf_s']:.0f} pages/s; "
            f"folder: {i['files']} files in {i['folder_s']:.1f} s = {i['files'] / i['folder_s']:.0f} files/s; "
            f"problems: {i['problems']}"
        )
        print(
            f"GUI while indexing ({i['seconds']:.0f} s): longest gap {i['gap_ms']:.1f} ms, p99 {i['gap_p99_ms']:.1f} ms; "
            f"longest not matched by a stall of the witness process: {i['ours_ms']:.1f} ms (goal < 50 ms)"
        )
        print(
            f"the same run's controls: GUI idle for {args.idle:.0f} s before: longest gap {i['idle_gap_ms']:.1f} ms; "
            f"witness process while indexing (the machine's own stalls): longest gap {i['witness_ms']:.1f} ms"
        )
        print(
            f"the window's own stalls: the most CPU its process used within one gap {i['own_ms']:.1f} ms "
            f"(goal < 50 ms); the most CPU the GUI thread used within one gap "
            f"{i['busy_ms']:.1f} ms (in a gap of {i['busy_gap_ms']:.1f} ms); longest gap less the GUI thread's "
            f"wait for a core {i['unqueued_ms']:.1f} ms"
        )
        if i["pressure"] is not None:
            print(
                f"CPU pressure while indexing: some task of the machine waited for a core {i['pressure']:.0%} of the time"
            )
        print(
            f"  longest gaps (ms at ms after the start, CPU ms of the GUI thread/process in it, ms the GUI"
            f" thread waited for a core; the PDF ended"
            f" at {i['pdf_done_ms']:.0f}; * = the witness stalled too):",
            ", ".join(
                f"{g:.0f} at {t:.0f} cpu {c[0]:.0f}/{c[1]:.0f} waited {c[2]:.0f}{'*' if x else ''}"
                for g, t, x, c in i["worst"]
            ),
        )
        for where, n in sorted(i["stacks"].items(), key=lambda kv: -kv[1])[:5]:
            print(f"  GUI thread during a stall over 40 ms ({n} samples of 10 ms): {where}")
        for where, n in sorted(i["others"].items(), key=lambda kv: -kv[1])[:4]:
            print(f"  another thread of the window's process then ({n} samples): {where}")
        q = queries(database, args.repeat)
        print(
            f"queries over {q['documents']} documents: search p50 {q['search_p50']:.1f} ms, p99 {q['search_p99']:.1f} ms; "
            f"documents_for_turn p50 {q['turn_p50']:.1f} ms, p99 {q['turn_p99']:.1f} ms"
        )
        print(f"index size: {database.stat().st_size / 2**20:.0f} MiB")


if __name__ == "__main__":
    main()
