"""CPU time the window spends per streamed re-render of an answer, painting included (no model).

An answer of 256 chunks (one of them opens a code block, every eighth starts a paragraph, so
the view scrolls to follow it) is streamed into the window's chat view, each chunk flushed
and the events that follow handled (layout, scrolling, painting), three times; the CPU time of
this process per chunk is printed. CPU time, unlike ``ui_responsiveness.py``'s wall-clock gaps and
tokens/s, hardly moves with other processes' load on a shared machine, so two trees can be
compared side by side::

    QT_QPA_PLATFORM=offscreen PYTHONPATH=TREE python benchmarks/chat_repaint_cost.py
"""

from __future__ import annotations

import time

CHUNKS = 256
ROUNDS = 3
CODE = "\n\n```python\nfor i in range(10):\n    print(i)\n```\n\n"


def main() -> int:
    from PySide6.QtCore import QCoreApplication, QEvent
    from PySide6.QtWidgets import QApplication

    app = QApplication([])
    from glmdesk.core.parts import TextPart
    from glmdesk.ui.app.main_window import MainWindow

    window = MainWindow()
    window.resize(1280, 800)
    window.show()
    window.chat_area.setCurrentWidget(window.chat_view)
    for _ in range(20):
        app.processEvents()
    view = window.chat_view
    words = ("The history of computing runs from the abacus to today. " * 40).split(" ")
    per_chunk_ms = []
    for _round in range(ROUNDS):
        view.clear()
        QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)  # as the event loop would
        view.add_message("user", "Write an essay.")
        view.begin_stream()
        for _ in range(5):
            app.processEvents()
        start = time.process_time()
        for k in range(CHUNKS):
            lead = CODE if k == 40 else "\n\n" if k % 8 == 0 else ""
            view.append_parts((TextPart(lead + words[k % len(words)] + " "),))
            view._flush()  # the throttle's timer, at once
            app.processEvents()  # layout, following the end, painting
        per_chunk_ms.append((time.process_time() - start) / CHUNKS * 1000)
        view.finish_stream()
    print("CPU ms per re-render and paint:", ", ".join(f"{ms:.2f}" for ms in per_chunk_ms))
    window.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
