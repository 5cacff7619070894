"""GLM-4.5V / GLM-4.6V (``Glm4vMoeForConditionalGeneration``): named as their own family
(locally and by a served model's id), prompt ids with images equal the processor's, and
the real decode loop with pixel values gives transformers' own greedy tokens."""

from __future__ import annotations

import json

import torch

from glmdesk.core.messages import ChatMessage
from glmdesk.engine.backends.transformers.vision import VisionFormat, VisionLoadedModel
from glmdesk.engine.backends.transformers.vision_processor import to_picture
from glmdesk.engine.families import family_for_model_id, recognise_folder, served_tool_dialects
from tests.helpers.glm4v import generate_reference, vision_answer


def test_the_folder_is_recognised_as_glm_4_5v_and_loads_as_a_vision_model(glm4v_moe_folder, glm4v_moe_loaded):
    config = json.loads((glm4v_moe_folder / "config.json").read_text())
    assert recognise_folder(config, glm4v_moe_folder) == "glm4v-moe"
    loaded = glm4v_moe_loaded
    assert type(loaded.model).__name__ == "Glm4vMoeForConditionalGeneration"
    assert isinstance(loaded, VisionLoadedModel) and isinstance(loaded.prompt_format, VisionFormat)
    assert loaded.info.family == "glm4v-moe"
    assert loaded.prompt_format.reasoning is not None  # <think> in its vocabulary: reasoning parts
    tok = loaded.tokenizer
    assert tok.convert_tokens_to_ids("<|user|>") in loaded.prompt_format.stop_ids


def test_the_dense_glm_4_1v_folder_is_its_own_family(glm4v_folder, glm4v_loaded):
    config = json.loads((glm4v_folder / "config.json").read_text())
    assert recognise_folder(config, glm4v_folder) == "glm4v"
    assert glm4v_loaded.info.family == "glm4v"


def test_served_model_ids_name_the_vision_families():
    named = {
        "zai-org/GLM-4.5V": "glm4v-moe",
        "zai-org/GLM-4.6V": "glm4v-moe",
        "GLM-4.5V-FP8": "glm4v-moe",
        "zai-org/GLM-4.6V-Flash": "glm4v",
        "zai-org/GLM-4.1V-9B-Thinking": "glm4v",
        "zai-org/GLM-4.5-Air": "glm4-moe",  # the text models keep their family
        "THUDM/glm-4-9b-chat": "glm4",
    }
    assert {model_id: family_for_model_id(model_id).name for model_id in named} == named
    assert served_tool_dialects("zai-org/GLM-4.5V")[0] == "glm45"  # vLLM's glm45 tool parser


def test_one_image_prompt_equals_the_processor(glm4v_moe_loaded, red_photo, blue_photo):
    fmt = glm4v_moe_loaded.prompt_format
    messages = [
        ChatMessage("user", "Compare them.", attachments=(red_photo, blue_photo)),
    ]
    ids = fmt.encode(messages)
    rows = [
        {
            "role": "user",
            "content": [{"type": "image"}, {"type": "image"}, {"type": "text", "text": "Compare them."}],
        }
    ]
    processor = fmt.processor
    text = processor.apply_chat_template(rows, tokenize=False, add_generation_prompt=True)
    pictures = [to_picture(red_photo), to_picture(blue_photo)]
    expected = processor(text=[text], images=pictures, return_tensors="pt")
    assert ids == expected["input_ids"][0].tolist()
    inputs = fmt.vision_inputs(ids)
    assert torch.equal(inputs.pixel_values, expected["pixel_values"])
    assert inputs.grid_thw.tolist() == expected["image_grid_thw"].tolist()


def test_answer_about_an_image_matches_transformers_generate(glm4v_moe_loaded, red_photo):
    messages = [ChatMessage("user", "What is in this picture?", attachments=(red_photo,))]
    chunks, ids = vision_answer(glm4v_moe_loaded, messages)
    n_prompt, expected = generate_reference(glm4v_moe_loaded, messages, len(ids))
    assert chunks[-1].error is None, chunks[-1].error
    assert ids and ids == expected[: len(ids)]
    assert chunks[-1].prompt_tokens == n_prompt
