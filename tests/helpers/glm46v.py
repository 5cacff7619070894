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
  temporal patches) on GLM-4.6V's image processor class, and its own published chat
  template (:data:`GLM_OCR_TEMPLATE`).
  The vision tower is GLM-OCR's own (``GlmOcrVisionModel``: biased attention with
  q/k norms), 2 blocks deep.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from glmdesk.core.settings import LoadSettings
from tests.helpers.glm4v import (
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

#: zai-org/GLM-OCR's ``chat_template.jinja``, as a public project's tests quote it in full
#: (GLM-4.6V's template line: tools, XML calls, ``enable_thinking``, image and video parts;
#: its generation prompt ``<|assistant|>`` and a newline). Reference data only.
# fmt: off
GLM_OCR_TEMPLATE = '[gMASK]<sop>\n{%- if tools -%}\n<|system|>\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>\n{% for tool in tools %}\n{{ tool | tojson(ensure_ascii=False) }}\n{% endfor %}\n</tools>\n\nFor each function call, output the function name and arguments within the following XML format:\n<tool_call>{function-name}\n<arg_key>{arg-key-1}</arg_key>\n<arg_value>{arg-value-1}</arg_value>\n<arg_key>{arg-key-2}</arg_key>\n<arg_value>{arg-value-2}</arg_value>\n...\n</tool_call>{%- endif -%}\n{%- macro visible_text(content) -%}\n    {%- if content is string -%}\n        {{- content }}\n    {%- elif content is iterable and content is not mapping -%}\n        {%- for item in content -%}\n            {%- if item is mapping and item.type == \'text\' -%}\n                {{- item.text }}\n            {%- elif item is mapping and (item.type == \'image\' or \'image\' in item) -%}\n                <|begin_of_image|><|image|><|end_of_image|>\n            {%- elif item is mapping and (item.type == \'video\' or \'video\' in item) -%}\n                <|begin_of_video|><|video|><|end_of_video|>\n            {%- elif item is string -%}\n                {{- item }}\n            {%- endif -%}\n        {%- endfor -%}\n    {%- else -%}\n        {{- content }}\n    {%- endif -%}\n{%- endmacro -%}\n{%- set ns = namespace(last_user_index=-1) %}\n{%- for m in messages %}\n    {%- if m.role == \'user\' %}\n        {% set ns.last_user_index = loop.index0 -%}\n    {%- endif %}\n{%- endfor %}\n{% for m in messages %}\n{%- if m.role == \'user\' -%}<|user|>\n{% if m.content is string %}\n{{ m.content }}\n{%- else %}\n{%- for item in m.content %}\n{% if item.type == \'video\' or \'video\' in item %}\n<|begin_of_video|><|video|><|end_of_video|>{% elif item.type == \'image\' or \'image\' in item %}\n<|begin_of_image|><|image|><|end_of_image|>{% elif item.type == \'text\' %}\n{{ item.text }}\n{%- endif %}\n{%- endfor %}\n{%- endif %}\n{{- \'/nothink\' if (enable_thinking is defined and not enable_thinking and not visible_text(m.content).endswith("/nothink")) else \'\' -}}\n{%- elif m.role == \'assistant\' -%}\n<|assistant|>\n{%- set reasoning_content = \'\' %}\n{%- set content = visible_text(m.content) %}\n{%- if m.reasoning_content is string %}\n    {%- set reasoning_content = m.reasoning_content %}\n{%- else %}\n    {%- if \'</think>\' in content %}\n        {%- set reasoning_content = content.split(\'</think>\')[0].rstrip(\'\\n\').split(\'<think>\')[-1].lstrip(\'\\n\') %}\n        {%- set content = content.split(\'</think>\')[-1].lstrip(\'\\n\') %}\n    {%- endif %}\n{%- endif %}\n{%- if loop.index0 > ns.last_user_index and reasoning_content -%}\n{{ \'\\n<think>\' + reasoning_content.strip() +  \'</think>\'}}\n{%- else -%}\n{{ \'\\n<think></think>\' }}\n{%- endif -%}\n{%- if content.strip() -%}\n{{ \'\\n\' + content.strip() }}\n{%- endif -%}\n{% if m.tool_calls %}\n{% for tc in m.tool_calls %}\n{%- if tc.function %}\n    {%- set tc = tc.function %}\n{%- endif %}\n{{ \'\\n<tool_call>\' + tc.name }}\n{% set _args = tc.arguments %}\n{% for k, v in _args.items() %}\n<arg_key>{{ k }}</arg_key>\n<arg_value>{{ v | tojson(ensure_ascii=False) if v is not string else v }}</arg_value>\n{% endfor %}\n</tool_call>{% endfor %}\n{% endif %}\n{%- elif m.role == \'tool\' -%}\n{%- if m.content is string -%}\n{%- if loop.first or (messages[loop.index0 - 1].role != "tool") %}\n    {{- \'<|observation|>\' }}\n{%- endif %}\n{{- \'\\n<tool_response>\\n\' }}\n{{- m.content }}\n{{- \'\\n</tool_response>\' }}\n{% elif m.content is iterable and m.content is not mapping %}\n{%- if loop.first or (messages[loop.index0 - 1].role != "tool") %}\n{{- \'<|observation|>\' }}\n{%- endif %}\n{{- \'\\n<tool_response>\\n\' }}\n{%- for tr in m.content -%}\n  {%- if tr is mapping and tr.type is defined -%}\n    {%- set t = tr.type | lower -%}\n    {%- if t == \'text\' and tr.text is defined -%}\n{{ tr.text }}\n    {%- elif t in [\'image\', \'image_url\'] -%}\n<|begin_of_image|><|image|><|end_of_image|>\n    {%- elif t in [\'video\', \'video_url\'] -%}\n<|begin_of_video|><|video|><|end_of_video|>\n    {%- else -%}\n{{ tr | tojson(ensure_ascii=False) }}\n    {%- endif -%}\n  {%- else -%}\n{{ tr.output if tr.output is defined else tr }}\n  {%- endif -%}\n{%- endfor -%}\n{{- \'\\n</tool_response>\' }}\n{%- else -%}\n<|observation|>{% for tr in m.content %}\n\n<tool_response>\n{{ tr.output if tr.output is defined else tr }}\n</tool_response>{% endfor -%}\n{% endif -%}\n{%- elif m.role == \'system\' -%}\n<|system|>\n{{ visible_text(m.content) }}\n{%- endif -%}\n{%- endfor -%}\n{%- if add_generation_prompt -%}\n<|assistant|>\n{{\'<think></think>\\n\' if (enable_thinking is defined and not enable_thinking) else \'\'}}\n{%- endif -%}'
# fmt: on

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

    return _write(folder, GLM_OCR_TEMPLATE, GLM_OCR_PREPROCESSOR, build)


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
