"""GLM-4-9B(-chat): THUDM's original layout and the transformers-native ``-hf`` sibling.

- ``glm4``: a THUDM-layout ``config.json`` whose folder declares the tiktoken tokenizer
  (or, declaring none, has 100K+ ids); converted once, prompted with ChatGLM3's
  role-token layout on GLM-4's ids, JSON tool calls. In a GGUF: architecture
  ``chatglm``/``glm4`` with the role tokens and ``<sop>``.
- ``glm4-hf``: ``model_type`` ``glm`` (glm-4-9b-chat-hf), prompted by its own chat
  template.

Sources: THUDM/glm-4-9b-chat ``tokenization_chatglm.py::apply_chat_template``,
``generation_config.json`` (eos 151329, 151336, 151338); THUDM/GLM-4 basic_demo
(temperature 0.6, top_p 0.8).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from glmdesk.core.settings import SamplingParams
from glmdesk.engine.families.base import GgufMeta, ModelFamily, TokenLookup, token_lookup
from glmdesk.engine.families.files import ROLE_END_TOKENS, chatglm_generation, has_role_tokens

GLM4_DEFAULTS = SamplingParams(temperature=0.6, top_p=0.8, max_new_tokens=2048)
#: The GLM-4 tokens its prompt format needs.
GLM4_FORMAT_TOKENS = (
    "<|endoftext|>",
    "[gMASK]",
    "<sop>",
    "<|system|>",
    "<|user|>",
    "<|assistant|>",
    "<|observation|>",
)


def _recognise(config: Mapping[str, Any], folder: Path) -> str | None:
    return "glm4" if chatglm_generation(config, folder) == "glm4" else None


def _recognise_gguf(architecture: str, lookup: TokenLookup, _meta: GgufMeta) -> str | None:
    if architecture not in ("chatglm", "glm4") or lookup("<sop>") is None or lookup("[gMASK]") is None:
        return None
    return "glm4" if has_role_tokens(lookup) else None


def _format(_family: ModelFamily, tokenizer, eos_ids: tuple[int, ...]):
    from glmdesk.engine.formats.chatglm_formats import GLM4Format

    ids = {name: tokenizer.special_id(name) for name in GLM4_FORMAT_TOKENS}
    return GLM4Format(tokenizer.encode, ids, frozenset(eos_ids))


def _recognise_hf(config: Mapping[str, Any], _folder: Path) -> str | None:
    return "glm4-hf" if config.get("model_type") == "glm" else None


def chat_template_format(family: ModelFamily, tokenizer, eos_ids: tuple[int, ...]):
    """The prompt format of a family prompted by its folder's own chat template: the
    tokenizer's ``apply_chat_template``, stops from ``eos_ids``, the tokenizer's eos and
    ``family``'s end tokens, and the family's think markers.

    Raises:
        ValueError: when the tokenizer has no chat template.
    """
    from glmdesk.engine.formats.prompt import ChatTemplateFormat

    stops = family.stop_ids((*eos_ids, tokenizer.eos_token_id), token_lookup(tokenizer))
    return ChatTemplateFormat(tokenizer, stops, family.reasoning)


GLM4 = ModelFamily(
    name="glm4",
    title="GLM-4-9B",
    variants=("glm4",),
    sampling_defaults=GLM4_DEFAULTS,
    end_tokens=ROLE_END_TOKENS,
    tool_dialect="glm4",
    converted=True,
    model_id_markers=("glm-4", "glm4"),
    recognise=_recognise,
    recognise_gguf=_recognise_gguf,
    make_format=_format,
)

GLM4_HF = ModelFamily(
    name="glm4-hf",
    title="GLM-4-9B (transformers layout)",
    variants=("glm4-hf",),
    sampling_defaults=GLM4_DEFAULTS,
    end_tokens=ROLE_END_TOKENS,
    recognise=_recognise_hf,
    make_format=chat_template_format,
)
