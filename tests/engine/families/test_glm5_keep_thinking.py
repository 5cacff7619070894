"""Keep or drop earlier turns' thinking (``clear_thinking``): each model's default read
from its chat template (GLM-4.7 and GLM-5.2 drop it unless told, GLM-5.3 keeps it), and
the value taken by ``glmdesk serve`` as ``chat_template_kwargs.clear_thinking`` and sent
by the remote engine, reaching the template."""

from __future__ import annotations

import pytest

from glmdesk.core.messages import ChatMessage
from glmdesk.core.settings import LoadSettings, ParamsBox, SamplingParams
from glmdesk.engine.backends.transformers.loader import load_model
from glmdesk.engine.families.template_effort import keeps_thinking
from tests.helpers.glm5_models import GLM52_TEMPLATE, GLM53_TEMPLATE, write_glm5
from tests.helpers.glm47_flash_models import GLM47_TEMPLATE
from tests.helpers.published_templates import GLM46_TEMPLATE
from tests.helpers.published_templates import GLM47_TEMPLATE as PUBLISHED_GLM47

EARLIER = "old steps of the first answer"


def test_each_templates_default_is_read_by_rendering_it():
    assert not keeps_thinking(GLM47_TEMPLATE) and not keeps_thinking(PUBLISHED_GLM47)
    assert not keeps_thinking(GLM52_TEMPLATE)
    assert keeps_thinking(GLM53_TEMPLATE)
    assert not keeps_thinking(GLM46_TEMPLATE)  # no clear_thinking: nothing to choose
    assert not keeps_thinking("{{ clear_thinking }}{% if %}")  # does not parse
    assert not keeps_thinking(None)


@pytest.fixture(scope="module")
def glm5(tmp_path_factory):
    """A tiny GLM-5 on GLM-4.7's template, its prompts recorded as text."""
    model = load_model(LoadSettings(model=str(write_glm5(tmp_path_factory.mktemp("glm5"))), device="cpu"))
    prompts: list[str] = []
    fmt = model.prompt_format
    encode = fmt.encode

    def recorded(messages, *a, **k):
        ids = encode(messages, *a, **k)
        prompts.append(model.tokenizer.decode(ids))
        return ids

    fmt.encode = recorded
    return model, prompts


def test_the_loaded_model_says_whether_it_keeps_thinking(glm5, tmp_path):
    model, _prompts = glm5
    assert model.info.clear_thinking and not model.info.keeps_thinking
    glm53 = load_model(
        LoadSettings(
            model=str(write_glm5(tmp_path, name="zai-org/GLM-5.3", template=GLM53_TEMPLATE)), device="cpu"
        )
    )
    assert glm53.info.clear_thinking and glm53.info.keeps_thinking
    assert glm53.info.effort_levels == ("low", "high", "max")


def _conversation() -> list[dict]:
    return [
        {"role": "user", "content": "Hello world"},
        {"role": "assistant", "content": "The answer is 42.", "reasoning_content": EARLIER},
        {"role": "user", "content": "And now?"},
    ]


def test_serve_honours_chat_template_kwargs_clear_thinking(glm5):
    from fastapi.testclient import TestClient

    from glmdesk.engine.backends.transformers.backend import TransformersBackend
    from glmdesk.server.app import create_app
    from glmdesk.server.config import ServeSettings

    model, prompts = glm5
    app = create_app(TransformersBackend(model), ServeSettings())
    body = {"messages": _conversation(), "max_tokens": 2, "temperature": 0}
    with TestClient(app) as client:
        kept = client.post(
            "/v1/chat/completions", json=body | {"chat_template_kwargs": {"clear_thinking": False}}
        )
        assert kept.status_code == 200, kept.text
        assert f"<think>{EARLIER}</think>" in prompts[-1]
        dropped = client.post(
            "/v1/chat/completions", json=body | {"chat_template_kwargs": {"clear_thinking": True}}
        )
        assert dropped.status_code == 200, dropped.text
        assert EARLIER not in prompts[-1]
        default = client.post("/v1/chat/completions", json=body)
        assert default.status_code == 200, default.text
        assert EARLIER not in prompts[-1]  # GLM-4.7's template drops it unless told
        bad = client.post(
            "/v1/chat/completions", json=body | {"chat_template_kwargs": {"clear_thinking": [1]}}
        )
    assert bad.status_code == 400
    assert "chat_template_kwargs.clear_thinking must be text, a number, true, false or null." in bad.text


def test_the_remote_engine_sends_clear_thinking(glm5):
    from glmdesk.engine.backends.remote.backend import RemoteBackend
    from glmdesk.engine.backends.transformers.backend import TransformersBackend
    from glmdesk.server.app import create_app
    from glmdesk.server.config import ServeSettings
    from glmdesk.server.runner import ServerThread

    model, prompts = glm5
    settings = ServeSettings(port=0)
    srv = ServerThread(create_app(TransformersBackend(model), settings), settings).start()
    remote = RemoteBackend()
    conversation = [
        ChatMessage("user", "Hello world"),
        ChatMessage("assistant", "The answer is 42.", reasoning=EARLIER),
        ChatMessage("user", "And now?"),
    ]
    try:
        remote.load(LoadSettings(remote_url=srv.url))
        for clear, kept in ((False, True), (True, False)):
            box = ParamsBox(
                SamplingParams(temperature=0, max_new_tokens=2, template_kwargs=(("clear_thinking", clear),))
            )
            chunks = list(remote.stream(conversation, box))
            assert chunks[-1].error is None, chunks[-1].error
            assert (f"<think>{EARLIER}</think>" in prompts[-1]) is kept
    finally:
        remote.close()
        srv.stop()


def test_an_answers_reasoning_goes_both_ways_on_the_wire():
    from glmdesk.core.tools import ToolCall, ToolSet
    from glmdesk.engine.tools.openai_tools import messages_from_openai, messages_to_openai

    call = ToolCall("get_weather", {"city": "Paris"}, call_id="call_1")
    wire, _tools = messages_to_openai(
        [
            ChatMessage("user", "Hello"),
            ChatMessage("assistant", "Hi.", reasoning=EARLIER),
            ChatMessage("assistant", "", tool_call=call, reasoning="I need the weather."),
            ChatMessage("observation", "sunny", name="get_weather"),
            ChatMessage("assistant", "Sunny."),
        ]
    )
    assert wire[1] == {
        "role": "assistant",
        "content": "Hi.",
        "reasoning_content": EARLIER,
        "reasoning": EARLIER,
    }
    assert wire[2]["reasoning_content"] == wire[2]["reasoning"] == "I need the weather."
    assert "reasoning" not in wire[4] and "reasoning_content" not in wire[4]
    back = messages_from_openai(
        [
            {"role": "user", "content": "Hello"},
            {"role": "assistant", "content": "Hi.", "reasoning_content": EARLIER},
            {
                "role": "assistant",
                "content": None,
                "reasoning": "vLLM's name",
                "tool_calls": wire[2]["tool_calls"],
            },
        ],
        ToolSet(),
    )
    assert [m.reasoning for m in back] == ["", EARLIER, "vLLM's name"]


def test_glmdesk_chat_sends_keep_thinking_to_a_server(glm5):
    from glmdesk.engine.backends.transformers.backend import TransformersBackend
    from glmdesk.server.app import create_app
    from glmdesk.server.config import ServeSettings
    from glmdesk.server.runner import ServerThread
    from tests.helpers.cli import run_cli

    model, _prompts = glm5
    seen: list[dict] = []
    fmt = model.prompt_format
    encode = fmt.encode
    fmt.encode = lambda messages, *a, **k: seen.append(dict(fmt.template_kwargs)) or encode(messages, *a, **k)
    settings = ServeSettings(port=0)
    srv = ServerThread(create_app(TransformersBackend(model), settings), settings).start()
    try:
        args = ("chat", "--remote", srv.url, "--prompt", "Hi", "--max-new-tokens", "2", "--temperature", "0")
        for flag, clear in (("--keep-thinking", False), ("--drop-thinking", True)):
            done = run_cli(*args, flag)
            assert done.returncode == 0, done.stderr
            assert seen[-1].get("clear_thinking") is clear
    finally:
        fmt.encode = encode
        srv.stop()
