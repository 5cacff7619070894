"""The session's tool loop on a tiny GLM-4 model: a call waits for the user's result,
the interpreter runs only when allowed (and is killed in one call), history keeps it all."""

from __future__ import annotations

import pytest

from glmdesk.core.history import History
from glmdesk.core.messages import ChatMessage
from glmdesk.core.settings import CacheSettings, LoadSettings, ParamsBox, SamplingParams
from glmdesk.core.tools import FunctionSpec, ToolSet, ToolSettings
from glmdesk.engine.backends.transformers.backend import TransformersBackend
from glmdesk.ui.history.history_access import HistoryAccess
from glmdesk.ui.history.history_controller import HistoryController
from glmdesk.ui.session.chat_session import ChatSession
from tests.helpers import tool_models as tm

TOOLS = ToolSet((FunctionSpec("get_weather"),), interpreter=True)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return tm.tiny_glm4(tm.write_glm4_tokenizer(tmp_path_factory.mktemp("glm4tok")))


@pytest.fixture
def session(qtbot, tiny, tmp_path, monkeypatch):
    monkeypatch.setenv("GLMDESK_HOME", str(tmp_path / "home"))
    s = ChatSession(
        ParamsBox(SamplingParams(temperature=0.0, max_new_tokens=80)), backend=TransformersBackend(tiny)
    )
    with qtbot.waitSignal(s.loader.model_ready, timeout=30_000):
        s.loader.start(LoadSettings())
    yield s
    s.shutdown()


def ids(tiny, text):
    return tiny.tokenizer.encode(text)


def test_function_call_waits_for_the_users_result_and_continues(qtbot, session, tiny, tmp_path):
    obs, end = tiny.tokenizer.special_ids["<|observation|>"], tiny.tokenizer.special_ids["<|user|>"]
    forcer = tm.ForceTokens(
        [ids(tiny, 'get_weather\n{"city": "北京"}') + [obs], ids(tiny, "\n") + ids(tiny, "It is 22.") + [end]]
    )
    tiny.logits_processors = lambda: (forcer,)
    history = History(tmp_path / "h.sqlite3")
    controller = HistoryController(session, HistoryAccess(history))
    session.tools.set_tools(TOOLS)
    with qtbot.waitSignal(session.tools.gate.result_asked, timeout=30_000) as asked:
        assert session.send("北京天气？", "", CacheSettings())
    request = asked.args[0]
    assert request.call.name == "get_weather" and request.call.arguments == {"city": "北京"}
    assert session.is_streaming()  # the answer waits for the result
    with qtbot.waitSignal(session.answer_finished, timeout=30_000) as done:
        request.submit('{"temperature": 22}')
    assert done.args[1].finish_reason == "stop"
    assert [(m.role, m.content) for m in session.state.messages] == [
        ("user", "北京天气？"),
        ("assistant", ""),
        ("observation", '{"temperature": 22}'),
        ("assistant", "It is 22."),
    ]
    controller.flush()  # written on the history writer's thread
    stored = history.messages(controller.conversation_id)
    assert [(m.role, m.kind) for m in stored] == [
        ("user", "text"), ("assistant", "tool_call"), ("observation", "observation"), ("assistant", "text"),
    ]  # fmt: skip
    assert stored[1].tool_call.arguments == {"city": "北京"} and stored[1].finish_reason == "tool_calls"
    controller.close()
    history.close()


def test_interpreter_code_runs_only_on_request_and_kill_is_one_call(qtbot, session, tiny):
    obs, end = tiny.tokenizer.special_ids["<|observation|>"], tiny.tokenizer.special_ids["<|user|>"]
    run = ids(tiny, "python\n```python\nprint(6 * 7)\n```") + [obs]
    loop = ids(tiny, "python\n```python\nwhile True: pass\n```") + [obs]
    after = ids(tiny, "\n") + ids(tiny, "Done.") + [end]
    forcer = tm.ForceTokens([run, after, loop, after])
    tiny.logits_processors = lambda: (forcer,)
    session.tools.set_tools(TOOLS, ToolSettings(timeout_s=60))
    with qtbot.waitSignal(session.tools.gate.card_shown, timeout=30_000) as asked:
        session.send("6*7?", "", CacheSettings())
    card = asked.args[0]
    qtbot.addWidget(card)
    assert card.call.code == "print(6 * 7)"
    assert session.tools.interpreter is None  # nothing ran before the user allowed it
    with qtbot.waitSignal(session.answer_ended, timeout=60_000):
        card.allow_button.click()
    assert session.state.messages[2].content == "42"
    # After a run, New chat and another conversation close the kernel and clear at once.
    kernel = session.tools.interpreter
    with qtbot.waitSignal(session.conversation_cleared, timeout=5_000):
        session.new_chat()
    assert session.tools.interpreter is None and session.state.messages == []
    with qtbot.waitSignal(session.conversation_replaced, timeout=5_000):
        session.show_conversation([ChatMessage("user", "earlier")], key=1)
    assert [m.content for m in session.state.messages] == ["earlier"]
    qtbot.waitUntil(lambda: not kernel.running, timeout=15_000)  # closed on the worker thread
    session.tools.set_tools(TOOLS, ToolSettings(timeout_s=60, always_run=True))
    # A runaway run (always run: no card): Kill ends it at once, the answer continues from the note.
    with qtbot.waitSignal(session.tools.gate.call_started, timeout=30_000):
        session.send("loop", "", CacheSettings())
    qtbot.waitUntil(
        lambda: (
            session.tools.interpreter is not None
            and (session.tools.interpreter.workdir / ".ipython").exists()
        ),
        timeout=30_000,
    )
    with qtbot.waitSignal(session.tool_answered, timeout=15_000) as finished:
        session.kill_code()
    assert "stopped by the user" in finished.args[1].content
    qtbot.waitUntil(
        lambda: not session.is_streaming() and session.state.messages[-1].content == "Done.", timeout=30_000
    )
    assert "stopped by the user" in session.state.messages[-2].content


def test_tool_rounds_limit_ends_the_answer_with_a_note(qtbot, session, tiny):
    obs = tiny.tokenizer.special_ids["<|observation|>"]
    forcer = tm.ForceTokens([ids(tiny, 'get_weather\n{"city": "x"}') + [obs]])
    tiny.logits_processors = lambda: (forcer,)
    session.tools.set_tools(TOOLS, ToolSettings(max_rounds=1))
    with qtbot.waitSignal(session.tools.gate.result_asked, timeout=30_000) as asked:
        session.send("q", "", CacheSettings())
    with qtbot.waitSignal(session.answer_finished, timeout=30_000) as done:
        asked.args[0].submit("{}")
    assert done.args[1].finish_reason == "stop" and done.args[1].notice.kind == "tool_rounds_exceeded"
    assert not session.is_streaming()
