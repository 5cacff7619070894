"""ChatGLM3-6B (-32K, -128K): role tokens, ``tool_call(...)`` calls, ``<|observation|>``.

Recognised from a THUDM-layout ``config.json`` whose sentencepiece tokenizer files
mention the role tokens (else ``_name_or_path``, else ``rope_ratio >= 50``); ``-32k``
when ``rope_ratio > 1``. In a GGUF: architecture ``chatglm``/``glm4`` with the role
tokens and ``sop``. Sources: THUDM/chatglm3-6b ``tokenization_chatglm.py``
(``build_chat_input``), ``generation_config.json`` (eos 2, ``<|user|>``,
``<|observation|>``), basic_demo (top_p 0.8, temperature 0.8).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from glmdesk.core.settings import SamplingParams
from glmdesk.engine.families.base import GgufMeta, ModelFamily, TokenLookup
from glmdesk.engine.families.files import ROLE_END_TOKENS, chatglm_generation, has_role_tokens, rope_ratio


def _recognise(config: Mapping[str, Any], folder: Path) -> str | None:
    if chatglm_generation(config, folder) != "chatglm3":
        return None
    return "chatglm3-32k" if rope_ratio(config) > 1.0 else "chatglm3"


def _recognise_gguf(architecture: str, lookup: TokenLookup, _meta: GgufMeta) -> str | None:
    if architecture not in ("chatglm", "glm4") or lookup("<sop>") is not None:
        return None
    if lookup("[gMASK]") is None or lookup("sop") is None:
        return None
    return "chatglm3" if has_role_tokens(lookup) else None


def _format(_family: ModelFamily, tokenizer, eos_ids: tuple[int, ...]):
    from glmdesk.engine.formats.chatglm_formats import ChatGLM3Format

    return ChatGLM3Format(tokenizer, extra_stop_ids=frozenset(eos_ids))


CHATGLM3 = ModelFamily(
    name="chatglm3",
    title="ChatGLM3-6B",
    variants=("chatglm3", "chatglm3-32k"),
    sampling_defaults=SamplingParams(temperature=0.8, top_p=0.8, max_new_tokens=2048),
    end_tokens=ROLE_END_TOKENS,
    tool_dialect="chatglm3",
    converted=True,
    sentencepiece=True,
    model_id_markers=("chatglm3",),
    recognise=_recognise,
    recognise_gguf=_recognise_gguf,
    make_format=_format,
)
