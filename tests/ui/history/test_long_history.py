"""A 2 MB message through the window and its history (issue 19, item 4).

The window with the fake backend (no model) and a real history file: sending a 2 MB
one-line message hands its storing to the history writer's thread (the GUI thread
goes on), it is stored and exported verbatim, reopening shows it folded and whole,
and the app's quit waits for it. No timings here: ``benchmarks/ui_responsiveness.py
--sizes`` measures the gaps.
"""

from __future__ import annotations

import json
import threading

import pytest

from glmdesk.core.history import History
from tests.core.test_history_writer import one_line_json
from tests.helpers.fake_backend import FakeBackend

MS = 30_000


@pytest.fixture
def wired(qtbot, tmp_path):
    from glmdesk.ui.app.main_window import MainWindow

    history = History(tmp_path / "history.sqlite3")
    window = MainWindow(backend=FakeBackend(pieces=("Got", " it.")), options=lambda: {}, history=history)
    qtbot.addWidget(window)
    window.resize(1000, 700)
    window.show()
    with qtbot.waitSignal(window.loader.model_ready, timeout=MS):
        window.start()
    controller = window.history_controller
    panel = controller.panel
    yield window, history, panel, controller
    window.close()
    controller.close()
    history.close()


def test_sending_two_megabytes_stores_them_off_the_gui_thread_verbatim(qtbot, wired, tmp_path):
    window, history, panel, controller = wired
    big = one_line_json(2_000_000)
    writers = controller.writer.call(lambda h: h)
    threads = []
    original = writers.add_message
    writers.add_message = lambda *a, **k: (threads.append(threading.get_ident()), original(*a, **k))[1]
    with qtbot.waitSignal(window.session.answer_finished, timeout=MS):
        assert window.send_message(big)
        # The round is queued, not written while send_message ran: the GUI thread went on.
        assert controller.pending_writes() >= 1 and controller.conversation_id is None
    assert controller.flush()
    assert threads and threading.get_ident() not in threads
    cid = controller.conversation_id
    stored = history.messages(cid)
    assert [(m.role, m.text) for m in stored] == [("user", big), ("assistant", "Got it.")]
    panel.export_conversation(cid, tmp_path / "c.json", "json")
    panel.export_conversation(cid, tmp_path / "c.md", "markdown")
    exported = json.loads((tmp_path / "c.json").read_text(encoding="utf-8"))
    assert exported["messages"][0]["text"] == big
    assert big in (tmp_path / "c.md").read_text(encoding="utf-8")
    # Reopening shows it folded, and whole.
    window.new_chat()
    controller.open_conversation(cid)
    widgets = window.chat_view.messages()
    assert widgets[0].text() == big and widgets[0].is_folded()
    # Search results show a short excerpt of it.
    with qtbot.waitSignal(panel.search_finished, timeout=MS):
        panel.search('"value 70001"')
    assert panel.results.rowCount() == 1
    assert len(panel.results.index(0).data()) < 400  # an excerpt, not the message


def test_quit_waits_for_the_writes_still_queued(qtbot, wired):
    window, history, _panel, controller = wired
    big = one_line_json(1_000_000)
    with qtbot.waitSignal(window.session.answer_finished, timeout=MS):
        assert window.send_message(big)
    window.close()
    controller.close()  # what run_app does after the event loop ends
    (conversation,) = history.list_conversations()
    assert [m.text for m in history.messages(conversation.id)] == [big, "Got it."]


def test_the_input_box_gives_back_the_whole_text_as_the_general_loop_does(qtbot):
    from PySide6.QtCore import QMimeData

    from glmdesk.ui.chat.input_box import InputBox

    box = InputBox()
    qtbot.addWidget(box)
    assert box.text() == ""
    text = "first line\n" + "x" * 2500 + "\n\n" + one_line_json(5000) + "\nlast"
    data = QMimeData()
    data.setText(text)
    box.editor.insertFromMimeData(data)
    box.editor.insertPlainText("\nTyped 词 😀")
    doc = box.editor.document()
    assert doc.blockCount() > 10  # long lines are cut for display into soft-break blocks
    whole = box.editor.verbatim_text()
    assert whole == box.editor.verbatim_text(0, doc.characterCount() - 1)
    assert whole == text + "\nTyped 词 😀" == box.text()
