"""GLM-OCR (``GlmOcrForConditionalGeneration``, ``glm_ocr``) and ``glmdesk chat --ocr FILE
[--page N]``: recognised, a PDF page rendered and read greedily whatever the sampling flags
say, a PNG's Markdown printed as the model writes it, and sentences for bad pages."""

from __future__ import annotations

import json

from glmdesk.chat.ocr import OCR_PROMPT, ocr_messages, ocr_sampling, page_image, pdf_page_count
from glmdesk.core.settings import ParamsBox, SamplingParams
from glmdesk.engine.backends.transformers.vision import VisionLoadedModel
from glmdesk.engine.decode.generate import stream_answer
from glmdesk.engine.families import get_family, recognise_folder
from tests.helpers.cli import run_cli
from tests.helpers.glm46v import write_pdf
from tests.helpers.tool_models import ForceTokens


def _greedy(loaded, image, n):
    box = ParamsBox(ocr_sampling(SamplingParams(temperature=1.5, max_new_tokens=n)))
    return "".join(c.text for c in stream_answer(loaded, ocr_messages(image), box))


def test_the_folder_is_glm_ocr_with_greedy_defaults(glm_ocr_folder, glm_ocr_loaded):
    config = json.loads((glm_ocr_folder / "config.json").read_text())
    assert recognise_folder(config, glm_ocr_folder) == "glm-ocr"
    assert isinstance(glm_ocr_loaded, VisionLoadedModel) and glm_ocr_loaded.info.family == "glm-ocr"
    assert get_family("glm-ocr").sampling_defaults.temperature == 0.0
    from glmdesk.engine.backends.transformers.backend import TransformersBackend

    caps = TransformersBackend(glm_ocr_loaded).capabilities()
    assert caps.vision and not caps.tool_calls and not caps.thinking_switch


def test_chat_ocr_reads_the_chosen_pdf_page_greedily(glm_ocr_folder, glm_ocr_loaded, tmp_path):
    pdf = write_pdf(tmp_path / "scan.pdf", ["Invoice 42", "| a | b |"])
    assert pdf_page_count(pdf) == 2
    page2 = page_image(pdf, 2)
    assert page2.mime == "image/png" and page2.name == "scan-page2.png"
    expected = _greedy(glm_ocr_loaded, page2, 8)
    assert expected and expected != _greedy(glm_ocr_loaded, page_image(pdf, 1), 8)  # the pages differ
    out = run_cli(
        "chat", "--model", str(glm_ocr_folder), "--ocr", str(pdf), "--page", "2", "--temperature", "1.5",
        "--seed", "3", "--max-new-tokens", "8", "--engine", "transformers", "--device", "cpu",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == expected.strip()
    assert "not an OCR model" not in out.stderr


def test_chat_ocr_prints_the_markdown_of_a_png(
    glm_ocr_folder, glm_ocr_loaded, red_photo, tmp_path, monkeypatch
):
    tok = glm_ocr_loaded.tokenizer
    markdown = "# Prices\n\n| a | b |\n|---|---|\n| 1 | 2 |"
    script = tok.encode(markdown, add_special_tokens=False) + [tok.convert_tokens_to_ids("<|user|>")]
    forcer = ForceTokens([script])
    monkeypatch.setattr(VisionLoadedModel, "logits_processors", lambda self: (forcer,))
    page = tmp_path / "page.png"
    page.write_bytes(red_photo.data)
    out = run_cli(
        "chat", "--model", str(glm_ocr_folder), "--ocr", str(page), "--max-new-tokens", str(len(script) + 2),
        "--engine", "transformers", "--device", "cpu",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == markdown
    assert ocr_messages(page_image(page))[0].content == OCR_PROMPT == "Text Recognition:"


def test_a_page_past_the_end_and_a_page_without_ocr_are_sentences(tmp_path):
    pdf = write_pdf(tmp_path / "one.pdf", ["Only page"])
    out = run_cli("chat", "--ocr", str(pdf), "--page", "3")
    assert out.returncode == 2 and "one.pdf cannot be used: it has no page 3 (it has 1 page)" in out.stderr
    out = run_cli("chat", "--page", "2", "--prompt", "hi")
    assert out.returncode == 2 and "--page needs --ocr FILE." in out.stderr
    notes = tmp_path / "notes.txt"
    notes.write_text("plain text")
    out = run_cli("chat", "--ocr", str(notes))
    assert out.returncode == 2 and "notes.txt cannot be used" in out.stderr
    assert "Traceback" not in out.stderr and "loaded in" not in out.stderr


def test_every_answer_of_an_ocr_model_is_greedy_whatever_the_sampling_says(glm_ocr_loaded, red_photo):
    from glmdesk.engine.backends.transformers.backend import TransformersBackend

    backend = TransformersBackend(glm_ocr_loaded)
    hot = ParamsBox(SamplingParams(temperature=1.5, top_k=5, max_new_tokens=8, seed=None))
    answers = {"".join(c.text for c in backend.stream(ocr_messages(red_photo), hot)) for _ in range(2)}
    assert answers == {_greedy(glm_ocr_loaded, red_photo, 8)}


def test_the_ocr_prompt_equals_the_processor_on_glm_ocr_s_template(glm_ocr_loaded, red_photo):
    from glmdesk.engine.backends.transformers.vision_processor import to_picture

    fmt = glm_ocr_loaded.prompt_format
    assert not fmt.tool_calls and not hasattr(fmt, "thinking")  # an OCR model is offered no tools
    ids = fmt.encode(ocr_messages(red_photo))
    rows = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": OCR_PROMPT}]}]
    text = fmt.processor.apply_chat_template(rows, tokenize=False, add_generation_prompt=True)
    assert text.endswith("<|end_of_image|>Text Recognition:<|assistant|>\n")
    expected = fmt.processor(text=[text], images=[to_picture(red_photo)], return_tensors="pt")
    assert ids == expected["input_ids"][0].tolist()


def test_chat_ocr_with_a_text_model_is_a_sentence(embedded_folder, red_photo, tmp_path):
    page = tmp_path / "page.png"
    page.write_bytes(red_photo.data)
    out = run_cli("chat", "--ocr", str(page), "--engine", "transformers", "--max-new-tokens", "4")
    assert out.returncode == 2
    assert "does not read images: open a GLM vision model" in out.stderr and "Traceback" not in out.stderr
    assert out.stdout == ""
