"""Structured errors that reach the user.

The engine raises :class:`GlmdeskError` with a machine-readable ``kind`` and its
parameters; the UI words the sentence in the user's language from those two
(see ``glmdesk/ui/common/messages.py``). ``message`` is the English sentence used by the
terminal front end and in logs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: Every error kind the engine may report. The UI has a sentence for each.
ERROR_KINDS = (
    "model_not_found",  # path: str
    "not_a_model",  # path: str
    "corrupt_weights",  # path: str, file: str, detail: str
    "offline",  # model: str
    "unsupported_checkpoint",  # path: str, reason: str
    "remote_code_required",  # path: str
    "quantization_unavailable",  # quantization: str, reason: str
    "precision_unavailable",  # precision: str, reason: str
    "out_of_memory",  # device: str, stage: str
    "prompt_too_long",  # tokens: int, limit: int (the message's own tokens, the room left for it)
    "system_prompt_too_long",  # tokens: int, limit: int
    "invalid_setting",  # name: str, value: str, reason: str
    "load_cancelled",
    "generation_failed",  # detail: str
    "load_failed",  # detail: str
    "option_unavailable",  # option: str, reason: str (glmdesk.engine.backends.option_reasons())
    "tool_call_invalid",  # reason: str (English)
    "tool_rounds_exceeded",  # rounds: int (not in the sentence)
    "interpreter_failed",  # detail: str
    "llamacpp_unbuildable",  # reason: turned_off|packaged|no_pip|no_compiler
    "llamacpp_build_failed",  # detail: str (the compiler's or pip's error line), output: str
    "build_cancelled",
    "llamacpp_untrusted",  # build: str, outcome: crashed|wrong_answer|failed|timeout, signal: str, answer: str
    "not_gguf",  # path: str (folder), file: str, head: str (the file's first bytes as text)
    "gguf_unsupported",  # path: str (folder), file: str, architecture: str, engine: str,
    #   tensor_types: str and llamacpp: bool when tensor types are what the engine cannot read
    "lfs_pointer",  # path: str (folder), file: str
    "history_disk_full",  # path: str, detail: str
    "history_damaged",  # path: str, detail: str
    "history_unavailable",  # path: str, detail: str
    "import_tools_invalid",  # title: str, problems: str (English), kept: bool (functions kept as written)
    # A remote OpenAI-compatible server (vLLM, SGLang, glmdesk serve):
    "server_unreachable",  # url: str, reason: refused|dns|tls|timeout|other, detail: str
    "server_auth_failed",  # url: str
    "remote_model_not_found",  # model: str, url: str
    "server_busy",  # url: str, status: int
    "server_error",  # url: str, status: int, detail: str
    "connection_lost",  # url: str, detail: str
    "server_stalled",  # url: str, seconds: float
    "invalid_image",  # name: str (file name or "image"), reason: str (English)
    "vision_unavailable",  # model: str, engine: str (images sent to a model or engine without vision)
)


@dataclass(frozen=True)
class ErrorInfo:
    """A user-facing error as plain values.

    Attributes:
        kind: One of :data:`ERROR_KINDS`.
        message: The English sentence.
        params: Parameters the UI uses to word the sentence (strings and numbers).
    """

    kind: str
    message: str
    params: dict[str, Any] = field(default_factory=dict)


class GlmdeskError(Exception):
    """An error with a sentence for the user.

    Args:
        kind: One of :data:`ERROR_KINDS`.
        message: The English sentence shown by the terminal front end.
        **params: Values the UI needs to word the sentence in another language.

    Raises:
        ValueError: if ``kind`` is not one of :data:`ERROR_KINDS`.
    """

    def __init__(self, kind: str, message: str, **params: Any) -> None:
        if kind not in ERROR_KINDS:
            raise ValueError(f"unknown error kind {kind!r}")
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.params = params

    @property
    def info(self) -> ErrorInfo:
        """This error as a frozen :class:`ErrorInfo`."""
        return ErrorInfo(self.kind, self.message, dict(self.params))


def corrupt_weights(file, sentence: str, detail: object) -> GlmdeskError:
    """A ``corrupt_weights`` error naming ``file`` and its folder.

    Args:
        file: The damaged file (a :class:`pathlib.Path`).
        sentence: The English sentence.
        detail: What the reader reported (an exception or text).
    """
    return GlmdeskError(
        "corrupt_weights", sentence, path=str(file.parent), file=file.name, detail=str(detail)
    )
