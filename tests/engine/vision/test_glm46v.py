"""GLM-4.6V in transformers' own class (``Glm46VForConditionalGeneration``, ``glm46v``):
recognised, prompted by its template with images, thinking on and off and tools (ids equal
the processor's ``apply_chat_template``), an image answer streams transformers' own greedy
tokens, and a written think block and XML call come back as reasoning and a tool call."""

from __future__ import annotations

import json

import pytest

from glmdesk.core.messages import ChatMessage
from glmdesk.core.parts import ReasoningPart, TextPart, ToolCallPart, merged
from glmdesk.core.settings import ParamsBox, SamplingParams
from glmdesk.core.tools import FunctionSpec, ToolSet
from glmdesk.engine.backends.transformers.vision import VisionLoadedModel
from glmdesk.engine.backends.transformers.vision_glm46 import Glm46VisionFormat
from glmdesk.engine.backends.transformers.vision_processor import to_picture
from glmdesk.engine.decode.generate import stream_answer
from glmdesk.engine.families import get_family, recognise_folder
from glmdesk.engine.formats.glm45_format import tool_definitions
from glmdesk.engine.formats.prompt import thinking_for
from tests.helpers.glm4v import generate_reference, vision_answer
from tests.helpers.tool_models import ForceTokens

WEATHER = FunctionSpec(
    "get_weather",
    "The weather of a city",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
TOOLS = ToolSet((WEATHER,))


def test_the_folder_is_glm_4_6v_with_tools_and_a_thinking_switch(glm46v_folder, glm46v_loaded):
    config = json.loads((glm46v_folder / "config.json").read_text())
    assert recognise_folder(config, glm46v_folder) == "glm46v"
    loaded = glm46v_loaded
    assert (
        isinstance(loaded, VisionLoadedModel)
        and type(loaded.model).__name__ == "Glm46VForConditionalGeneration"
    )
    assert isinstance(loaded.prompt_format, Glm46VisionFormat)
    assert loaded.info.family == "glm46v" and get_family("glm46v").tool_dialect == "glm45"
    assert loaded.prompt_format.tool_calls and loaded.prompt_format.thinking is True
    assert loaded.tokenizer.convert_tokens_to_ids("<|observation|>") in loaded.prompt_format.stop_ids
    from glmdesk.engine.backends.transformers.backend import TransformersBackend

    caps = TransformersBackend(loaded).capabilities()  # the window's Thinking switch, tools and images
    assert caps.thinking_switch and caps.tool_calls and caps.vision


@pytest.mark.parametrize("thinking", [True, False])
def test_prompt_with_images_tools_and_reasoning_equals_the_processor(
    glm46v_loaded, red_photo, blue_photo, thinking
):
    fmt = glm46v_loaded.prompt_format
    messages = [
        ChatMessage("system", "", tools=TOOLS),
        ChatMessage("user", "Compare them.", attachments=(red_photo, blue_photo)),
        ChatMessage("assistant", "The first is red.", reasoning="Two colours."),
        ChatMessage("user", "Weather in Paris?"),
    ]
    with thinking_for(fmt, thinking):
        ids = fmt.encode(messages)
    rows = [
        {
            "role": "user",
            "content": [{"type": "image"}, {"type": "image"}, {"type": "text", "text": "Compare them."}],
        },
        {"role": "assistant", "content": "The first is red.", "reasoning_content": "Two colours."},
        {"role": "user", "content": "Weather in Paris?"},
    ]
    processor = fmt.processor
    text = processor.apply_chat_template(
        rows,
        tools=tool_definitions(TOOLS),
        tokenize=False,
        add_generation_prompt=True,
        enable_thinking=thinking,
    )
    assert ("/nothink" in text) is not thinking and "# Tools" in text
    expected = processor(
        text=[text], images=[to_picture(red_photo), to_picture(blue_photo)], return_tensors="pt"
    )
    assert ids == expected["input_ids"][0].tolist()
    assert fmt.vision_inputs(ids).grid_thw.tolist() == expected["image_grid_thw"].tolist()


def test_an_image_answer_streams_transformers_greedy_tokens(glm46v_loaded, red_photo):
    messages = [ChatMessage("user", "What is in this picture?", attachments=(red_photo,))]
    chunks, ids = vision_answer(glm46v_loaded, messages)
    n_prompt, expected = generate_reference(glm46v_loaded, messages, len(ids))
    assert chunks[-1].error is None, chunks[-1].error
    assert len(chunks) > 2 and ids == expected[: len(ids)]  # streamed token by token
    assert chunks[-1].prompt_tokens == n_prompt


def _forced(loaded, monkeypatch, written: str, stop: str):
    tok = loaded.tokenizer
    script = tok.encode(written, add_special_tokens=False) + [tok.convert_tokens_to_ids(stop)]
    forcer = ForceTokens([script])
    monkeypatch.setattr(loaded, "logits_processors", lambda: (forcer,))
    return ParamsBox(SamplingParams(temperature=0.0, max_new_tokens=len(script) + 4))


def test_thinking_about_an_image_is_parsed_apart_from_the_answer(glm46v_loaded, red_photo, monkeypatch):
    params = _forced(glm46v_loaded, monkeypatch, "<think>It is red.</think>A red square", "<|user|>")
    messages = [ChatMessage("user", "What is this?", attachments=(red_photo,))]
    chunks = list(stream_answer(glm46v_loaded, messages, params))
    assert chunks[-1].error is None and chunks[-1].finish_reason == "stop"
    parts = merged(p for c in chunks for p in c.parts)
    assert parts == (ReasoningPart("It is red."), TextPart("A red square"))


def test_an_xml_call_after_an_image_is_a_tool_call(glm46v_loaded, red_photo, monkeypatch):
    written = (
        "<think>Where is it?</think>\n<tool_call>get_weather\n"
        "<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>"
    )
    params = _forced(glm46v_loaded, monkeypatch, written, "<|observation|>")
    messages = [
        ChatMessage("system", "", tools=TOOLS),
        ChatMessage("user", "Weather there?", attachments=(red_photo,)),
    ]
    chunks = list(stream_answer(glm46v_loaded, messages, params))
    assert chunks[-1].finish_reason == "tool_calls", chunks[-1].error
    call = chunks[-1].tool_call
    assert (call.name, dict(call.arguments)) == ("get_weather", {"city": "Paris"})
    parts = [p for c in chunks for p in c.parts]
    assert merged(p for p in parts if not isinstance(p, ToolCallPart))[0] == ReasoningPart("Where is it?")


def test_chat_with_an_image_prints_the_thinking_apart_and_no_thinking_asks_nothink(
    glm46v_folder, glm46v_loaded, red_photo, tmp_path, monkeypatch
):
    from tests.helpers.cli import run_cli

    tok = glm46v_loaded.tokenizer
    script = tok.encode("<think>It is red.</think>A red square", add_special_tokens=False)
    script.append(tok.convert_tokens_to_ids("<|user|>"))
    prompts: list[list[int]] = []

    class Recording(ForceTokens):
        def __call__(self, ids, scores):
            if self.last is None or ids.shape[1] != self.last + 1:
                prompts.append(ids[0].tolist())
            return super().__call__(ids, scores)

    forcer = Recording([script])
    monkeypatch.setattr(VisionLoadedModel, "logits_processors", lambda self: (forcer,))
    photo = tmp_path / "red.png"
    photo.write_bytes(red_photo.data)
    common = ("chat", "--model", str(glm46v_folder), "--image", str(photo), "--prompt", "What is this?",
              "--max-new-tokens", str(len(script) + 2), "--engine", "transformers", "--device", "cpu")  # fmt: skip
    out = run_cli(*common)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "A red square" and "Thinking:\n│ It is red." in out.stderr
    out = run_cli(*common, "--no-thinking")
    assert out.returncode == 0, out.stderr
    assert "no thinking switch" not in out.stderr
    assert "/nothink" not in tok.decode(prompts[0]) and "/nothink" in tok.decode(prompts[-1])


@pytest.mark.parametrize("thinking", [True, False])
def test_a_call_and_its_result_after_an_image_on_the_4_6v_line_template_as_glm_ocr_ships_it(
    tmp_path, red_photo, thinking
):
    """The same model with the GLM-4.6V-line template GLM-OCR publishes (its generation
    prompt ends with a newline; thinking off adds ``<think></think>``): a call with its
    reasoning and the tool's result go in as the template writes them."""
    from glmdesk.core.settings import LoadSettings
    from glmdesk.core.tools import ToolCall
    from glmdesk.engine.backends.transformers.loader import load_model
    from tests.helpers.glm46v import GLM_OCR_TEMPLATE, write_glm46v_folder

    folder = write_glm46v_folder(tmp_path / "GLM-4.6V-tiny")
    (folder / "chat_template.jinja").write_text(GLM_OCR_TEMPLATE)
    fmt = load_model(LoadSettings(model=str(folder), device="cpu")).prompt_format
    messages = [
        ChatMessage("system", "", tools=TOOLS),
        ChatMessage("user", "Weather there?", attachments=(red_photo,)),
        ChatMessage(
            "assistant", "", tool_call=ToolCall("get_weather", {"city": "Paris"}), reasoning="Paris."
        ),
        ChatMessage("observation", "sunny"),
    ]
    with thinking_for(fmt, thinking):
        ids = fmt.encode(messages)
    call = {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}
    rows = [
        {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Weather there?"}]},
        {"role": "assistant", "content": "", "reasoning_content": "Paris.", "tool_calls": [call]},
        {"role": "tool", "content": "sunny"},
    ]
    text = fmt.processor.apply_chat_template(
        rows,
        tools=tool_definitions(TOOLS),
        tokenize=False,
        add_generation_prompt=True,
        enable_thinking=thinking,
    )
    assert "<tool_response>\nsunny\n</tool_response>" in text and "<arg_value>Paris</arg_value>" in text
    expected = fmt.processor(text=[text], images=[to_picture(red_photo)], return_tensors="pt")
    assert ids == expected["input_ids"][0].tolist()


def test_a_glm4v_folder_with_the_4_6v_template_gets_tools_and_the_thinking_switch(tmp_path, red_photo):
    """GLM-4.6V-Flash and GLM-4.5V as published (``glm4v`` / ``glm4v_moe`` folders) carry
    the 4.6V line's template: read from it, their format is GLM-4.6V's, not GLM-4.1V's."""
    from glmdesk.core.settings import LoadSettings
    from glmdesk.engine.backends.transformers.loader import load_model
    from tests.helpers.glm4v import write_glm4v_folder
    from tests.helpers.glm46v import GLM46V_TEMPLATE

    folder = write_glm4v_folder(tmp_path / "GLM-4.6V-Flash-glm4v")
    (folder / "chat_template.jinja").write_text(GLM46V_TEMPLATE)
    loaded = load_model(LoadSettings(model=str(folder), device="cpu"))
    fmt = loaded.prompt_format
    assert loaded.info.family == "glm4v" and isinstance(fmt, Glm46VisionFormat) and fmt.tool_calls
    messages = [
        ChatMessage("system", "", tools=TOOLS),
        ChatMessage("user", "Where?", attachments=(red_photo,)),
    ]
    with thinking_for(fmt, False):
        ids = fmt.encode(messages)
    rows = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Where?"}]}]
    text = fmt.processor.apply_chat_template(
        rows, tools=tool_definitions(TOOLS), tokenize=False, add_generation_prompt=True, enable_thinking=False
    )
    expected = fmt.processor(text=[text], images=[to_picture(red_photo)], return_tensors="pt")
    assert ids == expected["input_ids"][0].tolist()


def test_glm_4_1v_s_template_keeps_its_own_format(glm4v_loaded):
    from glmdesk.engine.backends.transformers.vision import VisionFormat

    fmt = glm4v_loaded.prompt_format
    assert type(fmt) is VisionFormat and not fmt.tool_calls  # no XML calls in its template
