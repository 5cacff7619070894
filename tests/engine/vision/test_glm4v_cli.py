"""``glmdesk chat --image FILE``: an answer about a photo in the terminal; sentences for
a file that is not an image and for a model without vision."""

from __future__ import annotations

from glmdesk.core.messages import ChatMessage
from glmdesk.core.settings import ParamsBox, SamplingParams
from glmdesk.engine.backends.transformers.backend import TransformersBackend
from glmdesk.engine.decode.generate import stream_answer
from tests.helpers.cli import run_cli


def glmdesk(*args):
    return run_cli(*args)


def test_chat_answers_about_an_attached_photo(glm4v_folder, glm4v_loaded, red_photo, tmp_path):
    photo = tmp_path / "red.png"
    photo.write_bytes(red_photo.data)
    out = glmdesk(
        "chat", "--model", str(glm4v_folder), "--image", str(photo), "--prompt", "What is this?",
        "--temperature", "0", "--max-new-tokens", "6", "--engine", "transformers", "--device", "cpu",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    greedy = ParamsBox(SamplingParams(temperature=0.0, max_new_tokens=6))
    message = [ChatMessage("user", "What is this?", attachments=(red_photo,))]
    expected = "".join(c.text for c in stream_answer(glm4v_loaded, message, greedy))
    assert expected and expected in out.stdout


def test_a_file_that_is_not_an_image_is_a_sentence_before_loading(tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("not a picture")
    out = glmdesk("chat", "--image", str(notes), "--prompt", "hi")
    assert out.returncode == 2
    assert "notes.txt cannot be used: it is not a PNG, JPEG, WebP or GIF file" in out.stderr
    assert "Traceback" not in out.stderr and "loaded in" not in out.stderr


def test_a_text_model_refuses_an_attached_image(embedded, red_photo):
    backend = TransformersBackend(embedded)
    assert not backend.capabilities().vision
    message = [ChatMessage("user", "What is this?", attachments=(red_photo,))]
    (chunk,) = list(backend.stream(message, ParamsBox(SamplingParams(max_new_tokens=4))))
    assert chunk.finish_reason == "error" and chunk.error.kind == "vision_unavailable"
    assert "does not read images" in chunk.error.message
