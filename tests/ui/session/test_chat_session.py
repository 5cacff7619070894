"""ChatSession's rules, against the fake backend (milliseconds, no model).

Request ids, Stop, stale chunks ignored, checkpoint order, and for loads the same
rule as for answers: only the newest request's results count (issue 19, item 5).
"""

from __future__ import annotations

import threading

import pytest

from glmdesk.chat.events import AnswerDone, AnswerFailed, AnswerFigures, TextDelta
from glmdesk.chat.reader import parts_of
from glmdesk.core.parts import text_of
from glmdesk.core.settings import CacheSettings, LoadSettings, ParamsBox, SamplingParams
from glmdesk.ui.session.chat_session import ChatSession
from tests.helpers.fake_backend import FakeBackend

MS = 10_000


def _record(signal) -> list:
    calls: list = []
    signal.connect(lambda *args: calls.append(args))
    return calls


@pytest.fixture
def make_session(qtbot):
    sessions: list[ChatSession] = []

    def make(backend=None, factory=None) -> ChatSession:
        session = ChatSession(
            ParamsBox(SamplingParams(temperature=0.0)), backend, factory=factory, options=lambda: {}
        )
        sessions.append(session)
        return session

    yield make
    for session in sessions:
        session.shutdown()


def _ready(qtbot, session, backend) -> None:
    with qtbot.waitSignal(session.loader.model_ready, timeout=MS):
        session.loader.start(LoadSettings())
    assert session.loader.backend is backend and session.is_ready()


def test_answer_streams_and_is_added_once(qtbot, make_session) -> None:
    backend = FakeBackend()
    session = make_session(backend)
    _ready(qtbot, session, backend)
    added = _record(session.message_added)
    chunks = _record(session.step_shown)
    with qtbot.waitSignal(session.answer_finished, timeout=MS) as finished:
        assert session.send("Hi", "Be brief.", CacheSettings())
    assert finished.args[1].finish_reason == "stop"
    assert [text_of(parts_of(c[1])) for c in chunks] == ["Hello", ", ", "world", "."]
    assert [(m.role, m.content) for _, m, _ in added][:2] == [("user", "Hi"), ("assistant", "Hello, world.")]
    assert backend.requests[0][0].role == "system"  # the system prompt leads the request
    first_key = backend.conversations[0]
    with qtbot.waitSignal(session.answer_finished, timeout=MS):
        session.send("Again", "", CacheSettings())
    session.new_chat()
    with qtbot.waitSignal(session.answer_finished, timeout=MS):
        session.send("Hi", "", CacheSettings())
    # One KV-cache key per conversation: kept across its turns, a new one after New chat.
    assert backend.conversations[1] == first_key != backend.conversations[2]
    assert session.last_answer[1].finish_reason == "stop"
    assert not session.is_streaming()


def test_chunks_of_a_request_moved_past_are_ignored(qtbot, make_session) -> None:
    """The one rule, directly: a chunk or final chunk with an old id changes nothing."""
    gate = threading.Event()
    backend = FakeBackend(gate=gate)
    session = make_session(backend)
    _ready(qtbot, session, backend)
    chunks = _record(session.step_shown)
    finished = _record(session.answer_finished)
    session.send("Hi", "", CacheSettings())
    current = session.run._current
    qtbot.waitUntil(lambda: len(chunks) == 1, timeout=MS)
    session.run._on_step_received(current - 1, (TextDelta("stale"),), False)
    session.run._on_step_received(
        current - 1, (TextDelta("stale"), AnswerDone("stop", AnswerFigures())), True
    )
    assert len(chunks) == 1 and finished == [] and session.is_streaming()
    with qtbot.waitSignal(session.answer_finished, timeout=MS):
        gate.set()
    assert "stale" not in session.state.messages[-1].content


def test_stop_keeps_the_partial_answer(qtbot, make_session) -> None:
    gate = threading.Event()
    backend = FakeBackend(gate=gate)
    session = make_session(backend)
    _ready(qtbot, session, backend)
    chunks = _record(session.step_shown)
    with qtbot.waitSignal(session.answer_finished, timeout=MS) as finished:
        session.send("Hi", "", CacheSettings())
        qtbot.waitUntil(lambda: len(chunks) == 1, timeout=MS)
        session.stop_answer()
    assert finished.args[1].finish_reason == "cancelled"
    assert session.state.messages[-1].content == "Hello"
    assert session.state.records[-1].finish_reason == "cancelled"


def test_the_newest_load_wins(qtbot, make_session) -> None:
    """Issue 19 item 5: a second model opened while the first loads; the first finishes later."""
    first_gate = threading.Event()
    backends = {
        "first": FakeBackend("first", load_gate=first_gate),
        "second": FakeBackend("second"),
        None: FakeBackend("embedded"),
    }
    session = make_session(factory=lambda settings: backends[settings.model])
    with qtbot.waitSignal(session.loader.model_ready, timeout=MS):
        session.loader.start(LoadSettings())
    ready = _record(session.loader.model_ready)
    failed = _record(session.loader.load_failed)
    session.loader.load_model(LoadSettings(model="first"))
    session.loader.load_model(LoadSettings(model="second"))
    assert not session.send("Hi", "", CacheSettings())  # Send waits for the newest load
    with qtbot.waitSignal(session.loader.model_ready, timeout=MS):
        first_gate.set()
    assert [args[0].name for args in ready] == ["second"]
    assert failed == []  # the superseded load is silent
    assert session.loader.model_info.name == "second" and session.loader.load_settings.model == "second"
    qtbot.waitUntil(lambda: backends[None].closed, timeout=MS)  # the replaced model is released
    assert not backends["second"].closed


def test_a_superseded_load_that_finishes_is_released(qtbot, make_session) -> None:
    gate = threading.Event()
    backends = {"slow": FakeBackend("slow", load_gate=gate), "fast": FakeBackend("fast"), None: FakeBackend()}
    session = make_session(factory=lambda settings: backends[settings.model])
    with qtbot.waitSignal(session.loader.model_ready, timeout=MS):
        session.loader.start(LoadSettings())
    ready = _record(session.loader.model_ready)
    session.loader.load_model(LoadSettings(model="slow"))
    backends["slow"].load_gate = None  # it finishes even though it was cancelled
    gate.set()
    with qtbot.waitSignal(session.loader.model_ready, timeout=MS):
        session.loader.load_model(LoadSettings(model="fast"))
    qtbot.waitUntil(lambda: backends["slow"].closed, timeout=MS)
    assert [args[0].name for args in ready] == ["fast"] and session.loader.model_info.name == "fast"


def test_a_missing_last_model_falls_back_to_the_embedded_one(qtbot, make_session) -> None:
    backends = {"gone": FakeBackend("gone", fail_load="model_not_found"), None: FakeBackend("embedded")}
    session = make_session(factory=lambda settings: backends[settings.model])
    with qtbot.waitSignal(session.loader.model_ready, timeout=MS) as ready:
        with qtbot.waitSignal(session.loader.load_failed, timeout=MS) as failed:
            session.loader.start(LoadSettings(model="gone"))
    assert failed.args[0].kind == "model_not_found" and failed.args[1] is True
    assert ready.args[0].name == "embedded"


def test_window_streams_from_the_fake_backend(qtbot) -> None:
    from glmdesk.ui.app.main_window import MainWindow

    window = MainWindow(backend=FakeBackend(pieces=("你好", "，", "世界")), options=lambda: {})
    qtbot.addWidget(window)
    with qtbot.waitSignal(window.loader.model_ready, timeout=MS):
        window.start()
    with qtbot.waitSignal(window.session.answer_finished, timeout=MS):
        assert window.send_message("Hi")
    assert window.chat_view.messages()[-1].text() == "你好，世界"
    assert not window.input_box.is_streaming()
    window.close()


class _BrokenBackend(FakeBackend):
    """Writes one piece, then its engine fails (raises: a bug, not a worded error)."""

    def stream(self, messages, params, cache=None, stop=None, conversation=None):
        yield from list(super().stream(messages, params, cache, stop, conversation))[:1]
        raise RuntimeError("the driver went away")


def test_a_backend_that_raises_ends_the_answer_with_a_sentence_and_keeps_its_text(
    qtbot, make_session
) -> None:
    backend = _BrokenBackend()
    session = make_session(backend)
    _ready(qtbot, session, backend)
    steps = _record(session.step_shown)
    with qtbot.waitSignal(session.answer_finished, timeout=MS) as finished:
        session.send("Hi", "", CacheSettings())
    end = finished.args[1]
    assert isinstance(end, AnswerFailed) and end.error.kind == "generation_failed"
    assert "the driver went away" in end.error.message
    assert text_of(parts_of(steps[0][1])) == "Hello" and isinstance(steps[-1][1][-1], AnswerFailed)
    assert session.state.messages[-1].content == "Hello"
    assert session.state.records[-1].finish_reason == "error"
    assert not session.is_streaming()
