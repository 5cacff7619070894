"""Prompt ids equal ``apply_chat_template`` of each GLM-5 template, id for id.

The templates: GLM-5 and GLM-5.3-Flash (GLM-4.7's, as their model cards say they keep
it), GLM-5.2 (effort ``high`` / ``max``, earlier thinking dropped unless told) and
GLM-5.3 (effort ``low`` / ``high`` / ``max``, always thinking, earlier thinking kept
unless told), from :mod:`tests.helpers.glm5_models`. For each: thinking on and off, each
effort level and the template's default, ``clear_thinking`` unset, true and false, over
two conversations: one with reasoning in earlier turns, two calls in one answer with
their results and a later answer; one whose answer is a call with ``content: None``
(reasoning in the current turn) followed by its result. The prompt is also checked to
hold the earlier reasoning exactly when the template keeps it, and the level it was
asked for, so that equal ids are not equal by ignoring the setting.
"""

from __future__ import annotations

import json

import pytest

from glmdesk.core.messages import ChatMessage
from glmdesk.core.settings import LoadSettings
from glmdesk.core.tools import FunctionSpec, ToolCall, ToolSet
from glmdesk.engine.backends.transformers.loader import load_model
from glmdesk.engine.formats.prompt import thinking_for
from glmdesk.engine.tools.openai_tools import messages_from_openai
from tests.helpers.glm5_models import GLM52_TEMPLATE, GLM53_TEMPLATE, write_glm5, write_glm5_flash
from tests.helpers.glm47_flash_models import GLM47_TEMPLATE

WEATHER = FunctionSpec(
    "get_weather",
    "The weather in a city",
    {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}},
)
TOOLS = ToolSet((WEATHER,))
SYSTEM = "You are a helpful assistant."
#: name -> (writer, template, effort levels, keeps earlier thinking unless told)
MODELS = {
    "GLM-5": (write_glm5, GLM47_TEMPLATE, (), False),
    "GLM-5.2": (write_glm5, GLM52_TEMPLATE, ("high", "max"), False),
    "GLM-5.3": (write_glm5, GLM53_TEMPLATE, ("low", "high", "max"), True),
    "GLM-5.3-Flash": (write_glm5_flash, GLM47_TEMPLATE, (), False),
}
PARIS = {"city": "Paris"}
BEIJING = {"city": "Beijing", "days": 2}


def _call(arguments: dict) -> dict:
    return {"type": "function", "function": {"name": "get_weather", "arguments": arguments}}


#: Reasoning in earlier turns, two calls in one answer, their results, a later answer.
EARLIER = (
    [
        ChatMessage("system", SYSTEM, tools=TOOLS),
        ChatMessage("user", "Weather in Paris and Beijing?"),
        ChatMessage(
            "assistant",
            "Let me check.",
            reasoning="I need two calls.",
            tool_call=ToolCall("get_weather", PARIS),
        ),
        ChatMessage("assistant", "", tool_call=ToolCall("get_weather", BEIJING)),
        ChatMessage("observation", '{"temperature": 21}', name="get_weather"),
        ChatMessage("observation", '{"temperature": 25}', name="get_weather"),
        ChatMessage("assistant", "Paris 21, Beijing 25.", reasoning="Both came back."),
        ChatMessage("user", "Thanks. And tomorrow?"),
    ],
    [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "Weather in Paris and Beijing?"},
        {
            "role": "assistant",
            "content": "Let me check.",
            "reasoning_content": "I need two calls.",
            "tool_calls": [_call(PARIS), _call(BEIJING)],
        },
        {"role": "tool", "content": '{"temperature": 21}'},
        {"role": "tool", "content": '{"temperature": 25}'},
        {"role": "assistant", "content": "Paris 21, Beijing 25.", "reasoning_content": "Both came back."},
        {"role": "user", "content": "Thanks. And tomorrow?"},
    ],
)
#: The current answer is a call without text, as a client sends it (``content: None``,
#: arguments as JSON text), then its result: through ``glmdesk serve``'s reading of a
#: request (:func:`messages_from_openai`).
CALL_ONLY_WIRE = [
    {"role": "system", "content": SYSTEM},
    {"role": "user", "content": "Weather in Paris?"},
    {
        "role": "assistant",
        "content": None,
        "reasoning_content": "I need the weather.",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": '{"temperature": 21}'},
]


def as_vllm_renders(wire: list[dict]) -> list[dict]:
    """The messages a server hands the template: ``content: None`` as ``""``, call
    arguments parsed (vLLM's chat renderer does both)."""
    out = []
    for m in wire:
        m = dict(m, content=m["content"] or "")
        if m.get("tool_calls"):
            m["tool_calls"] = [
                dict(c, function=dict(c["function"], arguments=json.loads(c["function"]["arguments"])))
                for c in m["tool_calls"]
            ]
        out.append(m)
    return out


CALL_ONLY = (messages_from_openai(CALL_ONLY_WIRE, TOOLS), as_vllm_renders(CALL_ONLY_WIRE))
CONVERSATIONS = {"earlier": EARLIER, "call_only": CALL_ONLY}


@pytest.fixture(scope="module", params=list(MODELS))
def model(request, tmp_path_factory):
    writer, template, levels, keeps = MODELS[request.param]
    folder = writer(
        tmp_path_factory.mktemp(request.param), name=f"zai-org/{request.param}", template=template
    )
    loaded = load_model(LoadSettings(model=str(folder), device="cpu"))
    assert loaded.info.effort_levels == levels and loaded.info.keeps_thinking is keeps
    return request.param, loaded


@pytest.mark.parametrize("conversation", list(CONVERSATIONS))
@pytest.mark.parametrize("clear", [None, True, False], ids=["clear-unset", "clear-true", "clear-false"])
@pytest.mark.parametrize("thinking", [True, False], ids=["thinking-on", "thinking-off"])
def test_prompt_ids_are_the_templates(model, thinking, clear, conversation):
    name, loaded = model
    _writer, _template, levels, keeps = MODELS[name]
    messages, reference = CONVERSATIONS[conversation]
    tools = [{"type": "function", "function": WEATHER.definition()}]
    fmt = loaded.prompt_format
    for effort in (None, *levels):
        kwargs = {k: v for k, v in (("clear_thinking", clear), ("reasoning_effort", effort)) if v is not None}
        with thinking_for(fmt, thinking, tuple(kwargs.items())):
            ids = fmt.encode(messages)
        want = loaded.tokenizer.apply_chat_template(
            reference,
            tools=tools,
            add_generation_prompt=True,
            tokenize=True,
            enable_thinking=thinking,
            **kwargs,
        )["input_ids"]
        assert ids == want, (name, effort)
        text = loaded.tokenizer.decode(ids)
        if conversation == "earlier":  # before the last user turn: the template's choice
            kept = (not clear) if clear is not None else keeps
            assert ("Both came back." in text) is kept and ("I need two calls." in text) is kept
        else:  # the current turn's reasoning always stays
            assert "<think>I need the weather.</think>" in text and "None" not in text
        if levels:
            assert f"effort={effort or 'max'}" in text
