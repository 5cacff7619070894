"""Any other chat model: its own chat template, common end-of-turn tokens.

The fallback of the registry: a Hugging Face folder with a ``model_type`` or
``architectures`` (``generic-hf``), a GGUF file with a ``tokenizer.chat_template``
(``gguf``), a hub id, the embedded SmolLM2 model, a remote server's model.
Defaults: the SmolLM2-135M-Instruct model card (temperature 0.2, top_p 0.9).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from glmdesk.core.settings import SamplingParams
from glmdesk.engine.families.base import ModelFamily
from glmdesk.engine.families.files import ROLE_END_TOKENS
from glmdesk.engine.families.glm4 import chat_template_format

#: End-of-turn token texts of common chat templates (ChatML's ``<|im_end|>``, Llama 3's
#: ``<|eot_id|>``, Phi-3's ``<|end|>``, GPT-2's ``<|endoftext|>``) and GLM's role tokens
#: that end a reply whenever the model's vocabulary has them.
END_TOKENS = ("<|im_end|>", "<|eot_id|>", "<|end|>", *ROLE_END_TOKENS)


def _recognise(config: Mapping[str, Any], _folder: Path) -> str | None:
    return "generic-hf" if config.get("model_type") or config.get("architectures") else None


def _recognise_gguf(_architecture: str, _lookup, _meta) -> str | None:
    return "gguf"


GENERIC = ModelFamily(
    name="generic",
    title="chat-template model",
    variants=("generic", "generic-hf", "gguf", "hub", "embedded", "remote"),
    sampling_defaults=SamplingParams(temperature=0.2, top_p=0.9, max_new_tokens=512),
    end_tokens=END_TOKENS,
    recognise=_recognise,
    recognise_gguf=_recognise_gguf,
    make_format=chat_template_format,
)
