"""How fast the history panel opens and searches with a large history.

Builds (once, cached in the temp directory) a database of 10,000 conversations x
20 messages of mixed English and Chinese text, then times, offscreen:

* open: ``History(path)`` + ``HistoryPanel(...)`` + show + first paint of the list;
* search: ``History.search`` for common, rare and absent terms, English and
  Chinese, 3+ characters (trigram index) and 1-2 characters (LIKE fallback);
* panel search: ``HistoryPanel.search`` until its results are painted, and the
  longest stall of the window's thread meanwhile (the query runs on a search thread).

Goal: under 100 ms each. Run: ``python benchmarks/history.py [--conversations N]``.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QEvent, QObject  # noqa: E402
from PySide6.QtWidgets import QApplication, QWidget  # noqa: E402

from glmdesk.core.history import History  # noqa: E402
from glmdesk.ui.history.history_panel import HistoryPanel  # noqa: E402

EN = (
    "the model answers questions about quantum computing, cooking, travel and python code "
    "with a context window of four thousand tokens while the user waits for the stream"
).split()
ZH = list("我们今天讨论量子计算模型训练数据中文分词搜索历史对话导出导入速度测试问题答案")
QUERIES = [
    ("quantum", "English, common"),
    ("zebra", "English, absent"),
    ("量子计算", "Chinese 4 chars, common"),
    ("罕见词语", "Chinese 4 chars, absent"),
    ("模型", "Chinese 2 chars (LIKE), common"),
    ("qz", "2 chars (LIKE), absent: full scan"),
    ("python 模型", "mixed trigram + LIKE"),
]


def _text(rng: random.Random) -> str:
    words = [rng.choice(EN) for _ in range(rng.randint(8, 60))]
    zh = "".join(rng.choice(ZH) for _ in range(rng.randint(5, 60)))
    cut = rng.randint(0, len(words))
    return " ".join(words[:cut]) + " " + zh + " " + " ".join(words[cut:])


def build(path: Path, conversations: int, messages: int) -> None:
    """Write the benchmark database (one transaction, bulk inserts)."""
    rng = random.Random(0)
    now = time.time() - conversations * 60
    with History(path) as h, h.transaction():
        conn = h.connection
        for c in range(conversations):
            t = now + c * 60
            cid = conn.execute(
                "INSERT INTO conversations (title, created, updated, model) VALUES (?, ?, ?, ?)",
                (f"Conversation {c}: {rng.choice(EN)} {rng.choice(ZH)}{rng.choice(ZH)}", t, t + 30, "smol"),
            ).lastrowid
            conn.executemany(
                "INSERT INTO messages (conversation_id, role, text, created, updated, state, finish_reason, "
                "settings, ttft_s, tokens_per_s, n_tokens) VALUES (?, ?, ?, ?, ?, 'complete', ?, ?, ?, ?, ?)",
                [
                    (cid, "user", _text(rng), t + i, t + i, None, None, None, None, None)
                    if i % 2 == 0
                    else (
                        cid,
                        "assistant",
                        _text(rng),
                        t + i,
                        t + i,
                        "stop",
                        '{"temperature": 0.2}',
                        0.3,
                        14.0,
                        64,
                    )
                    for i in range(messages)
                ],
            )


class _PaintWatch(QObject):
    def __init__(self) -> None:
        super().__init__()
        self.painted = False

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt name
        if event.type() == QEvent.Type.Paint:
            self.painted = True
        return False


def _paint(app: QApplication, widget: QWidget) -> None:
    watch = _PaintWatch()
    widget.installEventFilter(watch)
    widget.update()
    deadline = time.perf_counter() + 5
    while not watch.painted and time.perf_counter() < deadline:
        app.processEvents()
    widget.removeEventFilter(watch)


def time_open(app: QApplication, path: Path) -> float:
    """Seconds from opening the database to the list's first paint."""
    start = time.perf_counter()
    history = History(path)
    panel = HistoryPanel(history)
    panel.resize(360, 800)
    panel.show()
    _paint(app, panel.list_view.viewport())
    elapsed = time.perf_counter() - start
    panel.close()
    panel.deleteLater()
    app.processEvents()
    history.close()
    return elapsed


def _panel_search(app: QApplication, panel: HistoryPanel, query: str) -> tuple[float, float]:
    """``(seconds until the results are painted, longest gap in ms between 5 ms ticks)``."""
    from PySide6.QtCore import QElapsedTimer, QEventLoop, Qt, QTimer

    loop = QEventLoop()
    ticks: list[float] = []
    clock = QElapsedTimer()
    timer = QTimer()
    timer.setTimerType(Qt.TimerType.PreciseTimer)
    timer.setInterval(5)
    timer.timeout.connect(lambda: ticks.append(clock.nsecsElapsed() / 1e6))
    panel.search_finished.connect(loop.quit)
    clock.start()
    timer.start()
    start = time.perf_counter()
    panel.search(query)
    loop.exec()
    _paint(app, panel.results_view.viewport())
    elapsed = time.perf_counter() - start
    timer.stop()
    panel.search_finished.disconnect(loop.quit)
    marks = [0.0, *ticks, clock.nsecsElapsed() / 1e6]
    return elapsed, max(b - a for a, b in zip(marks, marks[1:], strict=False))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=10_000)
    parser.add_argument("--messages", type=int, default=20)
    parser.add_argument(
        "--db", type=Path, default=None, help="database file (default: cached in the temp dir)"
    )
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    path = (
        args.db or Path(tempfile.gettempdir()) / f"glmdesk-bench-{args.conversations}x{args.messages}.sqlite3"
    )
    if not path.exists():
        start = time.perf_counter()
        build(path, args.conversations, args.messages)
        print(f"built {path} in {time.perf_counter() - start:.1f} s")

    app = QApplication.instance() or QApplication([])
    with History(path) as h:
        conn = h.connection
        n_conv = h.count_conversations()
        n_msg, n_chars = conn.execute("SELECT count(*), sum(length(text)) FROM messages").fetchone()
    size = sum(p.stat().st_size for p in path.parent.glob(path.name + "*")) / 2**20
    print(
        f"sizes: {n_conv} conversations, {n_msg} messages, {n_chars / 1e6:.1f} M characters, {size:.0f} MiB on disk"
    )

    opens = [time_open(app, path) for _ in range(args.repeat)]
    print(
        f"open panel (db + construct + first paint): first {opens[0] * 1e3:.1f} ms, "
        f"median {statistics.median(opens) * 1e3:.1f} ms  (goal < 100 ms)"
    )

    with History(path) as h:
        print(f"{'query':<14} {'kind':<36} {'hits':>4} {'median ms':>9} {'max ms':>7}")
        for query, kind in QUERIES:
            times, hits = [], 0
            for _ in range(args.repeat):
                start = time.perf_counter()
                hits = len(h.search(query))
                times.append(time.perf_counter() - start)
            print(
                f"{query:<14} {kind:<36} {hits:>4} {statistics.median(times) * 1e3:>9.1f} {max(times) * 1e3:>7.1f}"
            )

        panel = HistoryPanel(h)
        panel.resize(360, 800)
        panel.show()
        _paint(app, panel.list_view.viewport())
        for query, kind in QUERIES[:1] + QUERIES[2:3] + QUERIES[4:6]:
            times, gaps = [], []
            for _ in range(args.repeat):
                elapsed, longest = _panel_search(app, panel, query)
                times.append(elapsed)
                gaps.append(longest)
                panel.search("")
            print(
                f"panel search {query!r} ({kind}): results painted after median "
                f"{statistics.median(times) * 1e3:.1f} ms; window thread's longest stall "
                f"{max(gaps):.1f} ms (search runs on its own thread)"
            )
        panel.close()


if __name__ == "__main__":
    main()
