"""Widgets on their own: input keys and IME, the sidebar's refusals, the gauge's CPU
fallback, safe Markdown, the repaint throttle, remembered settings, translations."""

from __future__ import annotations

import re
import sys
import types

import pytest
from PySide6.QtCore import QCoreApplication, Qt, QTranslator, QUrl
from PySide6.QtGui import QInputMethodEvent

from glmdesk.core.errors import ERROR_KINDS, ErrorInfo
from glmdesk.core.settings import SamplingParams
from glmdesk.engine.memory import MemoryProbe
from glmdesk.ui.chat.chat_view import ChatView
from glmdesk.ui.chat.input_box import InputBox
from glmdesk.ui.chat.markdown_view import MarkdownView
from glmdesk.ui.common.messages import error_sentence
from glmdesk.ui.common.settings_store import SCHEMA_VERSION, SettingsStore
from glmdesk.ui.sidebar.memory_gauge import MemoryGauge
from glmdesk.ui.sidebar.sidebar import Sidebar

WAIT_MS = 5000


# Input box -------------------------------------------------------------------------
@pytest.fixture
def box(qtbot) -> InputBox:
    widget = InputBox()
    qtbot.addWidget(widget)
    widget.show()
    widget.editor.setFocus()
    return widget


def _compose(editor, preedit: str, commit: str = "") -> None:
    event = QInputMethodEvent(preedit, [])
    if commit:
        event.setCommitString(commit)
    QCoreApplication.sendEvent(editor, event)


def test_enter_sends_shift_enter_adds_a_line(qtbot, box) -> None:
    qtbot.keyClicks(box.editor, "hello")
    with qtbot.assertNotEmitted(box.message_submitted):
        qtbot.keyClick(box.editor, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
    assert box.text() == "hello\n"
    qtbot.keyClicks(box.editor, "world")
    with qtbot.waitSignal(box.message_submitted, timeout=WAIT_MS) as blocker:
        qtbot.keyClick(box.editor, Qt.Key.Key_Return)
    assert blocker.args == ["hello\nworld"]


def test_enter_while_ime_composes_does_not_send(qtbot, box) -> None:
    _compose(box.editor, "ni")
    assert box.editor.composing
    with qtbot.assertNotEmitted(box.message_submitted):
        qtbot.keyClick(box.editor, Qt.Key.Key_Return)
        qtbot.keyClick(box.editor, Qt.Key.Key_Enter)
    _compose(box.editor, "", commit="你好")
    assert not box.editor.composing
    with qtbot.waitSignal(box.message_submitted, timeout=WAIT_MS) as blocker:
        qtbot.keyClick(box.editor, Qt.Key.Key_Return)
    assert blocker.args == ["你好"]


def test_blank_text_is_not_sent_and_esc_stops(qtbot, box) -> None:
    box.set_text("  \n\t ")
    with qtbot.assertNotEmitted(box.message_submitted):
        qtbot.keyClick(box.editor, Qt.Key.Key_Return)
        box.send_button.click()
    with qtbot.waitSignal(box.stop_requested, timeout=WAIT_MS):
        qtbot.keyClick(box.editor, Qt.Key.Key_Escape)
    box.set_text("hi")
    box.set_streaming(True)
    assert box.send_button.text() == "Stop"
    with qtbot.assertNotEmitted(box.message_submitted):
        qtbot.keyClick(box.editor, Qt.Key.Key_Return)  # no second message while one streams
    with qtbot.waitSignal(box.stop_requested, timeout=WAIT_MS):
        box.send_button.click()


# Sidebar ---------------------------------------------------------------------------
def test_repetition_penalty_below_one_is_refused_with_a_reason(qtbot) -> None:
    """Issue 7 case 3, window side."""
    sidebar = Sidebar(SamplingParams(repetition_penalty=1.2))
    qtbot.addWidget(sidebar)
    sidebar.show()
    with qtbot.assertNotEmitted(sidebar.params_changed):
        sidebar.repetition_penalty.spin.setValue(0.8)
    assert sidebar.refused_label.isVisible()
    assert "0.80" in sidebar.refused_label.text() and "1.0" in sidebar.refused_label.text()
    assert sidebar.params().repetition_penalty == 1.2
    with qtbot.waitSignal(sidebar.params_changed, timeout=WAIT_MS) as blocker:
        sidebar.repetition_penalty.spin.setValue(1.5)
    assert blocker.args[0].repetition_penalty == 1.5
    assert not sidebar.refused_label.isVisible()


def test_sidebar_builds_valid_params_and_cache_choices(qtbot) -> None:
    sidebar = Sidebar()
    qtbot.addWidget(sidebar)
    with qtbot.waitSignal(sidebar.params_changed, timeout=WAIT_MS) as blocker:
        sidebar.top_k.setValue(40)
    assert blocker.args[0].top_k == 40
    sidebar.seed.setText("1234")
    with qtbot.waitSignal(sidebar.params_changed, timeout=WAIT_MS) as blocker:
        sidebar.seed.editingFinished.emit()
    assert blocker.args[0].seed == 1234
    sidebar.set_cache_availability({"full": None, "sliding_window": None, "dynamic": "needs a GPU"})
    combo = sidebar.cache_combo
    assert not combo.model().item(combo.findData("dynamic")).isEnabled()
    assert combo.model().item(combo.findData("dynamic")).toolTip() == "needs a GPU"
    with qtbot.waitSignal(sidebar.cache_settings_changed, timeout=WAIT_MS) as blocker:
        combo.setCurrentIndex(combo.findData("sliding_window"))
    assert blocker.args[0].strategy == "sliding_window" and sidebar.window_spin.isEnabled()


# Memory gauge ----------------------------------------------------------------------
def _gauge(qtbot) -> MemoryGauge:
    gauge = MemoryGauge(MemoryProbe())
    qtbot.addWidget(gauge)
    gauge.show()
    qtbot.waitUntil(lambda: gauge.probe.fallback != "probing", timeout=WAIT_MS)
    gauge.poll()
    return gauge


def test_gauge_cpu_fallback_without_pynvml(qtbot, monkeypatch) -> None:
    """Issue 7 case 11: nvidia-ml-py not installed."""
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml raises ImportError
    gauge = _gauge(qtbot)
    assert gauge.title_label.text() == "CPU, no GPU found"
    assert gauge.reading.source == "cpu" and gauge.reading.fallback == "pynvml_missing"
    assert gauge.reading.used_mib > 0
    for _ in range(5):
        gauge.poll()
        assert gauge.last_poll_ms < 20  # a few ms at most, even on a busy CI core
    gauge.stop()


def test_gauge_cpu_fallback_when_nvml_library_is_missing(qtbot, monkeypatch) -> None:
    """Issue 7 case 11: no NVIDIA driver (NVML library not found)."""
    pynvml = pytest.importorskip("pynvml")

    def not_found() -> None:
        raise pynvml.NVMLError_LibraryNotFound()

    monkeypatch.setattr(pynvml, "nvmlInit", not_found)
    gauge = _gauge(qtbot)
    assert gauge.title_label.text() == "CPU, no GPU found"
    assert gauge.reading.fallback == "library_not_found"
    gauge.stop()


def test_gauge_reads_nvml_and_survives_a_lost_gpu(qtbot, monkeypatch) -> None:
    fake = types.ModuleType("pynvml")

    class NVMLError(Exception):
        pass

    fake.NVMLError = NVMLError
    fake.NVMLError_LibraryNotFound = type("NVMLError_LibraryNotFound", (NVMLError,), {})
    fake.nvmlInit = lambda: None
    fake.nvmlShutdown = lambda: None
    fake.nvmlDeviceGetCount = lambda: 1
    fake.nvmlDeviceGetHandleByIndex = lambda i: ("handle", i)
    fake.nvmlDeviceGetName = lambda h: b"Fake GPU"
    fake.nvmlDeviceGetMemoryInfo = lambda h: types.SimpleNamespace(
        used=3 << 30, total=16 << 30, free=13 << 30
    )
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    gauge = _gauge(qtbot)
    gauge.set_weights_bytes(1 << 30)
    gauge.set_kv_bytes(256 << 20)
    gauge.poll()
    assert gauge.title_label.text() == "GPU: Fake GPU"
    reading = gauge.reading
    assert (reading.used_mib, reading.total_mib, reading.weights_mib, reading.kv_mib) == (
        3072,
        16384,
        1024,
        256,
    )
    assert reading.other_mib == 3072 - 1024 - 256

    def lost(_handle):
        raise NVMLError("GPU is lost")

    fake.nvmlDeviceGetMemoryInfo = lost
    gauge.poll()  # never raises
    assert gauge.reading.source == "cpu" and gauge.title_label.text() == "CPU, no GPU found"
    gauge.stop()


# Markdown and the chat view ---------------------------------------------------------
def test_markdown_loads_nothing_and_opens_only_web_links(qtbot, monkeypatch) -> None:
    opened: list[QUrl] = []
    monkeypatch.setattr("glmdesk.ui.chat.markdown_view.QDesktopServices.openUrl", opened.append)
    view = MarkdownView()
    qtbot.addWidget(view)
    view.resize(500, 200)
    view.show()
    view.set_markdown(
        "# Title\n\n![remote](http://example.com/track.png) ![local](file:///etc/passwd)\n\n"
        "<img src='http://example.com/x.png'> [site](https://example.org) [bad](javascript:alert(1))\n\n"
        "```python\ndef f(x):\n    return x  # comment\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"
    )
    view.grab()  # lay out and paint: images would be requested now
    blocked = {u.toString() for u in view.blocked_resources}
    assert {"http://example.com/track.png", "file:///etc/passwd"} <= blocked
    assert "<img" in view.toPlainText()  # raw HTML is shown as text, never interpreted
    refused: list[QUrl] = []
    view.link_refused.connect(refused.append)
    view.anchorClicked.emit(QUrl("javascript:alert(1)"))
    view.anchorClicked.emit(QUrl("file:///etc/passwd"))
    view.anchorClicked.emit(QUrl("https://example.org"))
    assert [u.toString() for u in opened] == ["https://example.org"]
    assert len(refused) == 2
    code = view.document().findBlockByNumber(2)
    while code.isValid() and "def f" not in code.text():
        code = code.next()
    assert code.layout().formats()  # the keyword and comment are coloured


def test_chat_view_repaints_at_most_about_30_times_a_second(qtbot) -> None:
    view = ChatView()
    qtbot.addWidget(view)
    view.show()
    view.begin_stream()
    for i in range(2000):  # far faster than any model
        view.append_text(f"token{i} ")
    assert view.render_count == 0  # nothing rendered synchronously
    qtbot.waitUntil(lambda: view.render_count >= 1, timeout=WAIT_MS)
    assert view.render_count == 1
    widget = view.finish_stream()
    assert widget.text().endswith("token1999 ") and not widget.is_streaming()


def test_chat_view_follows_the_end_unless_scrolled_up(qtbot) -> None:
    view = ChatView()
    qtbot.addWidget(view)
    view.resize(500, 300)
    view.show()
    for i in range(12):
        view.add_message("user" if i % 2 == 0 else "assistant", f"message {i}\n\nline two")
    bar = view.verticalScrollBar()
    qtbot.waitUntil(lambda: bar.maximum() > 0 and bar.value() == bar.maximum(), timeout=WAIT_MS)
    bar.setValue(0)  # the user scrolls up to read
    assert not view.is_following()
    view.begin_stream()
    view.append_text("new text\n\n" * 20)
    view.finish_stream()
    qtbot.waitUntil(lambda: bar.maximum() > 0, timeout=WAIT_MS)
    assert bar.value() == 0
    view.scroll_to_end()
    view.append_text("x")
    assert view.is_following()


# Errors, settings, translations -----------------------------------------------------
def test_every_error_kind_has_a_sentence() -> None:
    params = {
        "path": "/m",
        "file": "model.safetensors",
        "detail": "d",
        "model": "a/b",
        "reason": "r",
        "quantization": "4bit",
        "precision": "fp16",
        "device": "cuda:0",
        "stage": "generation",
        "tokens": 9000,
        "limit": 8192,
        "name": "n",
        "value": "v",
        "option": "quantization:4bit",
        "head": "<html>",
        "architecture": "chatglm",
        "engine": "transformers",
        "url": "http://gpu-box:8000/v1",
        "status": 503,
        "seconds": 120,
        "title": "天气",
        "problems": "Function 1 needs a name.",
        "build": "native",
        "signal": "SIGSEGV",
    }
    for kind in ERROR_KINDS:
        sentence = error_sentence(ErrorInfo(kind, "ENGLISH FALLBACK", params))
        assert sentence != "ENGLISH FALLBACK" and "{" not in sentence, kind
    assert error_sentence(ErrorInfo("model_not_found", "fallback", {})) == "fallback"


def test_settings_persist_with_a_schema_version(qtbot, make_window, isolated_qsettings) -> None:
    window = make_window()
    window.sidebar.temperature.spin.setValue(1.25)
    window.sidebar.set_system_prompt("Be brief.")
    window.splitter.setSizes([0, 600, 420])
    window.close()
    store = SettingsStore()
    assert int(store.qsettings.value("schema_version")) == SCHEMA_VERSION
    assert store.sampling().temperature == 1.25
    again = make_window()
    assert again.sidebar.params().temperature == 1.25
    assert again.params_box.get().temperature == 1.25
    assert again.sidebar.system_prompt() == "Be brief."
    assert again.splitter.sizes()[2] == window.splitter.sizes()[2]
    assert list(isolated_qsettings.rglob("*.ini"))  # written under tmp_path only


class _Shouting(QTranslator):
    def translate(self, context, source, disambiguation=None, n=-1):  # noqa: D102
        # Upper-case the words, keep the {placeholders} as a translator would.
        return re.sub(r"[^{}]+(?=\{|$)|(?<=\})[^{}]+", lambda m: m.group(0).upper(), source)

    def isEmpty(self) -> bool:  # noqa: N802, D102
        return False


def test_visible_strings_are_translatable(qtbot, make_window) -> None:
    translator = _Shouting()
    QCoreApplication.installTranslator(translator)
    try:
        window = make_window()
        assert window.input_box.send_button.text() == "SEND"
        assert window.sidebar.refused_label.text() == ""
        assert window.open_action.text() == "&OPEN MODEL..."
        assert window.status.model_label.text() == "NO MODEL LOADED"
        qtbot.waitUntil(lambda: window.gauge.title_label.text() != "", timeout=WAIT_MS)
        assert window.gauge.title_label.text().isupper()
        assert error_sentence(ErrorInfo("load_cancelled", "x")) == "LOADING WAS CANCELLED."
    finally:
        QCoreApplication.removeTranslator(translator)
