"""Tools in ``glmdesk chat`` through its real entry point (``glmdesk.cli.main``, in this
process: ``tests/helpers/cli.py``), answering
with a real ``glmdesk serve`` on 127.0.0.1 that serves a tiny GLM-4 model (forced tokens;
see conftest). The user's typed results and y/N answers come on stdin."""

from __future__ import annotations

import json

from glmdesk.core.messages import ChatMessage
from glmdesk.core.tools import ToolCall, ToolSet, function_spec
from tests.helpers import tool_models as tm
from tests.helpers.cli import run_cli
from tests.helpers.waiting import wait_until

FUNCTIONS = [
    {
        "name": "get_weather",
        "description": "查询天气",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    }
]


def glmdesk(*args, input_text=""):
    return run_cli(*args, input_text=input_text)


def functions_file(tmp_path, content) -> str:
    path = tmp_path / "functions.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")
    return str(path)


def test_custom_function_card_typed_result_and_answer(glm_server, force, tmp_path):
    force('get_weather\n{"city": "北京"}', "\n北京 22 度。")
    out = glmdesk(
        "chat", "--remote", glm_server.url, "--tools", functions_file(tmp_path, FUNCTIONS),
        "--prompt", "北京天气？", input_text='{"temperature": 22}\n',
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert '┌─ tool call: get_weather\n│ {\n│   "city": "北京"\n│ }\n└─' in out.stdout
    assert "Result of get_weather" in out.stdout
    assert out.stdout.rstrip().endswith("北京 22 度。")


def test_interactive_chat_keeps_calls_and_results_in_the_conversation(glm_server, tiny, force, tmp_path):
    force('get_weather\n{"city": "北京"}', "\n北京 22 度。", "\n好的。")
    script = '北京天气？\n{"temperature": 22}\n谢谢\n/exit\n'
    out = glmdesk(
        "chat", "--remote", glm_server.url, "--tools", functions_file(tmp_path, FUNCTIONS), input_text=script
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("┌─ tool call: get_weather") == 1
    assert "北京 22 度。\n> 好的。\n> " in out.stdout and "error" not in out.stderr
    # The second message's prompt held the call and its result.
    tools = ToolSet(tuple(function_spec(f) for f in FUNCTIONS))
    second = [
        ChatMessage("system", "", tools=tools),
        ChatMessage("user", "北京天气？"),
        ChatMessage("assistant", "", tool_call=ToolCall("get_weather", {"city": "北京"})),
        ChatMessage("observation", '{"temperature": 22}', name="get_weather"),
        ChatMessage("assistant", "北京 22 度。"),
        ChatMessage("user", "谢谢"),
    ]
    state = glm_server.server.config.app.state.glmdesk
    wait_until(lambda: state.records[-1].ended > 0)  # its thread records the end just after the reply
    assert state.records[-1].prompt_tokens == len(tiny.prompt_format.encode(second))


def test_interpreter_runs_only_after_yes(glm_server, force, tmp_path):
    call = "python\n```python\nprint(6 * 7)\n```"
    force(call, "\nThe answer is 42.")
    out = glmdesk("chat", "--remote", glm_server.url, "--interpreter", "--prompt", "6*7?", input_text="y\n")
    assert out.returncode == 0, out.stderr
    assert "┌─ code interpreter\n│ print(6 * 7)\n└─" in out.stdout
    assert "┌─ result\n│ 42\n└─" in out.stdout and out.stdout.rstrip().endswith("The answer is 42.")
    # "N" (or an empty line) declines: nothing runs, the model is told so and goes on.
    force(call, "\nOK, I will not run it.")
    out = glmdesk("chat", "--remote", glm_server.url, "--interpreter", "--prompt", "6*7?", input_text="\n")
    assert out.returncode == 0, out.stderr
    assert "(declined)" in out.stdout and "┌─ result" not in out.stdout
    assert out.stdout.rstrip().endswith("OK, I will not run it.")


def test_tool_rounds_limit_ends_the_answer_with_a_note(glm_server, force, tmp_path):
    force('get_weather\n{"city": "x"}', 'get_weather\n{"city": "y"}')
    out = glmdesk(
        "chat", "--remote", glm_server.url, "--tools", functions_file(tmp_path, FUNCTIONS),
        "--tool-rounds", "1", "--prompt", "weather?", input_text="sunny\nrainy\n",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("┌─ tool call: get_weather") == 1
    assert "ended after 1 tool calls" in out.stderr


def test_bad_functions_file_gets_a_sentence_per_problem(tmp_path):
    bad = [{"name": "bad name"}, {"name": "python"}, {"name": "ok", "parameters": {"type": "array"}}]
    out = glmdesk("chat", "--tools", functions_file(tmp_path, bad), "--prompt", "hi")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "Function 1 needs a name" in out.stderr and "Function 2 may not be called 'python'" in out.stderr
    assert 'Function 3: parameters must have type "object"' in out.stderr
    out = glmdesk("chat", "--tools", functions_file(tmp_path, "[{"), "--prompt", "hi")
    assert out.returncode == 2 and "not valid JSON" in out.stderr
    out = glmdesk("chat", "--tool-rounds", "0", "--interpreter", "--prompt", "hi")
    assert out.returncode == 2 and "whole number from 1 to 50" in out.stderr


def test_a_model_without_a_tool_format_is_refused():
    """The embedded SmolLM2 (the default model) has no tool format."""
    out = glmdesk("chat", "--interpreter", "--engine", "transformers", "--prompt", "hi")
    assert out.returncode == 2 and "has no tool-call format" in out.stderr and "Traceback" not in out.stderr


def test_tool_choice_forces_the_first_answer_only(glm_server, tiny, tmp_path):
    """``--tool-choice NAME``: the first answer is NAME's call (the model wrote only the
    arguments); after the typed result the model answers freely (the prompt unforced)."""
    special, enc = tiny.tokenizer.special_ids, tiny.tokenizer.encode
    forcer = tm.ForceTokens(
        [
            enc('{"city": "北京"}') + [special["<|observation|>"]],
            enc("\n北京 22 度。") + [special["<|user|>"]],
        ]
    )
    tiny.logits_processors = lambda: (forcer,)
    out = glmdesk(
        "chat", "--remote", glm_server.url, "--tools", functions_file(tmp_path, FUNCTIONS),
        "--tool-choice", "get_weather", "--prompt", "北京天气？", input_text='{"temperature": 22}\n',
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert '┌─ tool call: get_weather\n│ {\n│   "city": "北京"\n│ }\n└─' in out.stdout
    assert out.stdout.rstrip().endswith("北京 22 度。")
    tools = ToolSet(tuple(function_spec(f) for f in FUNCTIONS))
    after = [
        ChatMessage("system", "", tools=tools),
        ChatMessage("user", "北京天气？"),
        ChatMessage("assistant", "", tool_call=ToolCall("get_weather", {"city": "北京"}, '{"city": "北京"}')),
        ChatMessage("observation", '{"temperature": 22}', name="get_weather"),
    ]
    records = glm_server.server.config.app.state.glmdesk.records
    forced = ToolSet(tools.functions, forced="get_weather")
    assert records[-2].prompt_tokens == len(
        tiny.prompt_format.encode([ChatMessage("system", "", tools=forced), after[1]])
    )
    assert records[-1].prompt_tokens == len(tiny.prompt_format.encode(after))


def test_tool_choice_must_name_a_listed_function(tmp_path):
    out = glmdesk("chat", "--tool-choice", "get_weather", "--prompt", "hi")
    assert out.returncode == 2 and "--tool-choice needs --tools FILE" in out.stderr
    out = glmdesk(
        "chat", "--tools", functions_file(tmp_path, FUNCTIONS), "--tool-choice", "nope", "--prompt", "hi"
    )
    assert out.returncode == 2 and "--tool-choice names 'nope'" in out.stderr
