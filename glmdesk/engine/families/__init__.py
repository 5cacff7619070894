"""The model-family registry: one :class:`ModelFamily` per family, one module each.

Adding a family is one new module here (a :class:`ModelFamily` with its recogniser,
stop tokens, sampling defaults, prompt format factory, tool dialect and think markers),
one line in :data:`FAMILIES` (where its recognisers are tried: the specific before the
general) and its tests. Everything else asks this module:

- :func:`recognise_folder` (``chatglm/detect.py``), :func:`recognise_gguf`
  (``backends/llamacpp/vocab.py``), :func:`family_for_model_id` (the remote backend);
- :func:`get_family` by detected name for stop ids (``ModelFamily.stop_ids``), sampling
  defaults (:func:`sampling_defaults`: window, CLI, server), prompt formats
  (``chatglm/prepare.py``, the loader) and tool dialects (:func:`tool_dialect`: CLI,
  session, remote);
- :func:`~glmdesk.engine.families.parser.reply_parser` for every backend's reply parts.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from glmdesk.core.settings import SamplingParams
from glmdesk.engine.families.base import GgufMeta, ModelFamily, TokenLookup, collect_stop_ids
from glmdesk.engine.families.chatglm2 import CHATGLM2
from glmdesk.engine.families.chatglm3 import CHATGLM3
from glmdesk.engine.families.chatglm_v1 import CHATGLM_V1
from glmdesk.engine.families.generic import GENERIC
from glmdesk.engine.families.glm4 import GLM4, GLM4_HF
from glmdesk.engine.families.glm4_0414 import GLM4_0414, GLM_Z1
from glmdesk.engine.families.glm4_moe import GLM4_MOE
from glmdesk.engine.families.glm4_moe_lite import GLM4_MOE_LITE
from glmdesk.engine.families.glm4v import GLM4V, GLM4V_MOE, GLM46V, GLM_OCR
from glmdesk.engine.families.glm5 import GLM5, GLM5_FLASH


def in_order(*families: ModelFamily) -> tuple[ModelFamily, ...]:
    """``families`` as the order their recognisers are tried in, once each checked.

    Raises:
        ValueError: when two families share a detected variant, or the last one is not
            the generic family (it claims what no other does).
    """
    seen: dict[str, str] = {}
    for family in families:
        for variant in family.variants:
            if seen.setdefault(variant, family.name) != family.name:
                raise ValueError(f"{variant!r} is a variant of both {seen[variant]} and {family.name}.")
    if not families or families[-1] is not GENERIC:
        raise ValueError("The generic family must come last: it claims what no other family does.")
    return families


#: Every family, in the order their recognisers are tried: the first that claims a
#: folder, a GGUF file or a served model's id names it.
FAMILIES: tuple[ModelFamily, ...] = in_order(
    CHATGLM_V1,  # the original ChatGLM-6B layout is told apart first
    GLM_Z1,  # before GLM-4-0414 and GLM-4-9B: a glm4 GGUF with Z1's template is Z1's
    GLM4_0414,  # before GLM-4-9B: a glm4 GGUF with a chat template is GLM-4-0414's
    GLM4,  # GLM-4-9B (original layout, or a glm4 GGUF without a template)
    CHATGLM3,
    CHATGLM2,
    GLM4_HF,  # transformers' own GLM-4 classes
    GLM4_MOE,  # GLM-4.5 / 4.6 / 4.7
    GLM4_MOE_LITE,  # GLM-4.7-Flash
    GLM5_FLASH,  # GLM-5.3-Flash: its served id also holds "glm-5", so before GLM-5
    GLM5,  # GLM-5 to 5.3 (DSA)
    GLM4V,
    GLM4V_MOE,
    GLM46V,  # GLM-4.6V in transformers' own class
    GLM_OCR,
    GENERIC,  # last: it claims what no other family does
)
_BY_VARIANT = {variant: family for family in FAMILIES for variant in family.variants}

__all__ = [
    "FAMILIES",
    "GENERIC",
    "ModelFamily",
    "TokenLookup",
    "collect_stop_ids",
    "family_for_model_id",
    "get_family",
    "loaded_tool_dialect",
    "recognise_folder",
    "recognise_gguf",
    "gguf_variant",
    "sampling_defaults",
    "served_tool_dialects",
    "tool_dialect",
    "tool_dialects",
    "variants",
]


def get_family(name: str) -> ModelFamily:
    """The family a detected name belongs to (``chatglm3-32k`` -> ChatGLM3); the
    generic family for a name no family claims (``generic-hf``, ``gguf``, ``remote``)."""
    return _BY_VARIANT.get(name, GENERIC)


def variants() -> tuple[str, ...]:
    """Every detected name, in registry order."""
    return tuple(_BY_VARIANT)


def recognise_folder(config: Mapping[str, Any], folder: Path) -> str | None:
    """The detected name of a Hugging Face folder: the first family whose recogniser
    claims its ``config.json`` (and files), or ``None`` when none does."""
    for family in FAMILIES:
        variant = family.recognise(config, folder)
        if variant is not None:
            return variant
    return None


def _no_metadata(_key: str) -> None:
    return None


def recognise_gguf(architecture: str, lookup: TokenLookup, meta: GgufMeta = _no_metadata) -> ModelFamily:
    """The family of a GGUF file from its ``general.architecture``, vocabulary and
    metadata (``meta(key)``, e.g. ``GGUFHeader.get``; none by default): the generic
    family, prompted by the file's chat template, when no other claims it."""
    return get_family(gguf_variant(architecture, lookup, meta))


def gguf_variant(architecture: str, lookup: TokenLookup, meta: GgufMeta = _no_metadata) -> str:
    """The detected name of a GGUF file (see :func:`recognise_gguf`): the variant its
    family's recogniser names (``glm4.6-moe`` for a GLM-4.6/4.7 file), ``generic`` when
    none claims it."""
    for family in FAMILIES:
        variant = family.recognise_gguf(architecture, lookup, meta)
        if variant is not None:
            return variant
    return GENERIC.name


def family_for_model_id(model_id: str) -> ModelFamily:
    """The family a served model's id names (``THUDM/glm-4-9b-chat`` -> GLM-4), the
    longest matching marker winning; the generic family when none does."""
    name = model_id.lower()
    best, length = GENERIC, 0
    for family in FAMILIES:
        for marker in family.model_id_markers:
            if marker in name and len(marker) > length:
                best, length = family, len(marker)
    return best


def sampling_defaults(name: str) -> SamplingParams:
    """The published demo defaults of the detected name ``name`` (its variant's when the
    family gives that variant its own, else the family's)."""
    family = get_family(name)
    return dict(family.variant_defaults).get(name, family.sampling_defaults)


def tool_dialects() -> tuple[str, ...]:
    """Every tool dialect a family writes, in registry order (``glm4``, ``chatglm3``)."""
    return tuple(dict.fromkeys(f.tool_dialect for f in FAMILIES if f.tool_dialect))


def served_tool_dialects(model_id: str) -> tuple[str, ...]:
    """The tool dialects to read a served model's call text with, in order: its family's
    first (``chatglm3`` for ``chatglm3-6b``), then the others; GLM-4's first when the id
    names no family with tools (``glm-4-9b-chat``)."""
    first = family_for_model_id(model_id).tool_dialect or "glm4"
    return (first, *(d for d in tool_dialects() if d != first))


def loaded_tool_dialect(info) -> str | None:
    """The tool dialect of a loaded model (a ``ModelInfo``): its family's, or for a remote
    server's model the one its id names (:func:`served_tool_dialects`); ``None`` for a
    local model whose family has no tool calls."""
    if info.engine == "remote":
        return served_tool_dialects(info.name)[0]
    return tool_dialect(info.family)


def tool_dialect(name: str) -> str | None:
    """How the family ``name`` belongs to writes tool calls (``chatglm3``, ``glm4``), or ``None``."""
    return get_family(name).tool_dialect
