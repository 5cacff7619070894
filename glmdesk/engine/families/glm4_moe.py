"""GLM-4.5, GLM-4.5-Air, GLM-4.6 and GLM-4.7 (``Glm4MoeForCausalLM``, ``model_type`` ``glm4_moe``).

Mixture-of-experts models prompted by the folder's own chat template with tools,
reasoning and ``enable_thinking`` (:class:`~glmdesk.engine.formats.glm45_format.Glm45Format`);
they reason in ``<think>...</think>`` first and call tools in XML
(``<tool_call>name<arg_key>..</arg_key><arg_value>..</arg_value></tool_call>``), read
by :class:`~glmdesk.engine.formats.glm45_format.XmlToolFilter`. GLM-4.7's template keeps
earlier reasoning across tool turns; that is the template's choice, rendered as is.

Sources: the zai-org/GLM-4.5 and GLM-4.6 model cards (``architectures``
``Glm4MoeForCausalLM``; ``generation_config.json`` eos 151329, 151336, 151338, i.e.
``<|endoftext|>``, ``<|user|>``, ``<|observation|>``); llama.cpp's GGUF architecture name
``glm4moe``.

Sampling defaults (checked against Z.ai's published settings; the models'
``generation_config.json`` files could not be read here, no file is downloaded): GLM-4.5/4.5-Air temperature 0.6, top_p 0.95 (Z.ai's
API guide, docs.z.ai/guides/develop/openai/python, whose defaults are GLM-4.5's);
GLM-4.6 and GLM-4.7 temperature 1.0, top_p 0.95 (Z.ai's "Migrate to GLM-4.6" guide,
docs.bigmodel.cn/cn/guide/start/migrate-to-glm-4.6; the GLM-4.7 model card's default
settings). The two are told apart by ``max_position_embeddings`` (:data:`GLM45_CONTEXT`),
in a GGUF ``glm4moe.context_length``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from glmdesk.core.parts import ThinkMarkers
from glmdesk.core.settings import SamplingParams
from glmdesk.engine.families.base import GgufMeta, ModelFamily, TokenLookup, token_lookup
from glmdesk.engine.families.files import ROLE_END_TOKENS

THINK = ThinkMarkers("<think>", "</think>")


#: GLM-4.5 and GLM-4.5-Air have a 128K context (``max_position_embeddings`` 131072);
#: GLM-4.6 and GLM-4.7 a 200K one (202752), the one config field that tells them apart.
GLM45_CONTEXT = 131072


def _recognise(config: Mapping[str, Any], _folder: Path) -> str | None:
    if config.get("model_type") == "glm4_moe" or "Glm4MoeForCausalLM" in (config.get("architectures") or ()):
        longer = int(config.get("max_position_embeddings") or 0) > GLM45_CONTEXT
        return "glm4.6-moe" if longer else "glm4-moe"
    return None


def _recognise_gguf(architecture: str, _lookup: TokenLookup, meta: GgufMeta) -> str | None:
    if architecture != "glm4moe":
        return None
    context = meta("glm4moe.context_length")  # the converted config's max_position_embeddings
    return "glm4.6-moe" if isinstance(context, int) and context > GLM45_CONTEXT else "glm4-moe"


def glm45_format(family: ModelFamily, tokenizer, eos_ids: tuple[int, ...]):
    """GLM-4.5's prompt format (:class:`~glmdesk.engine.formats.glm45_format.Glm45Format`) over
    ``tokenizer``'s chat template, stopping on ``eos_ids``, the tokenizer's eos and
    ``family``'s end tokens, with ``family``'s think markers.

    Raises:
        ValueError: when the tokenizer has no chat template.
    """
    from glmdesk.engine.formats.glm45_format import Glm45Format

    stops = family.stop_ids((*eos_ids, tokenizer.eos_token_id), token_lookup(tokenizer))
    return Glm45Format(tokenizer, stops, family.reasoning or THINK)


GLM4_MOE = ModelFamily(
    name="glm4-moe",
    title="GLM-4.5/4.6/4.7",
    variants=("glm4-moe", "glm4.6-moe"),
    sampling_defaults=SamplingParams(temperature=0.6, top_p=0.95, max_new_tokens=4096),
    variant_defaults=(("glm4.6-moe", SamplingParams(temperature=1.0, top_p=0.95, max_new_tokens=4096)),),
    end_tokens=ROLE_END_TOKENS,
    tool_dialect="glm45",
    reasoning=THINK,
    chat_template=True,
    model_id_markers=("glm-4.5", "glm-4.6", "glm-4.7", "glm4.5", "glm4.6", "glm4.7"),
    recognise=_recognise,
    recognise_gguf=_recognise_gguf,
    make_format=glm45_format,
    thinking_switch=True,
)
