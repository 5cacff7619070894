"""Tool calls reopened from the history look as they did while streaming, and each
conversation's Tools section is kept with it (reopened, and after a restart)."""

from __future__ import annotations

import json

import pytest
from PySide6.QtWidgets import QLabel

from glmdesk.core.history import History
from glmdesk.core.tools import INTERPRETER, ConversationTools, ToolCall, parse_functions
from glmdesk.ui.app.app import window_with_history
from glmdesk.ui.tools.tool_call_card import ToolCallCard
from tests.helpers.fake_backend import FakeBackend

MS = 10_000
WEATHER = '[{"name": "get_weather", "parameters": {"type": "object"}}]'


def png(width: int = 4, height: int = 3) -> bytes:
    from PySide6.QtCore import QBuffer, QByteArray, QIODevice
    from PySide6.QtGui import QImage

    image = QImage(width, height, QImage.Format.Format_RGB32)
    image.fill(0x3366CC)
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    assert image.save(buffer, "PNG")
    return bytes(data)


@pytest.fixture
def open_window(qtbot):
    """Factory: a window on the fake backend with the history (in GLMDESK_HOME) open."""
    made = []

    def make():
        window = window_with_history(backend=FakeBackend(pieces=("Done", ".")), options=lambda: {})
        qtbot.addWidget(window)
        controller = window.history_controller
        assert controller is not None
        window.show()
        with qtbot.waitSignal(window.loader.model_ready, timeout=MS):
            window.start()
        made.append((window, controller))
        return window, controller

    yield make
    for window, controller in made:
        window.close()
        controller.close()
        controller.history.close()


def fill_calls(cid: int) -> None:
    with History() as h:
        h.add_message(cid, "user", "北京天气？画个图")
        h.add_tool_call(cid, ToolCall("get_weather", {"city": "北京"}))
        h.add_observation(cid, '{"temperature": 22}', name="get_weather")
        h.add_tool_call(cid, ToolCall(INTERPRETER, {"code": "plot([1, 2])"}, "", "interpreter"), "画图：")
        h.add_observation(cid, "```result\n[Image]\n```", name=INTERPRETER)
        h.add_image(cid, png(), name=INTERPRETER)
        h.add_message(cid, "assistant", "22 度，图在上面。", finish_reason="stop")


def test_a_reopened_conversation_shows_cards_observation_blocks_and_images(qtbot, open_window) -> None:
    with History() as h:
        cid = h.create_conversation("tools")
    fill_calls(cid)
    window, controller = open_window()
    controller.panel.refresh()
    with qtbot.waitSignal(controller.conversation_opened, timeout=MS):
        assert controller.panel.select_conversation(cid)  # as a click in the history panel
    widgets = window.chat_view.messages()
    assert [w.role for w in widgets] == [
        "user",
        "assistant",
        "observation",
        "assistant",
        "observation",
        "assistant",
    ]
    call, code = widgets[1].attachments[0], widgets[3].attachments[0]
    assert isinstance(call, ToolCallCard) and window.chat_view.cards() == [call, code]
    assert "get_weather" in call.title.text() and '"city": "北京"' in call.arguments.toPlainText()
    assert code.arguments.toPlainText() == "plot([1, 2])" and widgets[3].text() == "画图："
    for card in (call, code):  # answered: nothing left to click
        assert all(b.isHidden() for b in (card.send_button, card.kill_button, card.decline_button))
    assert widgets[1].view.isHidden() and not widgets[3].view.isHidden()
    assert widgets[2].text() == '{"temperature": 22}' and widgets[2].author_label.text() == "Tool result"
    images = [a for a in widgets[4].attachments if isinstance(a, QLabel)]
    assert len(images) == 1 and images[0].objectName() == "tool_image"
    assert (images[0].pixmap().width(), images[0].pixmap().height()) == (4, 3)
    assert all("```json" not in w.text() and "data:image" not in w.text() for w in widgets)
    # The conversation continues from what was stored (the image is no prompt message).
    assert [m.role for m in window.session.state.messages][-2:] == ["observation", "assistant"]
    assert window.session.state.messages[4].images == (png(),)
    window.chat_view.remove_last()  # a message's cards go with it
    window.chat_view.remove_last()
    window.chat_view.remove_last()
    assert window.chat_view.cards() == [call]
    qtbot.waitUntil(lambda: len(window.chat_view.findChildren(ToolCallCard)) == 1, timeout=MS)
    window.chat_view.clear()
    assert window.chat_view.cards() == [] and window.chat_view.messages() == []


def test_tools_section_is_kept_per_conversation_and_after_a_restart(qtbot, open_window) -> None:
    with History() as h:
        a, b = h.create_conversation("a"), h.create_conversation("b")
    window, controller = open_window()
    panel = window.sidebar.tools_panel
    with qtbot.waitSignal(controller.conversation_opened, timeout=MS):
        controller.open_conversation(a)
    assert panel.current_mode() == "none"
    panel.set_mode("functions", WEATHER)
    panel.max_rounds.setValue(3)
    with qtbot.waitSignal(controller.conversation_opened, timeout=MS):
        controller.open_conversation(b)
    assert panel.current_mode() == "none" and panel.functions_edit.toPlainText() == ""
    panel.set_mode("interpreter")
    panel.always_run.setChecked(True)
    assert window.session.tools.settings.always_run
    with qtbot.waitSignal(controller.conversation_opened, timeout=MS):
        controller.open_conversation(a)
    assert panel.choice() == ConversationTools("functions", WEATHER, max_rounds=3)
    assert [f.name for f in window.session.tools.toolset.functions] == ["get_weather"]  # offered again
    assert window.session.tools.settings.max_rounds == 3
    with qtbot.waitSignal(controller.conversation_opened, timeout=MS):
        controller.open_conversation(b)
    assert panel.current_mode() == "interpreter"
    assert not panel.always_run.isChecked() and not window.session.tools.settings.always_run  # never restored
    # A new conversation is stored with the section as set when its first message went out.
    window.new_chat()
    panel.set_mode("functions", WEATHER + " ")  # typed but not valid yet: kept as typed
    with qtbot.waitSignal(window.session.answer_finished, timeout=MS):
        assert window.send_message("hi")
    assert controller.flush(10)  # history writes run on the writer thread
    new_id = controller.conversation_id
    assert (
        new_id not in (a, b) and controller.history.conversation_tools(new_id).functions_json == WEATHER + " "
    )
    window.close()

    # The app again (a new window and database connection on the same file).
    window2, controller2 = open_window()
    panel2 = window2.sidebar.tools_panel
    for cid, mode in ((a, "functions"), (b, "interpreter"), (new_id, "functions")):
        with qtbot.waitSignal(controller2.conversation_opened, timeout=MS):
            controller2.open_conversation(cid)
        assert panel2.current_mode() == mode and not panel2.always_run.isChecked()
    assert panel2.functions_edit.toPlainText() == WEATHER + " "


def test_a_duplicated_conversation_opens_with_the_same_tools_section(qtbot, open_window) -> None:
    with History() as h:
        a, b = h.create_conversation("functions"), h.create_conversation("interpreter")
        for cid in (a, b):
            h.add_message(cid, "user", "hi")
    window, controller = open_window()
    panel, history_panel = window.sidebar.tools_panel, controller.panel
    with qtbot.waitSignal(controller.conversation_opened, timeout=MS):
        controller.open_conversation(a)
    panel.set_mode("functions", WEATHER)
    panel.max_rounds.setValue(3)
    with qtbot.waitSignal(controller.conversation_opened, timeout=MS):
        controller.open_conversation(b)
    panel.set_mode("interpreter")
    panel.timeout.setValue(30)
    panel.always_run.setChecked(True)
    assert window.session.tools.settings.always_run
    copies = []
    for source, choice in (
        (a, ConversationTools("functions", WEATHER, max_rounds=3)),
        (b, ConversationTools("interpreter", timeout_s=30.0)),
    ):
        with qtbot.waitSignal(history_panel.conversation_duplicated, timeout=MS) as duplicated:
            history_panel.duplicate_conversation(source)  # as its menu item does
        copy = duplicated.args[1]
        copies.append(copy)
        qtbot.waitUntil(lambda copy=copy: controller.conversation_id == copy, timeout=MS)
        assert copy not in (a, b) and panel.choice() == choice
        assert not panel.always_run.isChecked() and not window.session.tools.settings.always_run
        assert window.session.tools.settings.max_rounds == choice.max_rounds
    assert [f.name for f in window.session.tools.toolset.functions] == []  # the interpreter's copy is open
    with qtbot.waitSignal(controller.conversation_opened, timeout=MS):
        controller.open_conversation(copies[0])  # the copy of the functions conversation
    assert [f.name for f in window.session.tools.toolset.functions] == [
        "get_weather"
    ]  # offered as in its source


def test_an_import_with_unusable_tools_opens_and_says_why(qtbot, open_window, tmp_path) -> None:
    with History() as h:
        cid = h.create_conversation("天气")
        h.add_message(cid, "user", "北京天气？")
        h.set_conversation_tools(cid, ConversationTools("functions", WEATHER))
        doc = json.loads(h.export_json(cid))
    window, controller = open_window()
    panel, notice = window.sidebar.tools_panel, window.notice
    bad = '[{"name": "get weather"}]'
    doc["conversation"]["tools"]["functions"] = bad
    kept = tmp_path / "kept.json"
    kept.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    with qtbot.waitSignal(controller.conversation_opened, timeout=MS) as opened:
        controller.panel.import_conversation(kept)
    assert opened.args[0] != cid and [w.text() for w in window.chat_view.messages()] == ["北京天气？"]
    (problem,) = parse_functions(bad)[1]
    assert notice.kind == "error" and "“天气” was imported" in notice.text() and problem in notice.text()
    assert panel.current_mode() == "functions" and panel.functions_edit.toPlainText() == bad  # as written
    assert panel.problems() == [problem] and window.session.tools.toolset.functions == ()  # nothing offered
    doc["conversation"]["tools"] = {"mode": "shell"}
    doc["conversation"]["title"] = ""
    dropped = tmp_path / "dropped.json"
    dropped.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    with qtbot.waitSignal(controller.conversation_opened, timeout=MS):
        controller.panel.import_conversation(dropped)
    assert "“Untitled” was imported without its Tools section" in notice.text() and "'shell'" in notice.text()
    assert panel.current_mode() == "none"
    with qtbot.waitSignal(controller.conversation_opened, timeout=MS):
        controller.open_conversation(cid)  # said once: another conversation shows no note
    assert notice.text() == ""
