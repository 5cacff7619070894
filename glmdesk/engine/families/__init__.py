"""The model-family registry: one :class:`ModelFamily` per family, one module each.

Adding a family is one new module here (a :class:`ModelFamily` with its recogniser,
stop tokens, sampling defaults, prompt format factory, tool dialect, think markers and
``recognise_order``: where its recognisers are tried, the specific before the general)
plus its tests: :func:`discover` finds it. Everything else asks this module:

- :func:`recognise_folder` (``chatglm/detect.py``), :func:`recognise_gguf`
  (``backends/llamacpp/vocab.py``), :func:`family_for_model_id` (the remote backend);
- :func:`get_family` by detected name for stop ids (``ModelFamily.stop_ids``), sampling
  defaults (:func:`sampling_defaults`: window, CLI, server), prompt formats
  (``chatglm/prepare.py``, the loader) and tool dialects (:func:`tool_dialect`: CLI,
  session, remote);
- :func:`~glmdesk.engine.families.parser.reply_parser` for every backend's reply parts.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from glmdesk.core.settings import SamplingParams
from glmdesk.engine.families.base import GgufMeta, ModelFamily, TokenLookup, collect_stop_ids


def discover(paths=None, prefix: str = __name__ + ".") -> tuple[ModelFamily, ...]:
    """Every :class:`ModelFamily` defined at the top of a module under ``paths`` (this
    package's folder), each once, in :attr:`~ModelFamily.recognise_order`.

    Args:
        paths: Folders to look in (``__path__`` of this package by default).
        prefix: The dotted name their modules import under.

    Raises:
        ValueError: when two families share a name or a detected variant.
    """
    found: dict[int, ModelFamily] = {}
    for module in pkgutil.iter_modules(paths if paths is not None else __path__, prefix):
        for value in vars(importlib.import_module(module.name)).values():
            if isinstance(value, ModelFamily):
                found[id(value)] = value
    families = sorted(found.values(), key=lambda family: family.recognise_order)
    seen: dict[str, str] = {}
    for family in families:
        for variant in family.variants:
            if seen.setdefault(variant, family.name) != family.name:
                raise ValueError(f"{variant!r} is a variant of both {seen[variant]} and {family.name}.")
    return tuple(families)


#: Every family, in the order their recognisers are tried (:attr:`ModelFamily.recognise_order`:
#: the specific before the general, the generic one last).
FAMILIES: tuple[ModelFamily, ...] = discover()
#: The family that takes what no other recognises.
GENERIC = FAMILIES[-1]

_BY_VARIANT = {variant: family for family in FAMILIES for variant in family.variants}

__all__ = [
    "FAMILIES",
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
    first = family_for_model_id(model_id).tool_dialect or get_family("glm4").tool_dialect
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
