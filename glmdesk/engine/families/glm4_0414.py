"""GLM-4-0414 and GLM-Z1 (``Glm4ForCausalLM``, ``model_type`` ``glm4``).

Both are prompted by the folder's own chat template (``apply_chat_template``) and stop
on the GLM role tokens; GLM-Z1 writes its reasoning first, as ``<think>...</think>``
(its template may write the open marker itself, "enforced thinking"), which the reply
parser streams as reasoning parts. Z1 is told from the chat model by its chat template
(it drops ``</think>`` blocks from history) or its name. In a GGUF (llama.cpp's
``convert_hf_to_gguf.py`` writes ``Glm4ForCausalLM`` as architecture ``glm4``) both are
prompted by the file's ``tokenizer.chat_template``; a ``glm4`` file without one is left
to GLM-4-9B's role-token format.

Sources: the THUDM/GLM-4-9B-0414 and THUDM/GLM-Z1-9B-0414 model cards (``config.json``
``architectures`` ``Glm4ForCausalLM``, ``generation_config.json`` eos 151329, 151336,
151338; Z1's usage guidelines: temperature 0.6, top_p 0.95, thinking block in
``<think>``); transformers' ``Glm4ForCausalLM``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from glmdesk.core.parts import ThinkMarkers
from glmdesk.core.settings import SamplingParams
from glmdesk.engine.families.base import GgufMeta, ModelFamily, TokenLookup
from glmdesk.engine.families.files import ROLE_END_TOKENS, chat_template_text, has_role_tokens
from glmdesk.engine.families.glm4 import GLM4_DEFAULTS, chat_template_format

THINK = ThinkMarkers("<think>", "</think>")


def is_glm4_0414_config(config: Mapping[str, Any]) -> bool:
    """True for a transformers GLM-4-0414-architecture config (``model_type`` ``glm4``)."""
    return config.get("model_type") == "glm4" or "Glm4ForCausalLM" in (config.get("architectures") or ())


def _is_z1(config: Mapping[str, Any], folder: Path) -> bool:
    name = str(config.get("_name_or_path") or folder.name).lower()
    return "z1" in name or THINK.close in chat_template_text(folder)


def _recognise_z1(config: Mapping[str, Any], folder: Path) -> str | None:
    return "glm-z1" if is_glm4_0414_config(config) and _is_z1(config, folder) else None


def _recognise_chat(config: Mapping[str, Any], folder: Path) -> str | None:
    return "glm4-0414" if is_glm4_0414_config(config) and not _is_z1(config, folder) else None


def _gguf_is_z1(lookup: TokenLookup, meta: GgufMeta) -> bool | None:
    """Whether a GGUF is GLM-Z1 (``True``) or GLM-4-0414 (``False``); ``None`` when it is
    neither (another architecture is checked by the caller; no role tokens or no template)."""
    template = meta("tokenizer.chat_template")
    if not isinstance(template, str) or not template or not has_role_tokens(lookup):
        return None
    return "z1" in str(meta("general.name") or "").lower() or THINK.close in template


def _recognise_z1_gguf(architecture: str, lookup: TokenLookup, meta: GgufMeta) -> str | None:
    return "glm-z1" if architecture == "glm4" and _gguf_is_z1(lookup, meta) is True else None


def _recognise_chat_gguf(architecture: str, lookup: TokenLookup, meta: GgufMeta) -> str | None:
    return "glm4-0414" if architecture == "glm4" and _gguf_is_z1(lookup, meta) is False else None


GLM_Z1 = ModelFamily(
    name="glm-z1",
    title="GLM-Z1-0414",
    variants=("glm-z1",),
    sampling_defaults=SamplingParams(temperature=0.6, top_p=0.95, top_k=40, max_new_tokens=4096),
    end_tokens=ROLE_END_TOKENS,
    reasoning=THINK,
    opens_reasoning=True,
    chat_template=True,
    model_id_markers=("glm-z1", "glm_z1"),
    recognise=_recognise_z1,
    recognise_gguf=_recognise_z1_gguf,
    make_format=chat_template_format,
)

GLM4_0414 = ModelFamily(
    name="glm4-0414",
    title="GLM-4-0414",
    variants=("glm4-0414",),
    sampling_defaults=GLM4_DEFAULTS,
    end_tokens=ROLE_END_TOKENS,
    model_id_markers=("glm-4-9b-0414", "glm-4-32b-0414", "glm-4-0414"),
    chat_template=True,
    recognise=_recognise_chat,
    recognise_gguf=_recognise_chat_gguf,
    make_format=chat_template_format,
)
