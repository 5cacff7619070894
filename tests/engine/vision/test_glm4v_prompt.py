"""GLM-4.1V prompts: loaded as a vision model, ids with images equal the processor's."""

from __future__ import annotations

import torch

from glmdesk.core.images import ImageAttachment
from glmdesk.core.messages import ChatMessage
from glmdesk.engine.backends.transformers.vision import VisionFormat, VisionLoadedModel
from glmdesk.engine.backends.transformers.vision_processor import load_processor


def _processor_ids(loaded, rows, pictures):
    """What transformers' Glm4vProcessor itself makes of the conversation."""
    processor = loaded.prompt_format.processor
    text = processor.apply_chat_template(rows, tokenize=False, add_generation_prompt=True)
    out = processor(text=[text], images=pictures or None, return_tensors="pt")
    return out


def test_glm4v_folder_loads_as_a_vision_model(glm4v_loaded):
    assert isinstance(glm4v_loaded, VisionLoadedModel)
    assert glm4v_loaded.vision
    assert type(glm4v_loaded.model).__name__ == "Glm4vForConditionalGeneration"
    assert isinstance(glm4v_loaded.prompt_format, VisionFormat)
    assert glm4v_loaded.info.context_length == 4096
    tok = glm4v_loaded.tokenizer
    assert tok.convert_tokens_to_ids("<|user|>") in glm4v_loaded.prompt_format.stop_ids
    assert tok.convert_tokens_to_ids("<|endoftext|>") in glm4v_loaded.prompt_format.stop_ids


def test_one_image_prompt_equals_the_processor(glm4v_loaded, red_photo):
    from glmdesk.engine.backends.transformers.vision_processor import to_picture

    fmt = glm4v_loaded.prompt_format
    messages = [ChatMessage("user", "What is in this picture?", attachments=(red_photo,))]
    ids = fmt.encode(messages)
    rows = [
        {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "What is in this picture?"}]}
    ]
    expected = _processor_ids(glm4v_loaded, rows, [to_picture(red_photo)])
    assert ids == expected["input_ids"][0].tolist()
    inputs = fmt.vision_inputs(ids)
    assert torch.equal(inputs.pixel_values, expected["pixel_values"])
    assert (
        inputs.grid_thw.tolist() == expected["image_grid_thw"].tolist() == [[1, 6, 8]]
    )  # 60x40 scaled up to 112x84 (12 544 pixels at least)
    assert inputs.mm_token_type_ids.tolist() == expected["mm_token_type_ids"].tolist()
    image_id = fmt.image_token_id
    assert ids.count(image_id) == 12  # 6 x 8 patches merged 2 x 2
    tok = glm4v_loaded.tokenizer
    assert tok.decode(ids[:5]) == "[gMASK]<sop><|user|>\n<|begin_of_image|>"


def test_two_images_over_two_turns_equal_the_processor(glm4v_loaded, red_photo, blue_photo):
    from glmdesk.engine.backends.transformers.vision_processor import to_picture

    fmt = glm4v_loaded.prompt_format
    messages = [
        ChatMessage("system", "You describe pictures."),
        ChatMessage("user", "Look.", attachments=(red_photo,)),
        ChatMessage("assistant", "A red square."),
        ChatMessage("user", "And these two?", attachments=(blue_photo, red_photo)),
    ]
    ids = fmt.encode(messages)
    rows = [
        {"role": "system", "content": "You describe pictures."},
        {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Look."}]},
        {"role": "assistant", "content": "A red square."},
        {
            "role": "user",
            "content": [{"type": "image"}, {"type": "image"}, {"type": "text", "text": "And these two?"}],
        },
    ]
    pictures = [to_picture(p) for p in (red_photo, blue_photo, red_photo)]
    expected = _processor_ids(glm4v_loaded, rows, pictures)
    assert ids == expected["input_ids"][0].tolist()
    inputs = fmt.vision_inputs(ids)
    assert torch.equal(inputs.pixel_values, expected["pixel_values"])
    assert inputs.grid_thw.tolist() == [[1, 6, 8], [1, 36, 22], [1, 6, 8]]


def test_text_typed_like_an_image_marker_stays_text(glm4v_loaded):
    fmt = glm4v_loaded.prompt_format
    ids = fmt.encode([ChatMessage("user", "<|image|> is a token")])
    assert fmt.image_token_id not in ids
    assert fmt.vision_inputs(ids) is None


def test_processor_loads_without_torchvision(glm4v_folder, glm4v_loaded):
    import importlib.util

    assert importlib.util.find_spec("torchvision") is None  # the path that must work
    processor = load_processor(glm4v_folder, glm4v_loaded.tokenizer)
    assert type(processor.image_processor).__name__ == "Glm4vImageProcessorPil"
    assert processor.image_processor.merge_size == 2 and processor.image_processor.patch_size == 14


def test_a_damaged_image_is_a_sentence(glm4v_loaded):
    import pytest

    from glmdesk.core.errors import GlmdeskError

    broken = ImageAttachment(b"\x89PNG\r\n\x1a\n" + b"\x00" * 20, "image/png", "broken.png")
    with pytest.raises(GlmdeskError) as err:
        glm4v_loaded.prompt_format.encode([ChatMessage("user", "hi", attachments=(broken,))])
    assert err.value.info.kind == "invalid_image"
    assert "broken.png" in err.value.info.message


def test_the_answer_markers_are_not_shown_whatever_the_split():
    from glmdesk.engine.backends.transformers.vision import AnswerMarkerFilter

    reply = "<answer>A red square</answer>, and 1 < 2 <b>"
    for size in (1, 2, 3, 5, 8, len(reply)):
        shown = AnswerMarkerFilter()
        out = "".join(shown(reply[i : i + size]) for i in range(0, len(reply), size)) + shown.flush()
        assert out == "A red square, and 1 < 2 <b>", size
    held = AnswerMarkerFilter()
    assert held("done </ans") == "done " and held.flush() == "</ans"  # cut off: shown as written


def test_the_window_size_note_follows_the_processor(glm4v_loaded):
    """``ImageSizing`` (plain arithmetic the window can run) against transformers' own
    ``smart_resize`` and the processor's patch grid."""
    from PIL import Image
    from transformers.models.glm4v.image_processing_pil_glm4v import smart_resize

    fmt = glm4v_loaded.prompt_format
    sizing = fmt.sizing()
    assert (sizing.factor, sizing.temporal, sizing.min_pixels) == (28, 2, 12544)
    for width, height in [(60, 40), (20, 300), (300, 500), (1000, 999), (4000, 3000), (8000, 100), (27, 27)]:
        h, w = smart_resize(2, height, width, 2, 28, sizing.min_pixels, sizing.max_pixels)
        assert sizing.model_size(width, height) == (w, h), (width, height)
    for width, height in [(60, 40), (300, 500), (640, 480)]:
        out = fmt.processor.image_processor(images=[Image.new("RGB", (width, height))], return_tensors="pt")
        assert sizing.tokens(width, height) == int(out["image_grid_thw"].prod()) // 4


def test_thinking_is_reasoning_and_the_answer_wrapper_is_not_shown(glm4v_loaded):
    from glmdesk.core.parts import ReasoningPart, TextPart
    from glmdesk.engine.families.parser import reply_parser

    tok = glm4v_loaded.tokenizer
    ids = tok.encode("<think>It is red.</think><answer>A red square</answer>", add_special_tokens=False)
    text = glm4v_loaded.decode(ids)  # the markers survive decoding although they are special here
    assert text == "<think>It is red.</think><answer>A red square</answer>"
    parser = reply_parser(glm4v_loaded.prompt_format)
    parts = []
    for k in range(0, len(text), 3):
        parts += parser.feed(text[k : k + 3])
    parts += parser.finish(False)
    reasoning = "".join(p.text for p in parts if isinstance(p, ReasoningPart))
    shown = "".join(p.text for p in parts if isinstance(p, TextPart))
    assert reasoning.strip() == "It is red." and shown == "A red square"


def test_earlier_answers_go_in_without_their_thinking(glm4v_loaded, red_photo):
    fmt = glm4v_loaded.prompt_format
    with_thinking = [
        ChatMessage("user", "Look.", attachments=(red_photo,)),
        ChatMessage("assistant", "<think>It is red.</think><answer>A red square</answer>"),
        ChatMessage("user", "Sure?"),
    ]
    plain = [*with_thinking[:1], ChatMessage("assistant", "<answer>A red square</answer>"), with_thinking[2]]
    assert fmt.encode(with_thinking) == fmt.encode(plain)
