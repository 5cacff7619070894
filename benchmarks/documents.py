"""Chat with documents, in one run: indexing speed, query latency at 10,000 files, and the
window's longest stall while it indexes.

Builds (once, cached in the temp directory) a folder of 10,000 text and Markdown files of
mixed English and Chinese (2-6 KB each; 30,000 made-up words and 2,000 characters used as
Zipf's law has it, so a question has common and rare words as real ones do) and a 1,000-page PDF (fpdf2), then, offscreen:

* indexing: the window's :class:`DocumentLibrary` indexes the folder and the PDF on its
  thread while a 5 ms timer ticks on the window's thread; the longest gap between ticks is
  the longest GUI stall (goal: under 50 ms). Pages per second for the PDF, files per second
  for the folder.
* queries: :meth:`DocumentIndex.search` over all 10,000 files, and the whole
  :func:`documents_for_turn` with the folder on (3,000-token budget), p50 and p99 of 200
  questions each.

Run: ``python benchmarks/documents.py [--files N] [--pdf-pages N]``.
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

from PySide6.QtCore import QElapsedTimer, QEventLoop, Qt, QTimer  # noqa: E402
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


def index_in_window(folder: Path, pdf: Path, database: Path) -> dict:
    """Index the PDF, then the folder, with the window's library; the GUI's longest gap."""
    from glmdesk.ui.documents.document_library import DocumentLibrary
    from glmdesk.ui.documents.documents_panel import DocumentsPanel

    app = QApplication.instance() or QApplication([])
    library = DocumentLibrary(database)
    panel = DocumentsPanel(library)
    panel.resize(900, 80)
    panel.show()
    ticks: list[float] = []
    clock = QElapsedTimer()
    timer = QTimer()
    timer.setTimerType(Qt.TimerType.PreciseTimer)
    timer.setInterval(5)
    timer.timeout.connect(lambda: ticks.append(clock.nsecsElapsed() / 1e6))
    reports = []
    loop = QEventLoop()

    def finished(report) -> None:
        reports.append(report)
        if len(reports) == 2:
            loop.quit()

    library.indexing_finished.connect(finished)
    clock.start()
    timer.start()
    idle = QEventLoop()  # the same timer with nothing indexing: the machine's own stalls
    QTimer.singleShot(3000, idle.quit)
    idle.exec()
    idle_marks = [0.0, *ticks, clock.nsecsElapsed() / 1e6]
    idle_gap = max(b - a for a, b in zip(idle_marks, idle_marks[1:], strict=False))
    ticks.clear()
    control_gap = _gap_beside_a_busy_child(clock, ticks)  # the machine's stalls with one more busy process
    ticks.clear()
    begun = clock.nsecsElapsed() / 1e6
    library.attach([str(pdf)])
    library.add_folder(str(folder))
    loop.exec()
    timer.stop()
    marks = [begun, *ticks, clock.nsecsElapsed() / 1e6]
    spans = [(b - a, a - begun) for a, b in zip(marks, marks[1:], strict=False)]
    gaps = sorted(g for g, _ in spans)
    worst = sorted(spans, reverse=True)[:5]
    library.shutdown()
    panel.close()
    app.processEvents()
    pdf_report, folder_report = reports
    return {
        "pdf_pages": pdf_report.pages,
        "pdf_s": pdf_report.seconds,
        "files": len(folder_report.indexed),
        "folder_s": folder_report.seconds,
        "problems": len(pdf_report.problems) + len(folder_report.problems),
        "gap_ms": gaps[-1],
        "gap_p99_ms": gaps[int(len(gaps) * 0.99)],
        "idle_gap_ms": idle_gap,
        "control_gap_ms": control_gap,
        "worst": worst,
        "pdf_done_ms": pdf_report.seconds * 1e3,
    }


def _spin(seconds: float) -> None:
    """A child's busy loop (the control: a process as busy as the indexing child)."""
    import os

    os.nice(5)  # as the indexing child
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def _gap_beside_a_busy_child(clock: QElapsedTimer, ticks: list[float]) -> float:
    """The longest gap between the 5 ms ticks while a child process spins for 5 s, in ms."""
    import multiprocessing

    child = multiprocessing.get_context("spawn").Process(target=_spin, args=(5.0,))
    start = clock.nsecsElapsed() / 1e6
    child.start()
    loop = QEventLoop()
    QTimer.singleShot(5500, loop.quit)
    loop.exec()
    child.join()
    marks = [start, *ticks, clock.nsecsElapsed() / 1e6]
    return max(b - a for a, b in zip(marks, marks[1:], strict=False))


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
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--pdf-pages", type=int, default=1_000)
    parser.add_argument("--repeat", type=int, default=200)
    args = parser.parse_args()
    t0 = time.perf_counter()
    folder, pdf = corpus(args.files, args.pdf_pages)
    print(f"corpus ready in {time.perf_counter() - t0:.1f} s: {folder} ({args.files} files), {pdf}")
    with tempfile.TemporaryDirectory() as tmp:
        database = Path(tmp) / "documents.sqlite3"
        i = index_in_window(folder, pdf, database)
        print(
            f"indexing  PDF: {i['pdf_pages']} pages in {i['pdf_s']:.1f} s = {i['pdf_pages'] / i['pdf_s']:.0f} pages/s; "
            f"folder: {i['files']} files in {i['folder_s']:.1f} s = {i['files'] / i['folder_s']:.0f} files/s; "
            f"problems: {i['problems']}"
        )
        print(
            f"GUI while indexing: longest gap {i['gap_ms']:.1f} ms, p99 {i['gap_p99_ms']:.1f} ms (goal < 50 ms); "
            f"idle for 3 s before: longest gap {i['idle_gap_ms']:.1f} ms; beside a child process "
            f"spinning the CPU for 5 s (no indexing): {i['control_gap_ms']:.1f} ms"
        )
        print(
            f"  longest gaps (ms, at ms after the start; the PDF ended at {i['pdf_done_ms']:.0f}):",
            ", ".join(f"{g:.0f} at {t:.0f}" for g, t in i["worst"]),
        )
        q = queries(database, args.repeat)
        print(
            f"queries over {q['documents']} documents: search p50 {q['search_p50']:.1f} ms, p99 {q['search_p99']:.1f} ms; "
            f"documents_for_turn p50 {q['turn_p50']:.1f} ms, p99 {q['turn_p99']:.1f} ms"
        )
        print(f"index size: {database.stat().st_size / 2**20:.0f} MiB")


if __name__ == "__main__":
    main()
