"""GLM vision models: GLM-4.1V-Thinking and GLM-4.6V-Flash (``Glm4vForConditionalGeneration``,
``model_type`` ``glm4v``), GLM-4.5V and GLM-4.6V (``Glm4vMoeForConditionalGeneration``,
``glm4v_moe``), GLM-4.6V / 4.6V-Flash in transformers' own class
(``Glm46VForConditionalGeneration``, ``glm46v``) and GLM-OCR
(``GlmOcrForConditionalGeneration``, ``glm_ocr``).

GLM-4.6V (``glm46v``) is prompted by its template as the GLM-4.6 line is: thinking
switched by ``enable_thinking``, tools offered and read in GLM-4.5's XML
(:class:`~glmdesk.engine.backends.transformers.vision_glm46.Glm46VisionFormat`). GLM-OCR
reads a page image and writes Markdown; glmdesk asks it greedily
(:mod:`glmdesk.chat.ocr`).

Both are prompted by the folder's own chat template through the model's processor
(:class:`~glmdesk.engine.backends.transformers.vision.VisionFormat`, chosen by the loader from the config's
``model_type``): this module names them and gives their stop tokens, think markers and
the pieces of a served model's id that name them (most users run the MoE ones on a
vLLM/SGLang server: the remote backend). The longest id marker wins, so
``zai-org/GLM-4.5V`` is GLM-4.5V, not the text-only GLM-4.5, and ``GLM-4.6V-Flash`` the
dense model. GLM-4.5V/4.6V call tools in GLM-4.5's XML (vLLM's ``glm45`` tool parser);
a local vision model whose template writes those calls gets tools and the thinking
switch (the loader reads the template; GLM-4.1V's has neither).

Sources: the zai-org model cards of GLM-4.1V-9B-Thinking, GLM-4.5V, GLM-4.6V and
GLM-4.6V-Flash (``architectures``; ``<think>`` then ``<answer>``; eos ``<|endoftext|>``,
``<|user|>``, ``<|observation|>``). No GGUF is claimed here: a GGUF of their language
model is read by its text architecture and runs as text only, its vision projector
unused (:mod:`glmdesk.engine.backends.gguf_vision`). The sampling defaults are GLM-4.5's
(temperature 0.6, top_p 0.95), not read from the vision cards.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from glmdesk.core.parts import ThinkMarkers
from glmdesk.core.settings import SamplingParams
from glmdesk.engine.families.base import ModelFamily
from glmdesk.engine.families.files import ROLE_END_TOKENS
from glmdesk.engine.families.glm4 import chat_template_format

THINK = ThinkMarkers("<think>", "</think>")
DEFAULTS = SamplingParams(temperature=0.6, top_p=0.95, max_new_tokens=4096)


def _claims(config: Mapping[str, Any], model_type: str, architecture: str) -> bool:
    return config.get("model_type") == model_type or architecture in (config.get("architectures") or ())


def _recognise(config: Mapping[str, Any], _folder: Path) -> str | None:
    return "glm4v" if _claims(config, "glm4v", "Glm4vForConditionalGeneration") else None


def _recognise_46v(config: Mapping[str, Any], _folder: Path) -> str | None:
    return "glm46v" if _claims(config, "glm46v", "Glm46VForConditionalGeneration") else None


def _recognise_ocr(config: Mapping[str, Any], _folder: Path) -> str | None:
    return "glm-ocr" if _claims(config, "glm_ocr", "GlmOcrForConditionalGeneration") else None


def _recognise_moe(config: Mapping[str, Any], _folder: Path) -> str | None:
    return "glm4v-moe" if _claims(config, "glm4v_moe", "Glm4vMoeForConditionalGeneration") else None


GLM4V = ModelFamily(
    name="glm4v",
    title="GLM-4.1V/4.6V-Flash",
    variants=("glm4v",),
    sampling_defaults=DEFAULTS,
    end_tokens=ROLE_END_TOKENS,
    reasoning=THINK,
    answer_markers=("<answer>", "</answer>"),
    chat_template=True,
    model_id_markers=("glm-4.1v", "glm4.1v", "glm-4.6v-flash", "glm4.6v-flash"),
    recognise=_recognise,
    make_format=chat_template_format,
)

GLM4V_MOE = ModelFamily(
    name="glm4v-moe",
    title="GLM-4.5V/4.6V",
    variants=("glm4v-moe",),
    sampling_defaults=DEFAULTS,
    end_tokens=ROLE_END_TOKENS,
    tool_dialect="glm45",
    reasoning=THINK,
    chat_template=True,
    model_id_markers=("glm-4.5v", "glm4.5v", "glm-4.6v", "glm4.6v"),
    recognise=_recognise_moe,
    make_format=chat_template_format,
)


def _glm45_vision_text_format(family: ModelFamily, tokenizer, eos_ids: tuple[int, ...]):
    """GLM-4.6V's text format: GLM-4.5's (:func:`~glmdesk.engine.families.glm4_moe.glm45_format`);
    the loader wraps it with the processor (its images)."""
    from glmdesk.engine.families.glm4_moe import glm45_format

    return glm45_format(family, tokenizer, eos_ids)


GLM46V = ModelFamily(
    name="glm46v",
    title="GLM-4.6V",
    variants=("glm46v",),
    sampling_defaults=DEFAULTS,
    end_tokens=ROLE_END_TOKENS,
    tool_dialect="glm45",
    reasoning=THINK,
    chat_template=True,
    recognise=_recognise_46v,
    make_format=_glm45_vision_text_format,
    thinking_switch=True,
)

#: Detected family names of models made for OCR: every answer they write is greedy
#: (:func:`greedy`), whatever the sampling settings say.
OCR_FAMILIES = frozenset({"glm-ocr"})


def greedy(params: SamplingParams) -> SamplingParams:
    """``params`` with greedy decoding forced (temperature 0, top-p 1, no top-k, min-p or
    repetition penalty; the length limit and seed kept): OCR copies the page, it does not
    choose words."""
    return dataclasses.replace(params, temperature=0.0, repetition_penalty=1.0, top_k=0, top_p=1.0, min_p=0.0)


#: GLM-OCR is asked greedily (its model card's example: ``do_sample`` off) for up to
#: 8192 new tokens (a dense page of Markdown).
OCR_DEFAULTS = SamplingParams(temperature=0.0, top_p=1.0, max_new_tokens=8192, repetition_penalty=1.0)

GLM_OCR = ModelFamily(
    name="glm-ocr",
    title="GLM-OCR",
    variants=("glm-ocr",),
    sampling_defaults=OCR_DEFAULTS,
    end_tokens=ROLE_END_TOKENS,
    chat_template=True,
    model_id_markers=("glm-ocr", "glm_ocr", "glmocr"),
    recognise=_recognise_ocr,
    make_format=chat_template_format,
)
