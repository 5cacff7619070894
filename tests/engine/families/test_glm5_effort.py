"""Reasoning effort and "keep earlier thinking" for the GLM-5 line: the levels are read
from the model's chat template, chosen with ``--reasoning-effort`` in the terminal and
``reasoning_effort`` in a ``glmdesk serve`` request, and reach the template; a level
the template does not tell apart is refused with a sentence."""

from __future__ import annotations

import pytest

from glmdesk.core.messages import ChatMessage
from glmdesk.core.settings import LoadSettings
from glmdesk.engine.backends.transformers.loader import load_model
from glmdesk.engine.families.template_effort import effort_levels, reads_clear_thinking
from glmdesk.engine.formats.prompt import thinking_for
from tests.helpers.cli import run_cli
from tests.helpers.glm5_models import GLM52_TEMPLATE, write_glm5


def test_levels_are_read_from_the_templates_comparisons():
    assert effort_levels(GLM52_TEMPLATE) == ("high", "max")
    three = "{% if reasoning_effort is defined and reasoning_effort in ['max', 'low', 'high'] %}{% endif %}"
    assert effort_levels(three) == ("low", "high", "max")
    # Text the template writes is no level; a template without the variable has none.
    assert effort_levels("{{ 'reasoning_effort: medium' }}") == ()
    assert effort_levels("{{ messages }}") == ()
    assert reads_clear_thinking(GLM52_TEMPLATE) and not reads_clear_thinking("{{ messages }}")


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return write_glm5(tmp_path_factory.mktemp("glm52"), name="zai-org/GLM-5.2", template=GLM52_TEMPLATE)


def test_the_loaded_model_offers_its_templates_levels(folder):
    model = load_model(LoadSettings(model=str(folder), device="cpu"))
    assert model.info.effort_levels == ("high", "max") and model.info.clear_thinking
    conversation = [ChatMessage("user", "Hello world")]
    reference = [{"role": "user", "content": "Hello world"}]
    fmt = model.prompt_format
    for level in ("high", "max"):
        with thinking_for(fmt, None, (("reasoning_effort", level),)):
            ids = fmt.encode(conversation)
        want = model.tokenizer.apply_chat_template(
            reference, add_generation_prompt=True, tokenize=True, reasoning_effort=level
        )["input_ids"]
        assert ids == want
        assert f"effort={level}" in model.tokenizer.decode(ids)


def test_glmdesk_chat_takes_a_level_and_refuses_another(folder):
    args = (
        "chat",
        "--model",
        str(folder),
        "--prompt",
        "Hello",
        "--max-new-tokens",
        "4",
        "--temperature",
        "0",
    )
    done = run_cli(*args, "--reasoning-effort", "high", "--keep-thinking")
    assert done.returncode == 0, done.stderr
    refused = run_cli(*args, "--reasoning-effort", "low")
    assert refused.returncode == 2
    assert f"--reasoning-effort must be one of high, max for {folder.name}, not 'low'." in refused.stderr
    assert "Traceback" not in refused.stderr


def test_a_model_without_levels_says_so(tmp_path):
    from tests.helpers.glm47_flash_models import GLM47_TEMPLATE

    plain = write_glm5(tmp_path, template=GLM47_TEMPLATE)
    out = run_cli("chat", "--model", str(plain), "--prompt", "Hi", "--reasoning-effort", "max")
    assert out.returncode == 2 and "has no reasoning effort levels" in out.stderr


def test_serve_takes_reasoning_effort_and_refuses_a_level_the_model_lacks(folder):
    from fastapi.testclient import TestClient

    from glmdesk.engine.backends.transformers.backend import TransformersBackend
    from glmdesk.server.app import create_app
    from glmdesk.server.config import ServeSettings

    model = load_model(LoadSettings(model=str(folder), device="cpu"))
    seen = []
    fmt = model.prompt_format
    encode = fmt.encode
    fmt.encode = lambda messages, *a, **k: seen.append(dict(fmt.template_kwargs)) or encode(messages, *a, **k)
    app = create_app(TransformersBackend(model), ServeSettings())
    body = {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2, "temperature": 0}
    with TestClient(app) as client:
        ok = client.post("/v1/chat/completions", json=body | {"reasoning_effort": "high"})
        assert ok.status_code == 200, ok.text
        bad = client.post("/v1/chat/completions", json=body | {"reasoning_effort": "low"})
    assert bad.status_code == 400
    assert "reasoning_effort must be one of high, max, not 'low'." in bad.text
    assert any(kwargs.get("reasoning_effort") == "high" for kwargs in seen)


def test_the_remote_engine_and_the_openai_client_send_the_level(folder):
    import openai

    from glmdesk.core.settings import ParamsBox, SamplingParams
    from glmdesk.engine.backends.remote.backend import RemoteBackend
    from glmdesk.engine.backends.transformers.backend import TransformersBackend
    from glmdesk.server.app import create_app
    from glmdesk.server.config import ServeSettings
    from glmdesk.server.runner import ServerThread

    model = load_model(LoadSettings(model=str(folder), device="cpu"))
    prompts: list[str] = []
    encode = model.prompt_format.encode
    model.prompt_format.encode = lambda messages, *a, **k: (
        prompts.append(model.tokenizer.decode(encode(messages, *a, **k))) or encode(messages, *a, **k)
    )
    settings = ServeSettings(port=0)
    srv = ServerThread(create_app(TransformersBackend(model), settings), settings).start()
    remote = RemoteBackend()
    try:
        remote.load(LoadSettings(remote_url=srv.url))
        box = ParamsBox(
            SamplingParams(temperature=0, max_new_tokens=2, template_kwargs=(("reasoning_effort", "high"),))
        )
        list(remote.stream([ChatMessage("user", "Hello")], box))
        assert "effort=high" in prompts[-1]
        client = openai.OpenAI(base_url=srv.url, api_key="none")
        client.chat.completions.create(
            model=folder.name,
            messages=[{"role": "user", "content": "Hi"}],
            max_tokens=2,
            reasoning_effort="high",
        )
        assert "effort=high" in prompts[-1]
        with pytest.raises(openai.BadRequestError, match="reasoning_effort must be one of high, max"):
            client.chat.completions.create(
                model=folder.name, messages=[{"role": "user", "content": "Hi"}], reasoning_effort="low"
            )
        # glmdesk chat --remote: the level goes to the server, which checks it.
        cli = (
            "chat",
            "--remote",
            srv.url,
            "--prompt",
            "Hello",
            "--max-new-tokens",
            "2",
            "--temperature",
            "0",
        )
        prompts.clear()
        sent = run_cli(*cli, "--reasoning-effort", "max")
        assert sent.returncode == 0, sent.stderr
        assert "effort=max" in prompts[-1]
        refused = run_cli(*cli, "--reasoning-effort", "low")
        assert refused.returncode != 0 and "reasoning_effort must be one of high, max" in refused.stderr
        assert "Traceback" not in refused.stderr
    finally:
        remote.close()
        srv.stop()
