"""Original THUDM ChatGLM2/3 and GLM-4 checkpoints, run on transformers' ``GlmForCausalLM``.

No code from a model folder runs here: the weights are converted once (see
:mod:`.convert`), the sentencepiece tokenizer and the prompt formats are ours.
"""

from __future__ import annotations

from glmdesk.engine.chatglm.convert import CONVERTER_VERSION, convert_checkpoint
from glmdesk.engine.chatglm.detect import FAMILIES, detect_family, is_original_checkpoint
from glmdesk.engine.chatglm.prepare import PreparedCheckpoint, converted_folder, prepare_checkpoint
from glmdesk.engine.chatglm.source_checks import check_convertible
from glmdesk.engine.formats.chatglm_formats import ChatGLM2Format, ChatGLM3Format, GLM4Format
from glmdesk.engine.formats.chatglm_tokenizer import SPECIAL_TOKENS, ChatGLMTokenizer

__all__ = [
    "CONVERTER_VERSION",
    "FAMILIES",
    "SPECIAL_TOKENS",
    "ChatGLM2Format",
    "ChatGLM3Format",
    "ChatGLMTokenizer",
    "GLM4Format",
    "PreparedCheckpoint",
    "check_convertible",
    "convert_checkpoint",
    "converted_folder",
    "detect_family",
    "is_original_checkpoint",
    "prepare_checkpoint",
]
