"""Messages as a conversation with versions: edit, regenerate, switch, delete; the welcome;
the status bar's reset; the history list highlights the conversation on screen.

These use the real embedded model (greedy, at most 24 new tokens), loaded once per session.
"""

from __future__ import annotations

import json

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication

from glmdesk.core.settings import SamplingParams

ANSWER_MS = 120_000


def _answer(qtbot, window, start) -> None:
    with qtbot.waitSignal(window.session.answer_finished, timeout=ANSWER_MS):
        assert start()


def _texts(window) -> list[str]:
    return [w.text() for w in window.chat_view.messages()]


def test_welcome_example_prompt_is_sent_and_new_chat_brings_it_back(qtbot, wired) -> None:
    window, history, panel, controller = wired
    area = window.chat_area
    assert area.showing_welcome()
    assert window.model_info.name.replace("-", "\u2011") in area.welcome.title_label.text()
    button = area.welcome.example_buttons[0]
    with qtbot.waitSignal(window.session.answer_finished, timeout=ANSWER_MS):
        qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
    assert not area.showing_welcome()
    assert _texts(window)[0] == button.text()
    assert controller.flush(10)
    assert history.messages(controller.conversation_id)[0].text == button.text()
    # The status bar shows this answer's figures; New clears them with the conversation.
    assert window.status.speed_label.text()
    window.new_chat()
    assert area.showing_welcome()
    assert window.status.speed_label.text() == "" and window.status.cache_label.text() == ""
    assert panel.current_conversation_id() is None


def test_status_figures_reset_when_an_answer_starts(qtbot, window) -> None:
    _answer(qtbot, window, lambda: window.send_message("Hi"))
    assert window.status.speed_label.text()
    seen = []
    window.session.step_shown.connect(lambda _rid, _step: seen.append(window.status.speed_label.text()))
    _answer(qtbot, window, lambda: window.send_message("Again"))
    assert seen and set(seen) == {""}  # no stale speed while the new answer is written
    assert window.status.speed_label.text()  # the new answer's own figures


def test_regenerate_and_edit_make_versions_and_the_switch_moves_between_them(qtbot, wired, tmp_path) -> None:
    window, history, panel, controller = wired
    actions = window.branch_actions
    _answer(qtbot, window, lambda: window.send_message("Name a colour."))
    controller.flush()  # the history is written on its own thread; footers follow its writes
    first_answer = _texts(window)[1]
    cid = controller.conversation_id

    # Regenerate the answer: a second version beside the first, in the same conversation.
    window.sidebar.set_params(SamplingParams(temperature=1.5, top_p=1.0, max_new_tokens=12, seed=3))
    _answer(qtbot, window, lambda: actions.regenerate_at(1))
    controller.flush()
    footers = actions.footers()
    assert footers[1].position_label.text() == "2/2" and footers[1].position_label.isVisibleTo(footers[1])
    assert footers[1].previous_button.isEnabled() and not footers[1].next_button.isEnabled()
    assert footers[0].position_label.isHidden()  # one version only: no switch
    assert history.count_conversations() == 1
    assert len(history.tree(cid)) == 3

    # The switch shows the first version again, and back.
    assert controller.switch_sibling(1, -1)
    controller.flush()
    assert _texts(window)[1] == first_answer
    assert actions.footers()[1].position_label.text() == "1/2"
    actions.footers()[1].next_button.click()
    controller.flush()
    assert actions.footers()[1].position_label.text() == "2/2"

    # Edit the question: a new version of it with its own answer; the old one stays.
    _answer(qtbot, window, lambda: actions.edit_message(0, "Name a fruit."))
    controller.flush()
    assert _texts(window)[0] == "Name a fruit."
    assert actions.footers()[0].position_label.text() == "2/2"
    assert len(_texts(window)) == 2
    assert len(history.tree(cid)) == 5 and history.count_conversations() == 1
    actions.footers()[0].previous_button.click()
    controller.flush()
    assert _texts(window)[0] == "Name a colour." and len(_texts(window)) == 2

    # Export from the panel: JSON holds the tree, Markdown the branch on screen; import
    # reads the tree back with every version and opens it, highlighted in the list.
    panel.export_conversation(cid, tmp_path / "tree.json", "json")
    panel.export_conversation(cid, tmp_path / "branch.md", "markdown")
    exported = (tmp_path / "tree.json").read_text(encoding="utf-8")
    assert [m["parent"] for m in json.loads(exported)["messages"]] == [None, 0, 0, None, 3]
    markdown = (tmp_path / "branch.md").read_text(encoding="utf-8")
    assert "Name a colour." in markdown and "Name a fruit." not in markdown
    with qtbot.waitSignal(panel.conversation_imported, timeout=10_000) as imported:
        panel.import_conversation(tmp_path / "tree.json")
    controller.flush()
    copy = imported.args[0]
    assert len(history.tree(copy)) == 5
    assert controller.conversation_id == copy and panel.current_conversation_id() == copy
    assert _texts(window)[0] == "Name a colour."
    assert [f.position_label.text() for f in actions.footers()] == ["1/2", "2/2"]


def test_delete_copy_and_footer_figures(qtbot, wired) -> None:
    window, history, panel, controller = wired
    actions = window.branch_actions
    _answer(qtbot, window, lambda: window.send_message("Say **hello**."))
    controller.flush()
    footer = actions.footers()[1]
    assert not footer.is_revealed() and footer.stats_label.isVisible()  # figures: always, quietly
    assert not footer.buttons["regenerate"].isVisible()
    footer.set_revealed(True)  # what hovering does
    text = footer.stats_label.text()
    assert "tokens/s" in text and "TTFT" in text and "temperature 0.0" in text
    assert footer.stats_label.isVisible()
    footer.action_requested.emit("copy_markdown")
    assert QGuiApplication.clipboard().text() == _texts(window)[1]
    actions.footers()[0].action_requested.emit("copy_text")
    assert QGuiApplication.clipboard().text() == "Say hello."
    assert actions.delete_at(1)
    controller.flush()
    assert _texts(window) == ["Say **hello**."]
    assert [m.text for m in history.messages(controller.conversation_id)] == ["Say **hello**."]


def test_search_hit_on_another_branch_opens_it_and_is_highlighted(qtbot, wired) -> None:
    window, history, panel, controller = wired
    cid = history.create_conversation()
    q = history.add_message(cid, "user", "Which planet is red?")
    history.add_message(cid, "assistant", "Mars, the red planet.")
    other = history.add_message(cid, "assistant", "It is Mars (zebra branch).", parent_id=q)
    history.switch_branch(other - 1)  # the first answer is on screen
    panel.refresh()
    with qtbot.waitSignal(panel.search_finished, timeout=10_000):
        panel.search("zebra")
    panel.results_view.setCurrentIndex(panel.results.index(0))
    controller.flush()
    assert _texts(window)[-1] == "It is Mars (zebra branch)."
    assert controller.conversation_id == cid
    with qtbot.waitSignal(panel.search_finished, timeout=10_000):
        panel.search("no such words here")
    assert panel.no_results_label.isVisibleTo(panel) and "no such words here" in panel.no_results_label.text()
    panel.search("")
    assert panel.current_conversation_id() == cid and not panel.no_results_label.isVisibleTo(panel)
