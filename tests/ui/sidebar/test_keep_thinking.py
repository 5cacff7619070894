"""The sidebar's "Earlier thinking" choice: the model's own default (read from its chat
template), Keep or Drop, kept per conversation in the history and shown again when the
chat is reopened; the choice reaches the template as ``clear_thinking`` on the next
answer; a model whose template does not read it greys the choice and says why."""

from __future__ import annotations

import pytest

from glmdesk.core.settings import LoadSettings
from glmdesk.engine.backends.transformers.loader import load_model
from glmdesk.ui.sidebar.keep_thinking_choice import KeepThinkingChoice
from tests.helpers.glm5_models import write_glm5
from tests.ui.conftest import history_window

MS = 60_000
EARLIER = "old steps of the first answer"


@pytest.fixture(scope="module")
def glm5(tmp_path_factory):
    """A tiny GLM-5 (GLM-4.7's template: earlier thinking dropped unless told) whose
    prompts are recorded as text."""
    model = load_model(LoadSettings(model=str(write_glm5(tmp_path_factory.mktemp("GLM-5"))), device="cpu"))
    prompts: list[str] = []
    encode = model.prompt_format.encode
    model.prompt_format.encode = lambda messages, *a, **k: (
        prompts.append(model.tokenizer.decode(encode(messages, *a, **k))) or encode(messages, *a, **k)
    )
    return model, prompts


@pytest.fixture
def wired_glm5(make_window, glm5, tmp_path):
    model, prompts = glm5
    window, history, panel, controller = history_window(make_window, tmp_path / "history.sqlite3", model)
    yield window, history, panel, controller, prompts
    controller.close()
    history.close()


def items(choice: KeepThinkingChoice) -> list[str]:
    return [choice.box.itemText(i) for i in range(choice.box.count())]


def clear_thinking(window) -> object:
    return dict(window.params_box.get().template_kwargs).get("clear_thinking", "absent")


def ask(qtbot, window, text: str) -> None:
    with qtbot.waitSignal(window.session.answer_finished, timeout=MS):
        assert window.send_message(text)


def test_keep_and_drop_reach_the_prompt_of_the_next_answer(qtbot, wired_glm5):
    window, history, panel, controller, prompts = wired_glm5
    choice = window.sidebar.keep_thinking
    assert choice.box.isEnabled() and items(choice) == ["Model default (drop)", "Keep", "Drop"]
    assert not choice.reason.isVisibleTo(window)
    cid = history.create_conversation("thinking")
    history.add_message(cid, "user", "Hello world")
    history.add_message(cid, "assistant", "The answer is 42.", reasoning=EARLIER, finish_reason="stop")
    panel.refresh()
    with qtbot.waitSignal(controller.conversation_opened, timeout=MS):
        assert panel.select_conversation(cid)  # as a click in the history panel
    assert choice.box.currentIndex() == 0 and clear_thinking(window) == "absent"
    ask(qtbot, window, "And now?")
    assert EARLIER not in prompts[-1]  # the template's default: dropped

    choice.box.setCurrentIndex(1)  # as the user picks Keep
    assert clear_thinking(window) is False
    ask(qtbot, window, "Once more?")
    assert f"<think>{EARLIER}</think>" in prompts[-1]

    choice.box.setCurrentIndex(2)  # Drop
    assert clear_thinking(window) is True
    ask(qtbot, window, "And again?")
    assert EARLIER not in prompts[-1]


def test_the_choice_is_kept_per_chat_and_shown_again_when_reopened(qtbot, wired_glm5):
    window, history, panel, controller, _prompts = wired_glm5
    choice = window.sidebar.keep_thinking
    choice.box.setCurrentIndex(1)  # Keep, in a new chat before its first message
    ask(qtbot, window, "Hello")
    assert controller.flush(10)  # history writes run on the writer thread
    kept = controller.conversation_id
    assert kept is not None and history.chat_settings(kept).get("keep_thinking") is True

    window.new_chat()  # a new chat starts on the model's default
    assert choice.box.currentIndex() == 0 and choice.choice() is None
    assert clear_thinking(window) == "absent"
    ask(qtbot, window, "Another chat")
    assert controller.flush(10)
    other = controller.conversation_id
    assert other not in (None, kept) and "keep_thinking" not in history.chat_settings(other)

    panel.refresh()
    with qtbot.waitSignal(controller.conversation_opened, timeout=MS):
        assert panel.select_conversation(kept)
    assert choice.box.currentText() == "Keep" and clear_thinking(window) is False
    with qtbot.waitSignal(controller.conversation_opened, timeout=MS):
        assert panel.select_conversation(other)
    assert choice.box.currentIndex() == 0 and clear_thinking(window) == "absent"

    with qtbot.waitSignal(controller.conversation_opened, timeout=MS):
        assert panel.select_conversation(kept)
    choice.box.setCurrentIndex(0)  # back to the model's default: the stored choice goes
    assert controller.flush(10)
    assert "keep_thinking" not in history.chat_settings(kept)


def test_a_model_whose_template_has_no_choice_greys_it_with_the_reason(qtbot, make_window, shared_model):
    window = make_window(shared_model)
    choice = window.sidebar.keep_thinking
    assert not choice.box.isEnabled() and choice.value() is None
    assert "no choice about earlier thinking" in choice.box.toolTip()
    assert choice.reason.isVisibleTo(window) and "GLM-4.7 and the GLM-5 line" in choice.reason.text()
    assert clear_thinking(window) == "absent"


def test_the_default_item_says_what_the_model_does(qtbot):
    choice = KeepThinkingChoice()
    qtbot.addWidget(choice)
    choice.set_model(True, True)  # GLM-5.3: keeps unless told
    assert items(choice) == ["Model default (keep)", "Keep", "Drop"]
    choice.show_choice(False)  # a chat's stored Drop, shown without a new save
    with qtbot.assertNotEmitted(choice.chosen):
        choice.set_model(False, False, "no choice here")
    assert choice.value() is None and choice.choice() is False  # kept while greyed
    choice.set_model(True, False, server=True)
    assert items(choice)[0] == "Server default" and choice.value() is False
    assert choice.template_kwargs((("reasoning_effort", "high"),)) == (
        ("reasoning_effort", "high"),
        ("clear_thinking", True),
    )
