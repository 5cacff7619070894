"""The window with the real embedded model: streaming, Stop, mid-answer settings, closing.

Issue 3's window tests, and issue 7 cases 10 (Stop right after Send), 13 (control
characters) and 14 (close while an answer streams).
"""

from __future__ import annotations

from dataclasses import replace

from PySide6.QtCore import Qt

from glmdesk.core.settings import SamplingParams

ANSWER_MS = 120_000


def _record(signal) -> list:
    calls: list = []
    signal.connect(lambda *args: calls.append(args))  # GUI-thread signal: runs in the GUI thread
    return calls


def _send(qtbot, window, text: str):
    """Send ``text`` and wait for the answer; return how it ended (``AnswerDone``)."""
    with qtbot.waitSignal(window.session.answer_finished, timeout=ANSWER_MS) as blocker:
        assert window.send_message(text)
    return blocker.args[1]


def test_answer_arrives_in_chunks_before_finished(qtbot, window) -> None:
    events: list[str] = []
    window.session.step_shown.connect(lambda *_: events.append("chunk"))
    window.session.answer_finished.connect(lambda *_: events.append("finished"))
    added = _record(window.session.message_added)

    final = _send(qtbot, window, "Count from 1 to 20, separated by commas.")

    assert events.count("chunk") >= 3
    assert events[-1] == "finished" and events.index("finished") == len(events) - 1
    assert final.finish_reason in ("stop", "length")
    answer = window.state.messages[-1]
    assert answer.role == "assistant" and answer.content.strip()
    assert window.chat_view.messages()[-1].text() == answer.content
    assert not window.input_box.is_streaming() and window.chat_view.streaming_message() is None
    assert [m.role for _, m, _ in added] == ["user", "assistant"]  # each saved once
    assert "tokens/s" in window.status.speed_label.text()


def test_stop_mid_answer_then_send_again(qtbot, window) -> None:
    window.sidebar.set_params(replace(window.sidebar.params(), max_new_tokens=300))
    added = _record(window.session.message_added)
    chunks = _record(window.session.step_shown)
    with qtbot.waitSignal(window.session.answer_finished, timeout=ANSWER_MS) as finished:
        window.send_message("Write a long story about a lighthouse keeper.")
        qtbot.waitUntil(lambda: len(chunks) >= 3, timeout=ANSWER_MS)
        assert window.input_box.send_button.text() == "Stop"
        seen_at_stop = chunks[-1][1][0].figures.n_generated
        qtbot.keyClick(window.input_box.editor, Qt.Key.Key_Escape)  # Esc stops
    final = finished.args[1]
    assert final.finish_reason == "cancelled"
    assert final.figures.n_generated <= seen_at_stop + 1  # within one token
    partial = window.state.messages[-1]
    assert partial.role == "assistant" and partial.content
    assert window.state.records[-1].finish_reason == "cancelled"
    assert window.input_box.send_button.text() == "Send"

    again = _send(qtbot, window, "Now say hello.")
    assert again.finish_reason in ("stop", "length")
    assert [m.role for m in window.state.messages] == ["user", "assistant", "user", "assistant"]
    assert [m.role for _, m, _ in added].count("assistant") == 2  # the partial answer saved once


def test_stop_right_after_send(qtbot, window) -> None:
    """Issue 7 case 10: Stop before the first token leaves no "writing..." state behind."""
    with qtbot.waitSignal(window.session.answer_finished, timeout=ANSWER_MS) as finished:
        assert window.send_message("Tell me about the sea.")
        window.stop_answer()
    assert finished.args[1].finish_reason == "cancelled"
    assert finished.args[1].figures.n_generated <= 1
    assert not window.is_streaming() and not window.input_box.is_streaming()
    assert window.chat_view.streaming_message() is None
    assert not any(w.is_streaming() for w in window.chat_view.messages())
    assert _send(qtbot, window, "Say hello.").finish_reason in ("stop", "length")


def test_temperature_moved_mid_answer_reaches_engine(qtbot, window) -> None:
    window.sidebar.set_params(replace(window.sidebar.params(), temperature=0.0, max_new_tokens=40))
    reads: list[SamplingParams] = []
    box = window.params_box
    real_get = box.get

    def recording_get() -> SamplingParams:  # called by the decode loop on the worker thread
        params = real_get()
        reads.append(params)
        return params

    box.get = recording_get
    chunks = _record(window.session.step_shown)
    with qtbot.waitSignal(window.session.answer_finished, timeout=ANSWER_MS):
        window.send_message("List ten fruits.")
        qtbot.waitUntil(lambda: len(chunks) >= 2, timeout=ANSWER_MS)
        window.sidebar.temperature.slider.setValue(150)  # the user drags the slider to 1.5
        assert window.sidebar.params().temperature == 1.5
        reads_at_move = len(reads)
        qtbot.waitUntil(lambda: len(reads) > reads_at_move + 1, timeout=ANSWER_MS)
    temperatures = [p.temperature for p in reads]
    assert temperatures[0] == 0.0
    assert 1.5 in temperatures[reads_at_move:]
    first_new = temperatures.index(1.5)
    assert all(t == 0.0 for t in temperatures[:first_new])
    assert all(t == 1.5 for t in temperatures[first_new:])


def test_control_characters_and_surrogates_are_shown_without_crashing(qtbot, window) -> None:
    """Issue 7 case 13: NUL, escape sequences and a lone surrogate in a pasted message."""
    text = "Repeat: a\x00b \x1b[31mred\x1b[0m \ud800 end"
    final = _send(qtbot, window, text)
    assert final.finish_reason in ("stop", "length")
    assert window.state.messages[0].content == text  # kept exactly for history
    shown = window.chat_view.messages()[0].view.toPlainText()
    assert "\u2400" in shown and "\u241b" in shown and "\x00" not in shown
    # Pasted into the input box and sent with Enter.
    window.input_box.editor.insertPlainText("paste\x00d \x07bell")
    with qtbot.waitSignal(window.session.answer_finished, timeout=ANSWER_MS):
        qtbot.keyClick(window.input_box.editor, Qt.Key.Key_Return)
    assert window.state.messages[2].content.startswith("paste")


def test_closing_mid_answer_shuts_down_cleanly(qtbot, window, qtlog) -> None:
    """Issue 7 case 14 (answer streaming): the partial answer is kept, the thread ends."""
    window.sidebar.set_params(replace(window.sidebar.params(), max_new_tokens=300))
    added = _record(window.session.message_added)
    chunks = _record(window.session.step_shown)
    window.send_message("Write a long story about a cat.")
    qtbot.waitUntil(lambda: len(chunks) >= 2, timeout=ANSWER_MS)
    window.close()
    assert window.worker_thread.isFinished()
    assert not window.is_streaming()
    assistant = [(m, r) for _, m, r in added if m.role == "assistant"]
    assert len(assistant) == 1 and assistant[0][0].content
    assert assistant[0][1].finish_reason == "cancelled"
    assert not [r for r in qtlog.records if "Destroyed while thread" in r.message]


def test_regenerate_and_new_chat(qtbot, window) -> None:
    _send(qtbot, window, "Name a colour.")
    removed = _record(window.session.last_answer_removed)
    with qtbot.waitSignal(window.session.answer_finished, timeout=ANSWER_MS):
        window.regenerate_action.trigger()
    assert len(removed) == 1
    assert [m.role for m in window.state.messages] == ["user", "assistant"]
    assert len(window.chat_view.messages()) == 2
    window.new_chat_action.trigger()
    assert len(window.state) == 0 and window.chat_view.messages() == []
