"""``glmdesk chat`` with a dense GLM-4-0414 checkpoint carrying GLM-4.7's published
template: the format read from the template is named with its reason, the reasoning is
printed apart and the XML call is read and run."""

from __future__ import annotations

import json

from glmdesk.engine.backends.transformers.loaded_model import LoadedModel
from tests.helpers.cli import run_cli
from tests.helpers.published_templates import GLM47_TEMPLATE, write_dense_glm
from tests.helpers.tool_models import ForceTokens

WEATHER = {
    "name": "get_weather",
    "description": "The weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
}


def test_chat_names_the_format_prints_the_reasoning_apart_and_runs_the_call(tmp_path, monkeypatch):
    folder = write_dense_glm(tmp_path / "GLM-4-9B-0414-tune", GLM47_TEMPLATE)
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(folder)
    end = tok.convert_tokens_to_ids("<|observation|>")
    call = "Weather needed.</think><tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value></tool_call>"
    scripts = [
        tok.encode(t, add_special_tokens=False) + [end] for t in (call, "Fine.</think>Sunny in Paris.")
    ]
    forcer = ForceTokens(scripts)
    monkeypatch.setattr(LoadedModel, "logits_processors", lambda self: (forcer,))
    functions = tmp_path / "functions.json"
    functions.write_text(json.dumps([WEATHER]), encoding="utf-8")
    out = run_cli(
        "chat", "--model", str(folder), "--tools", str(functions), "--prompt", "Weather in Paris?",
        "--temperature", "0", "--engine", "transformers", "--device", "cpu",
        input_text="sunny\n",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert (
        "note: prompt format: GLM-4.5/4.6/4.7 (reasoning, XML tool calls); its chat template writes tool calls "
        "with <arg_key>/<arg_value> and switches thinking with enable_thinking, though the checkpoint is GLM-Z1-0414."
    ) in out.stderr
    assert "Weather needed." in out.stderr and "Weather needed." not in out.stdout
    assert "┌─ tool call: get_weather" in out.stdout and '"Paris"' in out.stdout
    assert out.stdout.rstrip().endswith("Sunny in Paris.")
    assert "<tool_call>" not in out.stdout + out.stderr and "think>" not in out.stdout + out.stderr
