"""Sizes that froze the window (issue 19, item 4): the longest GUI gap while pasting,
streaming, sending and reopening long messages, and streaming an answer with 300
formulas (issue 28: goal 50 ms). Used by ``ui_responsiveness.py --sizes``.

No model: each phase drives the real widgets (input box, chat view, history) the way
the window does, with a 10 ms heartbeat timer on the GUI thread; the longest interval
between its ticks is how long the window could not react. Runs against whichever
glmdesk is first on ``PYTHONPATH`` (so the same script measures before and after).
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path


def one_line_json(size: int) -> str:
    """``size`` characters of one-line JSON (no newline), like a pasted API response."""
    return json.dumps({f"key{i}": f"value {i}" for i in range(size // 10 + 1)})[:size]


def repaint_costs(lines: int) -> list[tuple[str, float]]:
    """One streaming repaint at 100 lines and at ``lines`` lines: the whole message
    re-rendered (one ``MarkdownView``, as before) side by side with the segmented view
    (only the last segment drawn), in ms (median of 5). Needs the segmented view."""
    import statistics

    try:
        from glmdesk.ui.chat.long_markdown import SegmentedMarkdownView
    except ImportError:
        return []
    from glmdesk.ui.chat.markdown_view import MarkdownView

    out = []
    for name, make in (("whole message", MarkdownView), ("segmented", SegmentedMarkdownView)):
        costs = {}
        for n in (100, lines):
            view = make()
            view.resize(900, 400)
            text = "".join(f"{i}\n" for i in range(1, n + 1))
            view.set_markdown(text[: len(text) - 8])
            samples = []
            for k in range(5):  # a repaint after a few more characters arrived
                start = time.perf_counter()
                view.set_markdown(text[: len(text) - 8 + k + 1])
                samples.append((time.perf_counter() - start) * 1000)
            costs[n] = statistics.median(samples)
            out.append((f"repaint at {n} lines, {name}", costs[n]))
        print(f"repaint cost {name}: {lines} lines / 100 lines = {costs[lines] / costs[100]:.2f}")
    return out


def formula_answer(count: int, tag: str = "") -> str:
    """An answer with ``count`` distinct formulas: per paragraph two inline ones and one
    display one; ``tag`` goes into each formula, so answers of other tags are drawn afresh,
    not taken from the cache)."""
    parts = []
    for i in range(0, count, 3):
        parts.append(
            f"Step {i}{tag}: with $a_{{{i}{tag}}} = \\frac{{{i}}}{{{i} + 1}}$ and $x^{{{i}}} \\le y_{{{i}{tag}}}$ "
            f"the sum is\n\n$$\\sum_{{k{tag}=1}}^{{{i}}} k^2 = \\frac{{{i}({i}+1)(2 \\cdot {i}+1)}}{{6}}$$\n\n"
        )
    return "".join(parts)


def stream_formulas(
    view, beat, count: int, tag: str, rest: float | None = None, process: bool | None = None
) -> float:
    """Stream :func:`formula_answer` into ``view`` 8 characters every 2 ms (a fast model);
    the longest GUI gap until every formula is drawn, in ms. Needs the formula renderer.
    ``rest``, ``process``: the renderer's ``rest`` after each formula drawn on its thread and
    ``use_process`` (draw in the child process), when given."""
    import gc

    from PySide6.QtCore import QCoreApplication, QEvent, QEventLoop, QTimer

    from glmdesk.ui.chat.math_render import shared_renderer

    text = formula_answer(count, tag)
    renderer = shared_renderer()
    if rest is not None:
        renderer.rest = rest
    if process is not None:
        renderer.use_process = process
    view.clear()
    # the cleared messages (the 3,000-line one before the first run) are deleted now, not
    # inside the measured stream: clearing a chat is not streaming formulas
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    QCoreApplication.processEvents()
    gc.collect()  # an earlier row's garbage (mathtext's, drawn on a thread) is not this row's
    view.begin_stream()
    loop = QEventLoop()
    state = {"i": 0}
    feeder = QTimer()
    feeder.setInterval(2)

    def done() -> None:
        if renderer.pending() or not renderer.is_warm():
            QTimer.singleShot(10, done)
        else:
            view.finish_stream()
            QTimer.singleShot(300, loop.quit)

    def feed() -> None:
        view.append_text(text[state["i"] : state["i"] + 8])
        state["i"] += 8
        if state["i"] >= len(text):
            feeder.stop()
            done()

    feeder.timeout.connect(feed)
    beat.start()
    feeder.start()
    loop.exec()
    beat.timer.stop()
    drawn = sum(len(segment.formulas()) for segment in view.messages()[-1].view.segments())
    print(f"{count} formulas ({len(text):,} characters): {drawn} drawn as images at the end")
    return max(beat.gaps)


def run(scale: float = 1.0) -> list[tuple[str, float]]:
    """Measure every phase; returns ``(phase, longest gap in ms)`` and prints a table.

    Args:
        scale: Multiplies every size (0.2 measures the slow "before" code in minutes).
    """
    from PySide6.QtCore import QElapsedTimer, QEventLoop, QMimeData, QObject, Qt, QTimer, Slot
    from PySide6.QtWidgets import QApplication

    from glmdesk.core.history import History
    from glmdesk.ui.chat.chat_view import ChatView
    from glmdesk.ui.chat.input_box import InputBox

    app = QApplication.instance()

    class Heartbeat(QObject):
        def __init__(self) -> None:
            super().__init__()
            self.timer = QTimer(self)
            self.timer.setTimerType(Qt.TimerType.PreciseTimer)
            self.timer.setInterval(10)
            self.timer.timeout.connect(self.tick)
            self.clock = QElapsedTimer()
            self.gaps: list[float] = []

        def start(self) -> None:
            self.gaps = []
            self.clock.start()
            self.last = 0.0
            self.timer.start()

        @Slot()
        def tick(self) -> None:
            now = self.clock.nsecsElapsed() / 1e6
            self.gaps.append(now - self.last)
            self.last = now

    beat = Heartbeat()

    def measure(action, settle_ms: int = 300, done=lambda: True) -> float:
        """Run ``action`` from the event loop; the longest heartbeat gap until ``done()`` and
        ``settle_ms`` more have passed, in ms."""
        loop = QEventLoop()
        beat.start()

        def settle() -> None:
            if done():
                QTimer.singleShot(settle_ms, loop.quit)
            else:
                QTimer.singleShot(10, settle)

        QTimer.singleShot(30, lambda: (action(), settle()))
        loop.exec()
        beat.timer.stop()
        return max(beat.gaps)

    results: list[tuple[str, float]] = []
    box = InputBox()
    box.resize(900, 120)
    box.show()
    view = ChatView()
    view.resize(900, 700)
    view.show()
    app.processEvents()
    history = History(Path(tempfile.mkdtemp(prefix="glmdesk-sizes-")) / "h.sqlite3")
    cid = history.create_conversation()
    try:  # the window's history writes: on a writer thread of their own (issue 19, item 4)
        from glmdesk.core.history_writer import HistoryWriter
        from glmdesk.ui.history.history_writes import WriteQueue

        writes = WriteQueue(HistoryWriter(history), 5000)
        print("send: the history write goes to the history writer's thread, as the window does")

        def store(role: str, text: str) -> None:
            writes.submit(lambda h: h.add_message(cid, role, text))

        def stored() -> bool:
            return writes.pending() == 0
    except ImportError:  # before: written on the GUI thread
        writes = None

        def store(role: str, text: str) -> None:
            history.add_message(cid, role, text)

        def stored() -> bool:
            return True

    for kb in (500, 2000):
        size = int(kb * 1000 * scale)
        text = one_line_json(size)
        data = QMimeData()
        data.setText(text)
        box.editor.clear()
        results.append(
            (
                f"paste {size // 1000} KB one line",
                measure(lambda data=data: box.editor.insertFromMimeData(data)),
            )
        )
        sent = box.text()
        assert sent == text, "the input box changed the pasted text"

        def send(sent: str = sent) -> None:  # what sending does on the GUI thread (not the model's part)
            view.add_message("user", sent)
            view.scroll_to_end()
            box.clear_text()
            store("user", sent)

        results.append((f"send {size // 1000} KB", measure(send, done=stored)))

    from glmdesk.core.tools import MAX_FUNCTIONS_CHARS
    from glmdesk.ui.tools.tools_panel import ToolsPanel

    tools = ToolsPanel()
    tools.show()
    tools.set_mode("functions", "")
    for label, size in (("refused", int(2_000_000 * scale)), ("taken", int(MAX_FUNCTIONS_CHARS * 0.9))):
        data = QMimeData()
        data.setText(one_line_json(size))
        tools.functions_edit.clear()
        gap = measure(lambda data=data: tools.functions_edit.insertFromMimeData(data))
        results.append((f"paste {size // 1000} KB into functions ({label})", gap))
    tools.close()

    for kb in (1000, 2000):
        size = int(kb * 1000 * scale)
        answer = one_line_json(size)
        history.add_message(cid, "assistant", answer)

        def reopen() -> None:  # what opening a conversation does
            view.clear()
            for message in history.messages(cid)[-2:]:
                view.add_message(message.role, message.text)
            view.scroll_to_end()

        results.append((f"reopen with a {size // 1000} KB answer", measure(reopen)))

    lines = max(100, int(3000 * scale))
    numbers = [f"{i}\n" for i in range(1, lines + 1)]
    view.clear()
    view.begin_stream()
    gaps_by_part: list[float] = []
    loop = QEventLoop()
    state = {"i": 0}
    feeder = QTimer()
    feeder.setInterval(2)  # a fast model: 500 lines/s

    def feed() -> None:
        view.append_text(numbers[state["i"]])
        state["i"] += 1
        if state["i"] == len(numbers):
            feeder.stop()
            QTimer.singleShot(300, loop.quit)

    feeder.timeout.connect(feed)
    beat.start()
    started = time.perf_counter()
    feeder.start()
    loop.exec()
    beat.timer.stop()
    view.finish_stream()
    gaps_by_part = beat.gaps
    tenth = max(1, len(gaps_by_part) // 10)
    results.append((f"stream 1..{lines} (first tenth)", max(gaps_by_part[:tenth])))
    results.append((f"stream 1..{lines} (last tenth)", max(gaps_by_part[-tenth:])))
    results.append((f"stream 1..{lines} (whole, {time.perf_counter() - started:.1f} s)", max(gaps_by_part)))
    try:  # formulas (issue 28)
        import glmdesk.ui.chat.math_render  # noqa: F401
    except ImportError:
        pass
    else:  # the first run also imports mathtext and meets each glyph and size first (cached after)
        from glmdesk.ui.chat.math_draw import draw_mask
        from glmdesk.ui.chat.math_render import REST

        formulas = max(30, int(300 * scale))
        first = [("first, child process, imports mathtext", "", None, True)]
        kinds = [  # the child process first in each pair: before this process draws on a thread
            ("child process", "p", REST, True),
            ("thread, flat out (before)", "f", 0.0, False),
            (f"thread, resting {REST:g}x", "r", REST, False),
        ]
        runs = [
            (f"new, {name} {k}", f"{tag}{k}", rest, process)
            for k in (1, 2)
            for name, tag, rest, process in kinds
        ]
        cached = [("drawn before, cached", "p1", REST, True)]
        for run_name, tag, rest, process in first + runs + cached:
            if process is False:
                draw_mask("x^2", 12.0, 1.0)  # the thread's import of mathtext, here, not measured
            gap = stream_formulas(view, beat, formulas, tag, rest, process)
            results.append((f"stream {formulas} formulas ({run_name})", gap))
    if writes is not None:
        writes.close()
    history.close()
    results += repaint_costs(max(100, int(3000 * scale)))
    for name, gap in results:
        print(f"{name:<44} {'ms' if name.startswith('repaint') else 'longest GUI gap'} {gap:9.1f} ms")
    return results
