"""The real decode loop with pixel values: the same tokens as transformers' own generate."""

from __future__ import annotations

import torch

from glmdesk.core.messages import ChatMessage
from glmdesk.core.settings import CacheSettings
from tests.helpers.glm4v import generate_reference, vision_answer


def test_answer_about_one_image_matches_transformers_generate(glm4v_loaded, red_photo):
    messages = [ChatMessage("user", "What is in this picture?", attachments=(red_photo,))]
    chunks, ids = vision_answer(glm4v_loaded, messages)
    n_prompt, expected = generate_reference(glm4v_loaded, messages, len(ids))
    assert chunks[-1].error is None, chunks[-1].error
    assert ids and ids == expected[: len(ids)]
    assert chunks[-1].prompt_tokens == n_prompt  # the 12 image tokens count as prompt tokens
    assert chunks[-1].cache.tokens_held >= n_prompt  # and their keys and values are held


def test_two_images_and_a_text_turn_after_them(glm4v_loaded, red_photo, blue_photo):
    first = [ChatMessage("user", "Compare the two images.", attachments=(red_photo, blue_photo))]
    chunks, ids = vision_answer(glm4v_loaded, first, conversation="two-images")
    assert ids == generate_reference(glm4v_loaded, first, len(ids))[1][: len(ids)]
    reply = glm4v_loaded.decode(ids)
    follow = [*first, ChatMessage("assistant", reply), ChatMessage("user", "Which is brighter?")]
    chunks, ids = vision_answer(glm4v_loaded, follow, conversation="two-images")
    assert chunks[-1].error is None
    assert chunks[-1].reused_tokens == 0  # a cache holding images starts afresh
    assert ids == generate_reference(glm4v_loaded, follow, len(ids))[1][: len(ids)]


def test_text_only_turn_on_a_vision_model_matches_generate(glm4v_loaded):
    messages = [ChatMessage("user", "Hello, describe the image briefly.")]
    chunks, ids = vision_answer(
        glm4v_loaded, messages, CacheSettings(strategy="sliding_window", window=64, sinks=4)
    )
    assert chunks[-1].error is None
    assert ids == generate_reference(glm4v_loaded, messages, len(ids))[1][: len(ids)]


def test_images_with_a_window_cache_are_refused_with_a_sentence(glm4v_loaded, red_photo):
    messages = [ChatMessage("user", "What is this?", attachments=(red_photo,))]
    chunks, ids = vision_answer(
        glm4v_loaded, messages, CacheSettings(strategy="sliding_window", window=64, sinks=4)
    )
    assert ids == []
    assert chunks[-1].finish_reason == "error"
    assert chunks[-1].error.kind == "invalid_setting"
    assert "full KV cache" in chunks[-1].error.message


def test_step_logits_equal_a_forward_of_the_whole_sequence(glm4v_loaded, blue_photo):
    """Teacher-forced: each decode step's logits equal transformers' own forward of the
    prompt plus the tokens so far (its 3D positions computed from the whole sequence)."""
    fmt = glm4v_loaded.prompt_format
    ids = fmt.encode([ChatMessage("user", "Describe it.", attachments=(blue_photo,))])
    inputs = fmt.vision_inputs(ids)
    source = glm4v_loaded.open_source(CacheSettings())
    assert source.reuse(ids) == 0
    logits = [source.prefill(torch.tensor([ids]))]
    forced = [17, 42, 99]
    for token in forced:
        logits.append(source.step(token))
    assert source.rope_delta < 0  # 396 image tokens advance positions by 36 only
    full = torch.tensor([ids + forced])
    kinds = torch.cat([inputs.mm_token_type_ids, torch.zeros((1, len(forced)), dtype=torch.long)], dim=1)
    with torch.inference_mode():
        out = glm4v_loaded.model(
            input_ids=full,
            pixel_values=inputs.pixel_values,
            image_grid_thw=inputs.grid_thw,
            mm_token_type_ids=kinds,
        )
    glm4v_loaded.model.model.rope_deltas = None
    expected = out.logits[0, len(ids) - 1 :]
    for k, got in enumerate(logits):
        torch.testing.assert_close(got, expected[k].float(), atol=1e-4, rtol=1e-4)
    source.release()
