"""The window half of ``serve_overhead.py``: the same greedy answer in two windows of
this process, one answering in-process and one through the remote backend (the official
``openai`` client) against the ``glmdesk serve`` process, alternating.

Both are timed as the user sees them, at the window's ``step_shown`` signal: TTFT from
``regenerate()`` to the first text on screen, tokens/s over the text after it (token
counts from the final chunk: the engine's, or the server's ``usage``). Each window asks
once before the measured rounds, and every round regenerates that answer, so both keep
the prompt's KV cache alike (the window per conversation, the server under one key)
and prefill the same.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time


def run(url: str, engine: str, prompt: str, pairs: int, tokens: int) -> None:
    """Print per-round figures and the medians: tokens/s ratio (remote / in-process)
    and the TTFT the remote path adds, in ms.

    Args:
        url: The ``glmdesk serve`` API URL (``http://127.0.0.1:PORT/v1``).
        engine: The in-process window's engine (as the server's ``--engine``).
        prompt: The question.
        pairs: Measured rounds per window, alternating which goes first.
        tokens: ``max_new_tokens`` of every answer.
    """
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    # Neither the user's settings nor their keyring are touched.
    os.environ["PYTHON_KEYRING_BACKEND"] = "keyring.backends.fail.Keyring"
    from PySide6.QtCore import QEventLoop, QObject, QSettings, Slot
    from PySide6.QtWidgets import QApplication

    QSettings.setDefaultFormat(QSettings.Format.IniFormat)
    QSettings.setPath(
        QSettings.Format.IniFormat, QSettings.Scope.UserScope, tempfile.mkdtemp(prefix="glmdesk-bench-")
    )
    app = QApplication.instance() or QApplication(sys.argv)

    from glmdesk.core.settings import LoadSettings, SamplingParams
    from glmdesk.ui.app.main_window import MainWindow

    class Recorder(QObject):
        """Times one answer of one window as it is shown (GUI thread)."""

        def __init__(self) -> None:
            super().__init__()
            self.loop = QEventLoop()
            self.first = self.last = 0.0
            self.final = None
            self.ready = None

        @Slot(int, object)
        def on_step(self, _request_id: int, events) -> None:
            from glmdesk.chat.events import TextDelta

            if any(isinstance(e, TextDelta) for e in events):
                self.last = time.perf_counter()
                self.first = self.first or self.last

        @Slot(int, object)
        def on_finished(self, _request_id: int, chunk) -> None:
            self.final = chunk
            self.loop.quit()

        @Slot(object)
        def on_ready(self, info) -> None:
            self.ready = info
            self.loop.quit()

        @Slot(str)
        def on_load_error(self, sentence: str) -> None:
            print(f"load failed: {sentence}")
            self.loop.quit()

    params = SamplingParams(temperature=0.0, top_p=1.0, max_new_tokens=tokens)
    recorder = Recorder()
    windows = {}
    for name, settings in (
        ("in-process", LoadSettings(engine=engine)),
        ("remote", LoadSettings(remote_url=url)),
    ):
        window = MainWindow()
        window.resize(1200, 800)
        window.show()
        window.loader.model_ready.connect(recorder.on_ready)
        window.load_view.load_error_shown.connect(recorder.on_load_error)
        window.session.step_shown.connect(recorder.on_step)
        window.session.answer_finished.connect(recorder.on_finished)
        recorder.ready = None
        window.load_model(settings)
        recorder.loop.exec()
        if recorder.ready is None:
            raise SystemExit(f"the {name} window could not load its model")
        window.sidebar.set_params(params)
        window.send_message(prompt)  # asked once; every round regenerates it
        recorder.loop.exec()
        windows[name] = window

    def answer(name: str) -> tuple[float, float, str]:
        window = windows[name]
        recorder.first = recorder.last = 0.0
        recorder.final = None
        started = time.perf_counter()
        window.regenerate()
        recorder.loop.exec()
        final = recorder.final
        if final is None or final.finish_reason not in ("stop", "length"):
            raise SystemExit(
                f"the {name} window's answer ended with {final.finish_reason if final else None}"
            )
        rate = (final.figures.n_generated - 1) / (recorder.last - recorder.first)
        return recorder.first - started, rate, window.state.messages[-1].content

    rows: dict[str, list] = {"in-process": [], "remote": []}
    for i in range(pairs):
        order = ("in-process", "remote") if i % 2 == 0 else ("remote", "in-process")
        for name in order:
            rows[name].append(answer(name))
        local, remote = rows["in-process"][-1], rows["remote"][-1]
        print(
            f"window pair {i + 1}: in-process TTFT {local[0] * 1000:.0f} ms, {local[1]:.2f} tokens/s; "
            f"remote TTFT {remote[0] * 1000:.0f} ms, {remote[1]:.2f} tokens/s; same text: {local[2] == remote[2]}"
        )
    ttft = {name: statistics.median(r[0] for r in rows[name]) for name in rows}
    rate = {name: statistics.median(r[1] for r in rows[name]) for name in rows}
    print(f"\nwindow medians over {pairs} pairs ({windows['in-process'].model_info.engine} in-process):")
    print(
        f"tokens/s: in-process window {rate['in-process']:.2f}, remote window {rate['remote']:.2f}: "
        f"ratio {rate['remote'] / rate['in-process']:.3f}"
    )
    print(
        f"TTFT: in-process window {ttft['in-process'] * 1000:.1f} ms, remote window {ttft['remote'] * 1000:.1f} ms: "
        f"added {1000 * (ttft['remote'] - ttft['in-process']):.1f} ms"
    )
    for window in windows.values():
        window.close()
        window.deleteLater()
    app.processEvents()
