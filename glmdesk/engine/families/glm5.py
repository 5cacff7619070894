"""The GLM-5 generation: GLM-5 to 5.3 (``GlmMoeDsaForCausalLM``, ``model_type``
``glm_moe_dsa``, GGUF architecture ``glm-dsa``) and GLM-5.3-Flash
(``Glm5NextForConditionalGeneration``, ``glm5_next``, GGUF ``glm5-next``).

GLM-5 is GLM-4.7-Flash's multi-head latent attention with DeepSeek-style sparse
attention (an indexer picks ``index_topk`` keys per query; its per-token indexer keys
live beside the keys in glmdesk's cache layers, :mod:`glmdesk.engine.cache.layers`).
GLM-5.3-Flash is a hybrid: linear-attention (KDA) layers with a fixed-size recurrent
state and every fourth layer indexed MLA, a million-token context, an MTP head and a
vision tower (text chat here leaves it unused). Both speak GLM-4.7's chat format: the
GLM-4.5 template family with ``enable_thinking``, a generation prompt that opens
``<think>`` itself, and GLM-4.5's XML tool calls without newlines between the name and
the argument pairs (vLLM's ``glm47`` tool parser).

Sources: transformers 5.24's ``models/glm_moe_dsa`` and ``models/glm5_next``
(architectures, ``layer_types``); llama-cpp-python 0.3.36's architecture names; the
eos tokens of the GLM-4.5 line (``<|endoftext|>``, ``<|user|>``, ``<|observation|>``).
The sampling defaults are GLM-4.7's card settings (temperature 1.0, top-p 0.95), the
new tokens bounded to 4096 as every family's desktop default.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from glmdesk.core.parts import ThinkMarkers
from glmdesk.core.settings import SamplingParams
from glmdesk.engine.families.base import GgufMeta, ModelFamily, TokenLookup
from glmdesk.engine.families.files import ROLE_END_TOKENS
from glmdesk.engine.families.glm4_moe import glm45_format

THINK = ThinkMarkers("<think>", "</think>")
DEFAULTS = SamplingParams(temperature=1.0, top_p=0.95, max_new_tokens=4096)


def _claims(config: Mapping[str, Any], model_type: str, architecture: str) -> bool:
    return config.get("model_type") == model_type or architecture in (config.get("architectures") or ())


def _recognise(config: Mapping[str, Any], _folder: Path) -> str | None:
    return "glm5" if _claims(config, "glm_moe_dsa", "GlmMoeDsaForCausalLM") else None


def _recognise_flash(config: Mapping[str, Any], _folder: Path) -> str | None:
    return "glm5-flash" if _claims(config, "glm5_next", "Glm5NextForConditionalGeneration") else None


def _recognise_gguf(architecture: str, _lookup: TokenLookup, _meta: GgufMeta) -> str | None:
    return "glm5" if architecture == "glm-dsa" else None


def _recognise_gguf_flash(architecture: str, _lookup: TokenLookup, _meta: GgufMeta) -> str | None:
    return "glm5-flash" if architecture == "glm5-next" else None


def _family(name: str, title: str, markers: tuple[str, ...], recognise, recognise_gguf) -> ModelFamily:
    """One of the line: GLM-4.7's format, thinking switch and XML calls; its own names."""
    return ModelFamily(
        name=name,
        title=title,
        variants=(name,),
        sampling_defaults=DEFAULTS,
        end_tokens=ROLE_END_TOKENS,
        tool_dialect="glm45",
        reasoning=THINK,
        opens_reasoning=True,
        chat_template=True,
        model_id_markers=markers,
        recognise=recognise,
        recognise_gguf=recognise_gguf,
        make_format=glm45_format,
        thinking_switch=True,
    )


GLM5 = _family("glm5", "GLM-5", ("glm-5", "glm5", "glm_moe_dsa"), _recognise, _recognise_gguf)
GLM5_FLASH = _family(
    "glm5-flash",
    "GLM-5.3-Flash",
    ("glm-5.3-flash", "glm5.3-flash", "glm5_next", "glm5-next"),
    _recognise_flash,
    _recognise_gguf_flash,
)
