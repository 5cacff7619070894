"""A forced call (``ToolSet.forced``, OpenAI's ``tool_choice`` naming a function).

The prompt ends with the assistant turn opened and the function's metadata line
written (ids equal THUDM's builders' with that line appended); the real decode loop
on tiny ChatGLM3 / GLM-4 checkpoints, with a test-only logits processor forcing only
the ARGUMENT tokens, ends with ``tool_calls`` for that function; the next prompt
re-encodes the call's turn starting with the same ids (KV reuse sees them).
"""

from __future__ import annotations

import json

import pytest

from glmdesk.core.messages import ChatMessage
from glmdesk.core.settings import ParamsBox, SamplingParams
from glmdesk.core.tools import ToolCall, ToolSet, parse_functions
from glmdesk.engine.decode.generate import stream_answer
from glmdesk.engine.formats.chatglm_tools import CHATGLM3_TOOL_INTRO
from tests.helpers import tool_models as models
from tests.helpers import tool_reference as ref

WEATHER = {
    "name": "get_weather",
    "description": "查询城市的天气",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
TRACK = {"name": "track", "description": "Track a stock", "parameters": {"type": "object", "properties": {}}}


def functions(*defs):
    specs, problems = parse_functions(json.dumps(list(defs), ensure_ascii=False))
    assert not problems
    return specs


def forced_tools(name: str) -> ToolSet:
    return ToolSet(functions(WEATHER, TRACK), forced=name)


# --- the value ---------------------------------------------------------------


def test_forced_must_name_an_offered_function():
    assert forced_tools("track").forced == "track"
    with pytest.raises(ValueError, match="'nope' cannot be forced.*get_weather, track"):
        ToolSet(functions(WEATHER, TRACK), forced="nope")
    with pytest.raises(ValueError, match="cannot be forced"):
        ToolSet(interpreter=True, forced="interpreter")  # only functions are forced


# --- prompt ids --------------------------------------------------------------


def test_chatglm3_forced_prompt_ends_with_the_metadata_line(g3, sp):
    ours = [ChatMessage("system", CHATGLM3_TOOL_INTRO, tools=forced_tools("track")), ChatMessage("user", "q")]
    history = [{"role": "system", "content": CHATGLM3_TOOL_INTRO, "tools": [WEATHER, TRACK]}]
    plain = ref.chatglm3_build_chat_input(sp, "q", history)
    ids = g3.encode(ours)
    # build_single_message encodes the metadata line as sp.encode(metadata + "\n").
    assert ids == plain + sp.encode("track\n")
    assert ids[len(plain) - 1] == g3.ids["assistant"]
    # The call's turn in the next prompt starts with the same ids.
    call = ToolCall("track", {}, "```python\ntool_call()\n```")
    after = ours + [ChatMessage("assistant", "", tool_call=call), ChatMessage("observation", "{}")]
    history += [
        {"role": "user", "content": "q"},
        {"role": "assistant", "metadata": "track", "content": call.raw},
    ]
    nxt = g3.encode(after)
    assert nxt == ref.chatglm3_build_chat_input(sp, "{}", history, role="observation") + sp.encode("track\n")
    assert nxt[: len(ids)] == ids


def test_glm4_forced_prompt_ends_with_the_metadata_line(g4, glm4_tok):
    ours = [ChatMessage("system", "", tools=forced_tools("get_weather")), ChatMessage("user", "北京天气？")]
    wire = [
        {"role": "system", "content": "", "tools": [{"type": "function", "function": f} for f in (WEATHER, TRACK)]},
        {"role": "user", "content": "北京天气？"},
    ]  # fmt: skip
    text = ref.glm4_render(wire)
    assert text.endswith("<|assistant|>")
    ids = g4.encode(ours)
    assert ids == ref.glm4_tokenize(glm4_tok.enc, text + "get_weather\n")
    assert ids[: -len(glm4_tok.encode("get_weather\n"))] == ref.glm4_tokenize(glm4_tok.enc, text)
    call = ToolCall("get_weather", {"city": "北京"}, '{"city": "北京"}')
    after = [*ours, ChatMessage("assistant", "", tool_call=call), ChatMessage("observation", "22")]
    assert g4.encode(after)[: len(ids)] == ids


def test_continue_and_unforced_prompts_are_unchanged(g4):
    tools = ToolSet(functions(WEATHER, TRACK))
    base = [ChatMessage("system", "", tools=tools), ChatMessage("user", "hi")]
    forced = [ChatMessage("system", "", tools=forced_tools("track")), ChatMessage("user", "hi")]
    assert g4.encode(forced)[: len(g4.encode(base))] == g4.encode(base)
    assert g4.encode(base)[-1] == g4.ids["assistant"]
    cont = ChatMessage("assistant", "Hello")
    assert g4.encode([*forced, cont]) == g4.encode([*base, cont])


# --- the real decode loop ----------------------------------------------------


@pytest.fixture(scope="module")
def g4_loaded(glm4_tokenizer_folder):
    return models.tiny_glm4(glm4_tokenizer_folder)


def special(loaded, name):
    tok = loaded.tokenizer
    return tok.special_id(name) if hasattr(tok, "special_id") else tok.special_ids[name]


def answer(loaded, messages, scripts, key=None, max_new=60):
    forcer = models.ForceTokens(scripts)
    loaded.logits_processors = lambda: (forcer,)
    box = ParamsBox(SamplingParams(temperature=0.0, max_new_tokens=max_new))
    chunks = list(stream_answer(loaded, messages, box, conversation=key))
    assert chunks[-1].error is None, chunks[-1].error
    return chunks


def test_glm4_forced_call_from_argument_tokens_only(g4_loaded):
    loaded = g4_loaded
    enc, obs = loaded.tokenizer.encode, special(loaded, "<|observation|>")
    tools = forced_tools("get_weather")
    msgs = [ChatMessage("system", "", tools=tools), ChatMessage("user", "北京天气？")]
    prompt = loaded.prompt_format.encode(msgs)
    chunks = answer(loaded, msgs, [enc('{"city": "北京"}') + [obs]], key="forced-g4")
    last = chunks[-1]
    assert "".join(c.text for c in chunks) == ""
    assert {c.tool_pending for c in chunks[:-1]} == {"get_weather"}
    assert last.finish_reason == "tool_calls" and last.notice is None
    assert last.prompt_tokens == len(prompt)
    call = last.tool_call
    assert (call.name, dict(call.arguments), call.raw) == (
        "get_weather",
        {"city": "北京"},
        '{"city": "北京"}',
    )
    # The next request re-encodes the call's turn (metadata line + raw) byte-exact: the
    # kept cache covers the whole forced prompt and the generated arguments.
    msgs += [ChatMessage("assistant", "", tool_call=call), ChatMessage("observation", "22")]
    tools_auto = ToolSet(tools.functions)
    msgs[0] = ChatMessage("system", "", tools=tools_auto)
    eos = special(loaded, "<|user|>")
    chunks = answer(loaded, msgs, [enc("\n") + enc("22 度。") + [eos]], key="forced-g4")
    assert "".join(c.text for c in chunks) == "22 度。" and chunks[-1].finish_reason == "stop"
    assert chunks[-1].reused_tokens >= len(prompt) + len(enc('{"city": "北京"}'))
    loaded.kv_pool.clear()


def test_glm4_forced_call_with_bad_arguments_is_text_with_a_note(g4_loaded):
    enc, obs = g4_loaded.tokenizer.encode, special(g4_loaded, "<|observation|>")
    msgs = [ChatMessage("system", "", tools=forced_tools("get_weather")), ChatMessage("user", "hi")]
    last_chunks = answer(g4_loaded, msgs, [enc("Hello world") + [obs]])
    last = last_chunks[-1]
    assert last.finish_reason == "stop" and last.tool_call is None
    assert "".join(c.text for c in last_chunks) == "get_weather\nHello world"
    assert last.notice.kind == "tool_call_invalid" and "JSON" in last.notice.params["reason"]


def test_chatglm3_forced_call_from_argument_tokens_only(chatglm3_loaded):
    loaded = chatglm3_loaded
    tok = loaded.tokenizer
    obs = special(loaded, "<|observation|>")
    msgs = [ChatMessage("system", "", tools=forced_tools("get_weather")), ChatMessage("user", "天气？")]
    prompt = loaded.prompt_format.encode(msgs)
    assert prompt[-len(tok.encode("get_weather\n")) :] == tok.encode("get_weather\n")
    chunks = answer(loaded, msgs, [tok.encode("```python\ntool_call(city='北京')\n```") + [obs]], key="g3")
    last = chunks[-1]
    assert last.finish_reason == "tool_calls" and "".join(c.text for c in chunks) == ""
    call = last.tool_call
    assert (call.name, dict(call.arguments)) == ("get_weather", {"city": "北京"})
    # The text after the metadata line is decoded in its context, as when the model wrote
    # the metadata itself: sentencepiece's "▁```" is " ```" there (THUDM's decode too).
    assert call.raw == " ```python\ntool_call(city='北京')\n```"
    msgs += [ChatMessage("assistant", "", tool_call=call), ChatMessage("observation", "{}")]
    assert loaded.prompt_format.encode(msgs)[: len(prompt)] == prompt
    eos = special(loaded, "<|user|>")
    chunks = answer(loaded, msgs, [tok.encode("\n") + [eos]], key="g3")
    # The kept cache covers the forced prompt, its metadata line included (the content
    # re-encoded by sentencepiece gains its dummy "▁", as in THUDM's history).
    assert chunks[-1].reused_tokens >= len(prompt)
    loaded.close()
