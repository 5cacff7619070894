"""The prompt format follows the chat template, not ``model_type``: a dense GLM-4-0414
checkpoint carrying GLM-4.6's or GLM-4.7's published template is prompted in that
template's format (reasoning apart, XML calls read), char for char and id for id; the
user may choose another format or another template file."""

from __future__ import annotations

import pytest

from glmdesk.core.errors import GlmdeskError
from glmdesk.core.messages import ChatMessage
from glmdesk.core.parts import ReasoningPart, TextPart, ToolCallPart, merged
from glmdesk.core.settings import LoadSettings, ParamsBox, SamplingParams
from glmdesk.core.tools import FunctionSpec, ToolCall, ToolSet
from glmdesk.engine.backends.transformers.loader import load_model
from glmdesk.engine.decode.generate import stream_answer
from glmdesk.engine.families import tool_dialect
from glmdesk.engine.families.template_format import choose_format
from tests.helpers import tool_models as tm
from tests.helpers.glm4_0414_models import CHAT_TEMPLATE, Z1_TEMPLATE
from tests.helpers.published_templates import GLM46_TEMPLATE, GLM47_TEMPLATE, write_dense_glm

WEATHER = FunctionSpec(
    "get_weather",
    "The weather in a city",
    {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}},
)
TOOLS = ToolSet((WEATHER,))
CALL = ToolCall("get_weather", {"city": "Paris", "days": 3}, call_id="call_1")
CONVERSATION = [
    ChatMessage("system", "You are a helpful assistant.", tools=TOOLS),
    ChatMessage("user", "Hello world"),
    ChatMessage("assistant", "The answer is 42.", reasoning="old steps"),
    ChatMessage("user", "what is the weather today in Paris?"),
    ChatMessage("assistant", "", tool_call=CALL, reasoning="Let me think"),
    ChatMessage("observation", '{"temperature": 21}', name="get_weather"),
]
REFERENCE = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "Hello world"},
    {"role": "assistant", "content": "The answer is 42.", "reasoning_content": "old steps"},
    {"role": "user", "content": "what is the weather today in Paris?"},
    {
        "role": "assistant",
        "content": "",
        "reasoning_content": "Let me think",
        "tool_calls": [
            {
                "type": "function",
                "function": {"name": "get_weather", "arguments": {"city": "Paris", "days": 3}},
            }
        ],
    },
    {"role": "tool", "content": '{"temperature": 21}'},
]
TOOL_DICTS = [{"type": "function", "function": WEATHER.definition()}]


@pytest.fixture(scope="module", params=["glm46", "glm47"])
def tuned(request, tmp_path_factory):
    """A dense GLM-4-0414 checkpoint fine-tuned on GLM-4.6's or GLM-4.7's template."""
    template = GLM46_TEMPLATE if request.param == "glm46" else GLM47_TEMPLATE
    folder = write_dense_glm(tmp_path_factory.mktemp(request.param) / "GLM-4-9B-0414-tune", template)
    from transformers import AutoTokenizer

    return load_model(LoadSettings(model=str(folder), device="cpu")), AutoTokenizer.from_pretrained(folder)


def test_choose_format_reads_the_template_and_keeps_the_network_family_when_they_agree():
    moved = choose_format("glm4-0414", GLM46_TEMPLATE)
    assert (moved.family, moved.chat_format) == ("glm4-moe", "glm45")
    assert moved.reason == (
        "its chat template writes tool calls with <arg_key>/<arg_value> and switches thinking with "
        "enable_thinking, though the checkpoint is GLM-4-0414"
    )
    assert choose_format("glm4-moe", GLM47_TEMPLATE).family == "glm4-moe"
    assert choose_format("glm4-moe-lite", GLM47_TEMPLATE).family == "glm4-moe-lite"
    assert choose_format("glm4-0414", CHAT_TEMPLATE).family == "glm4-0414"
    assert choose_format("glm4-moe", Z1_TEMPLATE).family == "glm-z1"
    qwen = "{% for m in messages %}<|im_start|>{{ m.content }}<think></think><tool_call>{% endfor %}"
    other = choose_format("gguf", qwen)
    assert (other.family, other.chat_format, other.reason) == ("gguf", "plain", "")
    assert choose_format("chatglm3", GLM46_TEMPLATE).family == "chatglm3"  # a format of its own
    chosen = choose_format("glm4-moe", GLM46_TEMPLATE, "plain")
    assert (chosen.family, chosen.reason) == (
        "glm4-0414",
        "chosen when the model was opened, though the checkpoint is GLM-4.5/4.6/4.7",
    )
    with pytest.raises(ValueError, match="Unknown chat format 'xml'"):
        choose_format("glm4-0414", GLM46_TEMPLATE, "xml")
    with pytest.raises(ValueError, match="Unknown chat format"):
        LoadSettings(chat_format="xml")


def test_a_dense_checkpoint_with_a_glm46_or_glm47_template_is_prompted_in_its_format(tuned):
    model, tok = tuned
    assert (model.info.family, model.info.chat_format) == ("glm4-moe", "glm45")
    assert "<arg_key>" in model.info.format_reason and tool_dialect(model.info.family) == "glm45"
    (note,) = [n for n in model.info.notes if n.kind == "chat_format"]
    assert note.params == {"format": "glm45", "checkpoint": "GLM-Z1-0414", "chosen": False}
    ids = model.prompt_format.encode(CONVERSATION)
    expected = tok.apply_chat_template(REFERENCE, tools=TOOL_DICTS, add_generation_prompt=True, tokenize=True)
    assert ids == expected["input_ids"]
    none_content = [dict(m, content=None) if m.get("tool_calls") else m for m in REFERENCE]
    with_none = tok.apply_chat_template(
        none_content, tools=TOOL_DICTS, add_generation_prompt=True, tokenize=True
    )
    assert ids == with_none["input_ids"] and "None" not in tok.decode(ids)


def _run(model, text: str, messages):
    tok = model.tokenizer
    script = tok.encode(text, add_special_tokens=False) + [tok.convert_tokens_to_ids("<|observation|>")]
    forcer = tm.ForceTokens([script])
    model.logits_processors = lambda: (forcer,)
    try:
        return list(
            stream_answer(model, messages, ParamsBox(SamplingParams(temperature=0.0, max_new_tokens=80)))
        )
    finally:
        del model.logits_processors


def test_the_tuned_checkpoint_answers_with_reasoning_apart_and_its_call_read(tuned):
    model, _tok = tuned
    opens = model.prompt_format.opens_reasoning  # GLM-4.7's template writes <think> itself
    written = ("" if opens else "<think>") + "Weather needed.</think>"
    written += "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value></tool_call>"
    messages = [ChatMessage("system", "", tools=TOOLS), ChatMessage("user", "weather in Paris?")]
    chunks = _run(model, written, messages)
    assert chunks[-1].finish_reason == "tool_calls"
    assert dict(chunks[-1].tool_call.arguments) == {"city": "Paris"}
    parts = merged(p for c in chunks for p in c.parts if not isinstance(p, ToolCallPart))
    assert parts == (ReasoningPart("Weather needed."),)
    assert not any(isinstance(p, TextPart) for p in parts)


def test_the_user_may_choose_another_format_or_another_template(tuned, tmp_path):
    model, _tok = tuned
    folder = model.info.location
    plain = load_model(LoadSettings(model=folder, device="cpu", chat_format="plain"))
    assert (plain.info.family, plain.info.chat_format, plain.prompt_format.tool_calls) == (
        "glm4-0414",
        "plain",
        False,
    )
    assert plain.info.format_reason.startswith("chosen when the model was opened")
    picked = tmp_path / "chat_template.jinja"
    picked.write_text(CHAT_TEMPLATE, encoding="utf-8")
    other = load_model(LoadSettings(model=folder, device="cpu", chat_template=str(picked)))
    assert (other.info.family, other.info.chat_format) == ("glm4-0414", "plain")
    assert (
        other.prompt_format.encode([ChatMessage("user", "hi")])
        == other.tokenizer.apply_chat_template(
            [{"role": "user", "content": "hi"}], add_generation_prompt=True, tokenize=True
        )["input_ids"]
    )
    with pytest.raises(GlmdeskError, match="holds no chat template"):
        (tmp_path / "empty.jinja").write_text("  ", encoding="utf-8")
        load_model(LoadSettings(model=folder, device="cpu", chat_template=str(tmp_path / "empty.jinja")))


def test_a_dense_gguf_is_prompted_in_its_templates_format(tuned):
    from glmdesk.engine.backends.llamacpp.vocab import gguf_format
    from tests.engine.families.test_glm4_moe import _VocabOf

    model, tok = tuned

    class Header:  # llama.cpp's convert_hf_to_gguf.py writes Glm4ForCausalLM as ``glm4``
        architecture = "glm4"

        @staticmethod
        def get(key: str):
            return {"tokenizer.chat_template": tok.chat_template}.get(key)

    fmt, choice = gguf_format(_VocabOf(tok), Header(), "tune.gguf")
    assert (choice.family, choice.chat_format, choice.checkpoint) == ("glm4-moe", "glm45", "GLM-Z1-0414")
    assert fmt.encode(CONVERSATION) == model.prompt_format.encode(CONVERSATION)
    plain, chosen = gguf_format(_VocabOf(tok), Header(), "tune.gguf", "plain", CHAT_TEMPLATE)
    assert (chosen.family, plain.tool_calls) == ("glm4-0414", False)


def test_a_malformed_call_from_the_model_is_shown_with_a_note_and_not_run(tuned):
    model, _tok = tuned
    opens = model.prompt_format.opens_reasoning
    bad = "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris<arg_key>days</arg_key><arg_value>3</arg_value></tool_call>"
    written = ("" if opens else "<think>") + "Weather.</think>" + bad
    messages = [ChatMessage("system", "", tools=TOOLS), ChatMessage("user", "weather in Paris?")]
    chunks = _run(model, written, messages)
    last = chunks[-1]
    assert last.finish_reason == "stop" and last.tool_call is None and last.tool_calls == ()
    assert "".join(c.text for c in chunks) == bad
    assert last.notice is not None and "the value of 'city' is not closed" in last.notice.message
    (told,) = last.notice.params["unreadable"]  # for the tool loop to tell the model
    assert told.startswith("The call of get_weather was not run: it could not be read (the value of 'city'")


def test_a_template_file_with_a_syntax_error_is_refused_when_the_model_opens(tmp_path):
    from glmdesk.engine.families.template_format import read_template_file

    broken = tmp_path / "broken.jinja"
    broken.write_text("[gMASK]<sop>{% for m in messages %}{{ m.content }\n{% endfor %}", encoding="utf-8")
    with pytest.raises(GlmdeskError, match=r"is not a valid Jinja template: .* \(line 1\)\."):
        read_template_file(str(broken))
