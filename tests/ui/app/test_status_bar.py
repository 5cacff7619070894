"""The status bar: facts set apart, no empty ones, the engine line not twice (the welcome
says it), the server's state short with its address in the tooltip."""

from __future__ import annotations

from glmdesk.core.messages import ChatMessage


def test_facts_are_set_apart_and_the_engine_line_is_said_once(qtbot, window) -> None:
    status = window.status
    facts = [status.model_label, status.device_label, status.context_label, status.speed_label]
    assert all(label.property("fact") for label in facts)
    shown = [label for label in status._facts if not label.isHidden()]
    rules = [rule for rule in status._rules if not rule.isHidden()]
    assert len(rules) == len(shown) - 1  # one thin rule between each two facts shown
    assert status.speed_label.text() == "" and not status.speed_label.isVisible()  # empty: no room
    assert not status.cache_label.isVisible()
    window.engine_upgrade.line_changed.emit("Engine: transformers, the only one here")
    assert status.engine_label.text() == "Engine: transformers, the only one here"
    assert window.chat_area.showing_welcome()
    assert "Engine: transformers" in window.chat_area.welcome.model_label.text()
    assert not status.engine_label.isVisible()  # the welcome says it
    window.session.show_conversation([ChatMessage("user", "hi"), ChatMessage("assistant", "hello")])
    qtbot.waitUntil(lambda: not window.chat_area.showing_welcome(), timeout=5000)
    assert status.engine_label.isVisible()
    status.show_speed(0.25, 31.0)
    assert status.speed_label.isVisible() and status.speed_label.text() == "TTFT 0.25 s, 31.0 tokens/s"
