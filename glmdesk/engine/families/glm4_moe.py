"""GLM-4.5, GLM-4.5-Air, GLM-4.6 and GLM-4.7 (``Glm4MoeForCausalLM``, ``model_type`` ``glm4_moe``).

Mixture-of-experts models prompted by the folder's own chat template with tools,
reasoning and ``enable_thinking`` (:class:`~glmdesk.engine.glm45_format.Glm45Format`);
they reason in ``<think>...</think>`` first and call tools in XML
(``<tool_call>name<arg_key>..</arg_key><arg_value>..</arg_value></tool_call>``), read
by :class:`~glmdesk.engine.glm45_format.XmlToolFilter`. GLM-4.7's template keeps
earlier reasoning across tool turns; that is the template's choice, rendered as is.

Sources: the zai-org/GLM-4.5 and GLM-4.6 model cards (``architectures``
``Glm4MoeForCausalLM``; ``generation_config.json`` eos 151329, 151336, 151338, i.e.
``<|endoftext|>``, ``<|user|>``, ``<|observation|>``); the sampling defaults are the
temperature 0.6 and top_p 0.95 given for GLM-4.5 (GLM-4.6/4.7's cards suggest temperature
1.0; one family, one default for now); llama.cpp's GGUF architecture name ``glm4moe``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from glmdesk.core.parts import ThinkMarkers
from glmdesk.core.settings import SamplingParams
from glmdesk.engine.families.base import GgufMeta, ModelFamily, TokenLookup
from glmdesk.engine.families.files import ROLE_END_TOKENS

THINK = ThinkMarkers("<think>", "</think>")


def _recognise(config: Mapping[str, Any], _folder: Path) -> str | None:
    if config.get("model_type") == "glm4_moe" or "Glm4MoeForCausalLM" in (config.get("architectures") or ()):
        return "glm4-moe"
    return None


def _recognise_gguf(architecture: str, _lookup: TokenLookup, _meta: GgufMeta) -> str | None:
    return "glm4-moe" if architecture == "glm4moe" else None


def glm45_format(family: ModelFamily, tokenizer, eos_ids: tuple[int, ...]):
    """GLM-4.5's prompt format (:class:`~glmdesk.engine.glm45_format.Glm45Format`) over
    ``tokenizer``'s chat template, stopping on ``eos_ids``, the tokenizer's eos and
    ``family``'s end tokens, with ``family``'s think markers.

    Raises:
        ValueError: when the tokenizer has no chat template.
    """
    from glmdesk.engine.glm45_format import Glm45Format
    from glmdesk.engine.stop_ids import token_lookup

    stops = family.stop_ids((*eos_ids, tokenizer.eos_token_id), token_lookup(tokenizer))
    return Glm45Format(tokenizer, stops, family.reasoning or THINK)


GLM4_MOE = ModelFamily(
    name="glm4-moe",
    title="GLM-4.5/4.6/4.7",
    variants=("glm4-moe",),
    sampling_defaults=SamplingParams(temperature=0.6, top_p=0.95, max_new_tokens=4096),
    end_tokens=ROLE_END_TOKENS,
    tool_dialect="glm45",
    reasoning=THINK,
    chat_template=True,
    model_id_markers=("glm-4.5", "glm-4.6", "glm-4.7", "glm4.5", "glm4.6", "glm4.7"),
    recognise=_recognise,
    recognise_gguf=_recognise_gguf,
    make_format=glm45_format,
)
