"""A crash is told and nothing is lost: the question is in the history before the engine
starts on it (new, continue, regenerate, edit, tool round), a marker says an engine is
generating, and the next start tells a run that died and marks its question."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

import pytest

from glmdesk.core.distrusted_engines import is_distrusted
from glmdesk.core.history import History
from glmdesk.core.history_rounds import begin_round
from glmdesk.core.run_marker import RunMarker, crash_dir, dead_runs, marker_dir
from glmdesk.core.settings import CacheSettings, LoadSettings, ParamsBox, SamplingParams
from glmdesk.core.tools import FunctionSpec, ToolCall, ToolSet
from glmdesk.engine.backends import Capabilities
from glmdesk.engine.chunk import GenerationChunk
from glmdesk.ui.app.app import window_with_history
from glmdesk.ui.history.history_access import HistoryAccess
from glmdesk.ui.history.history_controller import HistoryController
from glmdesk.ui.session.chat_session import ChatSession
from tests.helpers.fake_backend import FakeBackend

MS = 15_000


class StoredAtStart(FakeBackend):
    """Answers from a script, one answer per call; when each answer starts (on the worker
    thread) it reads this process's marker and, through a connection of its own, what the
    history file holds of the marked conversation."""

    def __init__(self, path, script) -> None:
        super().__init__()
        self.path, self.script, self.seen = path, list(script), []

    def stream(self, messages, params, cache=None, stop=None, conversation=None):
        (marker_file,) = marker_dir().glob("*.json")
        marker = json.loads(marker_file.read_text())
        with History(self.path, check=False) as history:
            stored = history.messages(marker["conversation_id"])
        self.seen.append((marker, [(m.id, m.role, m.text, m.state) for m in stored]))
        yield from self.script.pop(0)

    def capabilities(self) -> Capabilities:
        return Capabilities(engine="fake", kv_strategies={"full": None}, context_length=2048, tool_calls=True)


def text(t: str, reason: str = "stop") -> list[GenerationChunk]:
    from glmdesk.core.parts import TextPart

    return [GenerationChunk(parts=(TextPart(t),), n_generated=1, finish_reason=reason)]


@pytest.fixture
def recorded(qtbot, tmp_path):
    path = tmp_path / "h.sqlite3"
    call = ToolCall("get_weather", {"city": "Paris"})
    backend = StoredAtStart(
        path,
        [
            text("A1", "length"),  # new
            text(" more"),  # continue
            text("A2"),  # regenerate
            text("A3"),  # edit
            [GenerationChunk(finish_reason="tool_calls", tool_call=call, tool_calls=(call,), n_generated=3)],
            text("It is 22."),  # the tool round
        ],
    )
    session = ChatSession(ParamsBox(SamplingParams(max_new_tokens=8)), backend=backend)
    with qtbot.waitSignal(session.loader.model_ready, timeout=MS):
        session.loader.start(LoadSettings())
    history = History(path)
    controller = HistoryController(session, HistoryAccess(history))
    yield session, backend, controller
    session.shutdown()
    controller.close()
    history.close()


def answered(qtbot, session, start) -> None:
    with qtbot.waitSignal(session.answer_finished, timeout=MS):
        assert start()


def test_every_question_is_stored_before_the_engine_starts_on_it(qtbot, recorded):
    session, backend, controller = recorded
    cache = CacheSettings()
    answered(qtbot, session, lambda: session.send("Q1", "", cache))
    answered(qtbot, session, lambda: session.continue_answer("", cache))
    answered(qtbot, session, lambda: session.regenerate("", cache))
    answered(qtbot, session, lambda: session.rewind(0) and session.send("Q1 edited", "", cache))
    session.tools.set_tools(ToolSet((FunctionSpec("get_weather"),)))
    with qtbot.waitSignal(session.tools.gate.result_asked, timeout=MS) as asked:
        assert session.send("Weather in Paris?", "", cache)
    with qtbot.waitSignal(session.answer_ended, timeout=MS):
        asked.args[0].submit('{"temperature": 22}')
    assert not list(marker_dir().glob("*.json"))  # every answer took its marker away

    paths = ("new", "continue", "regenerate", "edit", "tool call", "tool round")
    assert len(backend.seen) == len(paths)
    for path, (marker, stored) in zip(paths, backend.seen, strict=True):
        assert marker["engine"] == "fake" and marker["model"] == "fake-model", path
        assert marker["front_end"] == "window" and marker["pid"] == os.getpid(), path
        answer = [row for row in stored if row[0] == marker["message_id"]]
        assert answer and answer[0][1] == "assistant" and answer[0][3] == "partial", path
    questions = {
        path: [row[2] for row in stored if row[1] == "user"]
        for path, (_, stored) in zip(paths, backend.seen, strict=True)
    }
    assert questions["new"] == ["Q1"]
    assert questions["continue"] == ["Q1"]
    assert [row[2] for row in backend.seen[1][1] if row[0] == backend.seen[1][0]["message_id"]] == ["A1"]
    assert questions["regenerate"] == ["Q1"]
    assert "Q1 edited" in questions["edit"]
    assert "Weather in Paris?" in questions["tool call"]
    assert [row[2] for row in backend.seen[5][1] if row[1] == "observation"] == ['{"temperature": 22}']


def killed_window_left(model: str, engine: str, crash_log: str = "") -> tuple[int, int]:
    """What a window killed while answering leaves: its question and an empty ``partial``
    answer in the history, and its marker with a pid that no longer runs."""
    with History() as history:
        cid, mid = begin_round(history, None, "Why is the sky blue?", model=model, settings={})
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    marker = RunMarker(engine, model, "window", int(gone.stdout), 1.0, 1.0e9, cid, mid, crash_log)
    (marker_dir() / f"{marker.pid}-window.json").write_text(json.dumps(marker.__dict__))
    return cid, mid


def started_window(qtbot, backend):
    window = window_with_history(backend=backend, options=lambda: {})
    qtbot.addWidget(window)
    window.show()
    with qtbot.waitSignal(window.history_controller.conversation_opened, timeout=MS):
        with qtbot.waitSignal(window.loader.model_ready, timeout=MS):
            window.start()
    return window


def test_the_next_start_tells_the_crash_marks_the_question_and_regenerates(qtbot):
    log = crash_dir() / "4242.log"
    log.write_text("Fatal Python error: Segmentation fault\n\nThread 0x1 (most recent call first):\n")
    cid, _ = killed_window_left("SmolLM2-135M-Instruct", "llamacpp", str(log))
    window = started_window(qtbot, FakeBackend(pieces=("Rayleigh", " scattering.")))
    try:
        notice = window.notice.text()
        assert "llama.cpp" in notice and "SmolLM2-135M-Instruct" in notice
        assert "Segmentation fault" in notice and str(log) in notice
        assert "will not choose llama.cpp by itself" in notice
        assert is_distrusted("llamacpp")
        assert window.history_controller.conversation_id == cid
        widgets = window.chat_view.messages()
        assert [w.role for w in widgets] == ["user"] and widgets[0].text() == "Why is the sky blue?"
        assert (
            widgets[0].note_label.text()
            == "The engine stopped while answering. Regenerate (Ctrl+R) writes the answer again."
        )
        assert not widgets[0].note_label.isHidden()
        button = window.notice.action_button
        assert button.isVisibleTo(window) and button.text() == "Regenerate"
        with qtbot.waitSignal(window.session.answer_finished, timeout=MS):
            button.click()
        assert [m.content for m in window.state.messages] == ["Why is the sky blue?", "Rayleigh scattering."]
        assert not window.notice.text()
        window.history_controller.flush()
        with History() as history:
            stored = history.messages(cid)
        assert [(m.role, m.text, m.complete) for m in stored] == [
            ("user", "Why is the sky blue?", True),
            ("assistant", "Rayleigh scattering.", True),
        ]  # the crashed run's empty answer is gone, not left "unfinished"
    finally:
        window.close()
        window.history_controller.close()
    assert dead_runs() == []  # told once


def test_a_kill_from_outside_is_told_without_distrusting_the_engine(qtbot):
    cid, mid = killed_window_left("SmolLM2-135M-Instruct", "transformers")
    with History() as history:
        history.checkpoint_partial(mid, "Because of Rayl")  # its last checkpoint before the kill
    window = started_window(qtbot, FakeBackend())
    try:
        assert "ended from outside or the computer lost power" in window.notice.text()
        assert "will not choose" not in window.notice.text()
        assert not is_distrusted("transformers")
        widgets = window.chat_view.messages()
        assert [(w.role, w.text()) for w in widgets] == [
            ("user", "Why is the sky blue?"),
            ("assistant", "Because of Rayl"),
        ]
        assert widgets[-1].note_label.text().startswith("The engine stopped")
        with History() as history:
            answer = history.get_message(mid)
        assert answer.complete and answer.finish_reason == "error" and answer.text == "Because of Rayl"
    finally:
        window.close()
        window.history_controller.close()


def test_regenerate_while_the_model_loads_asks_to_wait(qtbot):
    killed_window_left("m", "llamacpp")
    gate = threading.Event()
    window = window_with_history(
        backend=None, options=lambda: {}, factory=lambda _s: FakeBackend(load_gate=gate)
    )
    qtbot.addWidget(window)
    window.show()
    try:
        with qtbot.waitSignal(window.history_controller.conversation_opened, timeout=MS):
            window.start()
        window.notice.action_button.click()
        assert "Wait until the model has loaded" in window.notice.text()
        assert window.notice.action_button.isVisibleTo(window)
    finally:
        gate.set()
        window.close()
        window.history_controller.close()


def test_a_model_last_opened_on_the_crashed_engine_starts_on_auto(qtbot):
    from glmdesk.ui.common.settings_store import SettingsStore

    log = crash_dir() / "4243.log"
    log.write_text("Fatal Python error: Segmentation fault\n")
    killed_window_left("m", "llamacpp", str(log))
    SettingsStore().save_last_model(LoadSettings(engine="llamacpp"))  # picked in Open model before
    asked = []

    def factory(settings):
        asked.append(settings)
        return FakeBackend()

    window = window_with_history(backend=None, options=lambda: {}, factory=factory)
    qtbot.addWidget(window)
    window.show()
    try:
        with qtbot.waitSignal(window.loader.model_ready, timeout=MS):
            window.start()
        assert [s.engine for s in asked] == ["auto"]
        assert is_distrusted("llamacpp")
    finally:
        window.close()
        window.history_controller.close()


#: A window on a fake engine that streams its first piece and then waits for ever; it
#: prints "generating" once the answer is on screen (it is then killed from outside).
WINDOW_CHILD = """
import threading
from PySide6.QtWidgets import QApplication
app = QApplication([])
from glmdesk.ui.app.app import window_with_history
from tests.helpers.fake_backend import FakeBackend
backend = FakeBackend(pieces=("Because", " of", " Rayleigh"), gate=threading.Event())
window = window_with_history(backend=backend, options=lambda: {})
window.show()
window.loader.model_ready.connect(lambda *_: window.send_message("Why is the sky blue?"))
window.session.step_shown.connect(lambda *_: print("generating", flush=True))
window.start()
app.exec()
"""


def test_a_window_killed_while_answering_is_told_by_the_next_window(qtbot, tmp_path):
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    env = {**os.environ, "PYTHONPATH": root, "QT_QPA_PLATFORM": "offscreen"}
    child = subprocess.Popen(
        [sys.executable, "-c", WINDOW_CHILD],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout.readline().strip() == "generating", child.stderr.read()
        child.kill()
        child.wait(timeout=60)
    finally:
        child.kill()
    with History() as history:  # what the killed window left
        (conversation,) = history.list_conversations()
        stored = history.messages(conversation.id)
    assert [(m.role, m.text, m.complete) for m in stored] == [
        ("user", "Why is the sky blue?", True),
        ("assistant", "", False),
    ]
    window = started_window(qtbot, FakeBackend(pieces=("Rayleigh", " scattering.")))
    try:
        assert "was answering with fake-model" in window.notice.text()
        assert "ended from outside" in window.notice.text()
        widgets = window.chat_view.messages()
        assert [w.text() for w in widgets] == ["Why is the sky blue?"]
        assert widgets[0].note_label.text().startswith("The engine stopped while answering")
        with qtbot.waitSignal(window.session.answer_finished, timeout=MS):
            window.notice.action_button.click()
        assert window.state.messages[-1].content == "Rayleigh scattering."
    finally:
        window.close()
        window.history_controller.close()


def test_open_model_says_why_automatic_passes_a_crashed_engine_over(qtbot):
    from glmdesk.core.distrusted_engines import distrust_engine
    from glmdesk.ui.models.open_model_dialog import OpenModelDialog

    distrust_engine("llamacpp", "SmolLM2-135M-Instruct", "Segmentation fault")
    dialog = OpenModelDialog(LoadSettings(), {"engine:llamacpp": None})
    qtbot.addWidget(dialog)
    assert dialog.effective_engine() == "transformers"
    assert dialog.engine_note.text() == (
        "llama.cpp crashed while it answered, so Automatic runs this model on transformers; "
        "choose llama.cpp here to use it again."
    )
    dialog.engine_combo.setCurrentIndex(dialog.engine_combo.findData("llamacpp"))  # offered all the same
    assert dialog.effective_engine() == "llamacpp" and dialog.load_settings().engine == "llamacpp"


def test_picking_the_engine_in_open_model_trusts_it_again(qtbot, monkeypatch):
    from glmdesk.core.distrusted_engines import distrust_engine
    from glmdesk.ui.app.main_window import MainWindow
    from glmdesk.ui.models.open_model_dialog import OpenModelDialog

    distrust_engine("llamacpp")
    loads = []
    window = MainWindow(
        backend=FakeBackend(), options=lambda: {}, factory=lambda s: (loads.append(s), FakeBackend())[1]
    )
    qtbot.addWidget(window)
    with qtbot.waitSignal(window.loader.model_ready, timeout=MS):
        window.start()
    monkeypatch.setattr(OpenModelDialog, "exec", lambda self: OpenModelDialog.DialogCode.Accepted)
    monkeypatch.setattr(OpenModelDialog, "load_settings", lambda self: LoadSettings(engine="llamacpp"))
    with qtbot.waitSignal(window.loader.model_ready, timeout=MS):
        window.open_model_dialog()  # the user chose llama.cpp by name and pressed OK
    assert not is_distrusted("llamacpp") and loads[-1].engine == "llamacpp"
    window.close()
