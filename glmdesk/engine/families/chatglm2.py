"""ChatGLM2-6B (-32K): ``[Round n]`` rounds as plain text, stop on eos.

Recognised from a THUDM-layout ``config.json`` (``model_type`` ``chatglm`` or the
``ChatGLM*`` classes) with a sentencepiece tokenizer that has no role tokens; ``-32k``
when ``rope_ratio > 1``. In a GGUF: architecture ``chatglm`` with ``[gMASK]`` and
``sop`` but no role tokens. Sources: THUDM/chatglm2-6b(-32k) ``config.json``,
``tokenization_chatglm.py::build_prompt``, ``web_demo.py`` (top_p 0.8, temperature 0.95).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from glmdesk.core.settings import SamplingParams
from glmdesk.engine.families.base import GgufMeta, ModelFamily, TokenLookup
from glmdesk.engine.families.files import chatglm_generation, has_role_tokens, rope_ratio


def _recognise(config: Mapping[str, Any], folder: Path) -> str | None:
    if chatglm_generation(config, folder) != "chatglm2":
        return None
    return "chatglm2-32k" if rope_ratio(config) > 1.0 else "chatglm2"


def _recognise_gguf(architecture: str, lookup: TokenLookup, _meta: GgufMeta) -> str | None:
    if architecture != "chatglm" or lookup("[gMASK]") is None or lookup("sop") is None:
        return None
    return None if has_role_tokens(lookup) else "chatglm2"


def _format(_family: ModelFamily, tokenizer, _eos_ids: tuple[int, ...]):
    from glmdesk.engine.formats.chatglm_formats import ChatGLM2Format

    return ChatGLM2Format(tokenizer)


CHATGLM2 = ModelFamily(
    name="chatglm2",
    title="ChatGLM2-6B",
    variants=("chatglm2", "chatglm2-32k"),
    sampling_defaults=SamplingParams(temperature=0.95, top_p=0.8, max_new_tokens=2048),
    converted=True,
    sentencepiece=True,
    model_id_markers=("chatglm2",),
    recognise=_recognise,
    recognise_gguf=_recognise_gguf,
    make_format=_format,
)
