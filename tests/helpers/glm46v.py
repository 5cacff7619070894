"""Tiny random GLM-4.6V (``Glm46VForConditionalGeneration``, ``glm46v``) and GLM-OCR
(``GlmOcrForConditionalGeneration``, ``glm_ocr``) folders built in tests, and their
session fixtures (imported by ``tests/conftest.py``).

Both use the tokenizer, vision tower sizes and language model sizes of the tiny
GLM-4.1V (:mod:`tests.helpers.glm4v`), with their own processor settings and templates:

- GLM-4.6V: the image processor of the zai-org/GLM-4.6V and GLM-4.6V-Flash
  ``preprocessor_config.json`` (``Glm46VImageProcessor``: GLM-4.1V's 14-pixel patches,
  2x2 merge, 2-frame temporal patches, CLIP mean/std, 112x112 to 9633792 pixels). The
  template is zai-org/GLM-4.6's published ``chat_template.jinja``
  (:data:`tests.helpers.published_templates.GLM46_TEMPLATE`: tools, XML calls,
  ``enable_thinking``) with the user turn of the GLM-4.5V / GLM-4.6V template, which
  writes ``<|begin_of_image|><|image|><|end_of_image|>`` for each image part, then the
  text parts. Reference data only: nothing is downloaded.
- GLM-OCR: its processor as the GLM-OCR SDK configures it (zai-org/GLM-OCR
  ``glmocr/config.yaml``: ``min_pixels`` 12544, ``max_pixels`` 71372800, 2-frame
  temporal patches) on GLM-4.6V's image processor class, and GLM-4.1V's prompt layout
  (``[gMASK]<sop><|user|>\\n``, the image markers, the text, ``<|assistant|>\\n``).
  The vision tower is GLM-OCR's own (``GlmOcrVisionModel``: biased attention with
  q/k norms), 2 blocks deep.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from glmdesk.core.settings import LoadSettings
from tests.helpers.glm4v import (
    CHAT_TEMPLATE,
    PREPROCESSOR,
    VISION_CONFIG,
    text_config,
    token_config,
    vocab_size,
    write_tokenizer,
)
from tests.helpers.published_templates import GLM46_TEMPLATE

#: The user turn of GLM-4.6's template ...
_GLM46_USER = "<|user|>\n{{ visible_text(m.content) }}\n"
#: ... as GLM-4.5V / GLM-4.6V write it: each image or video part's markers, then the
#: text parts (Hugging Face renders templates with ``trim_blocks``: a newline after a
#: block tag is dropped).
_GLM46V_USER = (
    "<|user|>\n{% if m.content is string %}\n{{ m.content }}\n"
    "{%- else %}\n{%- for item in m.content %}\n"
    "{% if item.type == 'video' or 'video' in item %}\n<|begin_of_video|><|video|><|end_of_video|>"
    "{% elif item.type == 'image' or 'image' in item %}\n<|begin_of_image|><|image|><|end_of_image|>"
    "{% elif item.type == 'text' %}\n{{ item.text }}\n"
    "{%- endif %}\n{%- endfor %}\n{%- endif %}\n"
)
assert _GLM46_USER in GLM46_TEMPLATE
#: GLM-4.6V's chat template (see the module's docstring).
GLM46V_TEMPLATE = GLM46_TEMPLATE.replace(_GLM46_USER, _GLM46V_USER)

#: GLM-4.6V's image processor settings (GLM-4.1V's, in the 4.6V processor classes).
GLM46V_PREPROCESSOR = {
    **PREPROCESSOR,
    "image_processor_type": "Glm46VImageProcessor",
    "processor_class": "Glm46VProcessor",
}

#: GLM-OCR's image processor settings (the SDK's pixel bounds; see the module's docstring).
GLM_OCR_PREPROCESSOR = {
    **GLM46V_PREPROCESSOR,
    "size": {"shortest_edge": 12544, "longest_edge": 71372800},
}

#: The tiny GLM-OCR vision tower (``GlmOcrVisionConfig``): 2 blocks, hidden 32.
OCR_VISION_CONFIG = {**VISION_CONFIG, "attention_bias": True}


def _write(folder: Path, template: str, preprocessor: dict, build) -> Path:
    import torch

    folder.mkdir(parents=True, exist_ok=True)
    ids = write_tokenizer(folder)
    (folder / "chat_template.jinja").write_text(template)
    torch.manual_seed(0)
    model = build(ids, vocab_size(ids)).eval()
    model.save_pretrained(folder)
    (folder / "preprocessor_config.json").write_text(json.dumps(preprocessor, indent=2))
    (folder / "processor_config.json").write_text(
        json.dumps({"processor_class": preprocessor["processor_class"]})
    )
    return folder


def write_glm46v_folder(folder: Path) -> Path:
    """A tiny random ``Glm46VForConditionalGeneration`` folder (text as the tiny
    GLM-4.1V's: 2 layers, hidden 128, partial M-RoPE) with GLM-4.6V's template."""
    from transformers import Glm46VConfig, Glm46VForConditionalGeneration

    def build(ids, vocab):
        config = Glm46VConfig(
            text_config={**text_config(ids, vocab), "intermediate_size": 192, "model_type": "glm4v_text"},
            vision_config={**VISION_CONFIG, "model_type": "glm4v_vision"},
            **token_config(ids),
        )
        return Glm46VForConditionalGeneration(config)

    return _write(folder, GLM46V_TEMPLATE, GLM46V_PREPROCESSOR, build)


def write_glm_ocr_folder(folder: Path) -> Path:
    """A tiny random ``GlmOcrForConditionalGeneration`` folder (2 text layers of hidden
    128 with 4 heads of 32; GLM-OCR's vision tower, 2 blocks of hidden 32)."""
    from transformers import GlmOcrConfig, GlmOcrForConditionalGeneration

    def build(ids, vocab):
        config = GlmOcrConfig(
            text_config={**text_config(ids, vocab), "intermediate_size": 192},
            vision_config=OCR_VISION_CONFIG,
            **token_config(ids),
        )
        return GlmOcrForConditionalGeneration(config)

    return _write(folder, CHAT_TEMPLATE, GLM_OCR_PREPROCESSOR, build)


@pytest.fixture(scope="session")
def glm46v_folder(tmp_path_factory) -> Path:
    """A tiny random ``Glm46VForConditionalGeneration`` folder with GLM-4.6V's processor."""
    return write_glm46v_folder(tmp_path_factory.mktemp("glm46v") / "GLM-4.6V-Flash-tiny")


@pytest.fixture(scope="session")
def glm46v_loaded(glm46v_folder):
    """The tiny GLM-4.6V loaded by glmdesk's transformers loader (fp32, CPU)."""
    from glmdesk.engine.backends.transformers.loader import load_model

    return load_model(LoadSettings(model=str(glm46v_folder), device="cpu"))


@pytest.fixture(scope="session")
def glm_ocr_folder(tmp_path_factory) -> Path:
    """A tiny random ``GlmOcrForConditionalGeneration`` folder with GLM-OCR's processor."""
    return write_glm_ocr_folder(tmp_path_factory.mktemp("glm-ocr") / "GLM-OCR-tiny")


@pytest.fixture(scope="session")
def glm_ocr_loaded(glm_ocr_folder):
    """The tiny GLM-OCR loaded by glmdesk's transformers loader (fp32, CPU)."""
    from glmdesk.engine.backends.transformers.loader import load_model

    return load_model(LoadSettings(model=str(glm_ocr_folder), device="cpu"))


def write_pdf(path, texts):
    """A PDF of small pages (60 x 40 mm), one text line each (fpdf2)."""
    from fpdf import FPDF

    pdf = FPDF(unit="mm", format=(60, 40))
    for text in texts:
        pdf.add_page()
        pdf.set_font("helvetica", size=12)
        pdf.cell(text=text)
    pdf.output(str(path))
    return path
