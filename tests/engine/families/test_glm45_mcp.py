"""An MCP tool through the one tool loop with a GLM-4.5 model: the tiny GLM-4.5 folder is
forced to write an XML call of ``mcp-server-time``'s tool; the call runs on the real
server and its result goes back in GLM-4.5's observation format, the prompt's ids equal
to the chat template's (tools listed from the server's schema)."""

from __future__ import annotations

import sys

import pytest

from glmdesk.chat.answer import Tools, run_answer
from glmdesk.chat.events import TextDelta, ToolResultReady, ToolsAnswered
from glmdesk.chat.mcp.approvals import ALLOW_ONCE, McpApprovals
from glmdesk.chat.mcp.config import McpConfig, McpServerConfig
from glmdesk.chat.mcp.hub import McpHub
from glmdesk.chat.mcp.source import McpToolSource, approval_hook, runner
from glmdesk.core.messages import ChatMessage
from glmdesk.core.settings import LoadSettings, ParamsBox, SamplingParams
from glmdesk.core.tools import ToolSet
from glmdesk.engine.backends.transformers.loader import load_model
from glmdesk.engine.decode.generate import stream_answer
from tests.helpers import tool_models as tm

TIME = McpServerConfig(
    "time", command=sys.executable, args=("-m", "mcp_server_time", "--local-timezone", "UTC")
)


@pytest.fixture(scope="module")
def glm45(glm45_folder):
    return load_model(LoadSettings(model=str(glm45_folder), device="cpu"))


@pytest.fixture(scope="module")
def hf_tok(glm45_folder):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(glm45_folder)


def test_an_mcp_call_runs_through_the_tool_loop_and_its_result_is_prompted_as_the_template_does(
    glm45, hf_tok, tmp_path
):
    hub = McpHub(McpConfig((TIME,)), consent=lambda _s: True)
    try:
        asked = []
        source = McpToolSource(hub, ["time"], McpApprovals(tmp_path / "a.json"))
        functions = source.refresh()
        tools = ToolSet(functions)
        tok, stop = glm45.tokenizer, glm45.tokenizer.convert_tokens_to_ids("<|observation|>")
        call = (
            "<tool_call>get_current_time\n<arg_key>timezone</arg_key>\n<arg_value>Asia/Tokyo</arg_value>\n"
            "</tool_call>"
        )
        scripts = [tok.encode(t, add_special_tokens=False) + [stop] for t in (call, "It is late.")]
        forcer = tm.ForceTokens(scripts)
        glm45.logits_processors = lambda: (forcer,)
        prompts, histories = [], []

        def stream(history, params, cache, stop_event):
            histories.append(list(history))
            prompts.append(glm45.prompt_format.encode(history))
            return stream_answer(glm45, history, params, cache, stop_event)

        hook = approval_hook(
            source, source.approvals, lambda c, t: asked.append((t.server, t.name)) or ALLOW_ONCE
        )
        answer_tools = Tools(hook, runner(source, lambda c: None))
        messages = [ChatMessage("system", "", tools=tools), ChatMessage("user", "time in Tokyo?")]
        params = ParamsBox(SamplingParams(temperature=0.0, max_new_tokens=60))
        out = list(run_answer(stream, messages, params, tools=answer_tools))
    finally:
        hub.close()
    assert asked == [("time", "get_current_time")]
    (ready,) = [e for e in out if isinstance(e, ToolResultReady)]
    assert '"timezone": "Asia/Tokyo"' in ready.result.content and "+09:00" in ready.result.content
    assert any(isinstance(e, ToolsAnswered) for e in out)
    assert "".join(e.text for e in out[out.index(ready) :] if isinstance(e, TextDelta)) == "It is late."
    reference = [
        {"role": "user", "content": "time in Tokyo?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "type": "function",
                    "function": {"name": "get_current_time", "arguments": {"timezone": "Asia/Tokyo"}},
                }
            ],
        },
        {"role": "tool", "content": ready.result.content},
    ]
    tool_dicts = [{"type": "function", "function": f.definition()} for f in functions]
    expected = hf_tok.apply_chat_template(
        reference, tools=tool_dicts, add_generation_prompt=True, tokenize=True, enable_thinking=True
    )["input_ids"]
    assert prompts[1] == expected
    assert "<tool_response>" in hf_tok.decode(prompts[1])
