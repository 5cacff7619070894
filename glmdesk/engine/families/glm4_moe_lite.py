"""GLM-4.7-Flash (``Glm4MoeLiteForCausalLM``, ``model_type`` ``glm4_moe_lite``).

A 30B mixture-of-experts model with 3B active, whose attention is DeepSeek-V2's
multi-head latent attention (a compressed key/value latent plus a shared rotary key).
It speaks GLM-4.7's chat format: the GLM-4.5 family's template with tools, reasoning and
``enable_thinking`` (:class:`~glmdesk.engine.formats.glm45_format.Glm45Format`, the same format
object as GLM-4.5), whose generation prompt opens ``<think>`` itself; calls are GLM-4.5's
XML ones.

In a GGUF it has no architecture of its own: llama.cpp's ``convert_hf_to_gguf.py``
(``Glm4MoeLiteModel``, a ``DeepseekV2Model``) writes it as ``deepseek2`` with GLM's
vocabulary (``_set_vocab_glm``: pre-tokenizer ``glm4``, bos ``[gMASK]``, eot ``<|user|>``,
eom ``<|observation|>``). It is told from a DeepSeek file by that vocabulary: GLM's role
tokens, ``[gMASK]`` and ``<sop>``, which no DeepSeek tokenizer has (or the ``glm4``
pre-tokenizer with the role tokens).

Sources: the zai-org/GLM-4.7-Flash model card (``architectures``
``Glm4MoeLiteForCausalLM``; ``generation_config.json`` eos ``<|endoftext|>``,
``<|user|>``, ``<|observation|>``; "Default Settings (Most Tasks)": temperature 1.0,
top-p 0.95, the card's 131072 new tokens bounded here to 4096 as every family's desktop
default); transformers' ``models/glm4_moe_lite``; llama.cpp's ``convert_hf_to_gguf.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from glmdesk.core.parts import ThinkMarkers
from glmdesk.core.settings import SamplingParams
from glmdesk.engine.families.base import GgufMeta, ModelFamily, TokenLookup
from glmdesk.engine.families.files import ROLE_END_TOKENS, has_role_tokens
from glmdesk.engine.families.glm4_moe import glm45_format

THINK = ThinkMarkers("<think>", "</think>")


def _recognise(config: Mapping[str, Any], _folder: Path) -> str | None:
    architectures = config.get("architectures") or ()
    if config.get("model_type") == "glm4_moe_lite" or "Glm4MoeLiteForCausalLM" in architectures:
        return "glm4-moe-lite"
    return None


def is_glm_vocabulary(lookup: TokenLookup, meta: GgufMeta) -> bool:
    """Whether a GGUF's vocabulary is GLM's: the role tokens, with ``[gMASK]`` and
    ``<sop>`` or llama.cpp's ``glm4`` pre-tokenizer (``tokenizer.ggml.pre``)."""
    if not has_role_tokens(lookup):
        return False
    glm_prefix = lookup("[gMASK]") is not None and lookup("<sop>") is not None
    return glm_prefix or meta("tokenizer.ggml.pre") == "glm4"


def _recognise_gguf(architecture: str, lookup: TokenLookup, meta: GgufMeta) -> str | None:
    return "glm4-moe-lite" if architecture == "deepseek2" and is_glm_vocabulary(lookup, meta) else None


GLM4_MOE_LITE = ModelFamily(
    name="glm4-moe-lite",
    title="GLM-4.7-Flash",
    variants=("glm4-moe-lite",),
    sampling_defaults=SamplingParams(temperature=1.0, top_p=0.95, max_new_tokens=4096),
    end_tokens=ROLE_END_TOKENS,
    tool_dialect="glm45",
    reasoning=THINK,
    opens_reasoning=True,
    chat_template=True,
    model_id_markers=("glm-4.7-flash", "glm4.7-flash", "glm-4.7flash", "glm4_moe_lite"),
    recognise=_recognise,
    recognise_gguf=_recognise_gguf,
    make_format=glm45_format,
    thinking_switch=True,
)
