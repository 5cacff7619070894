"""Which prompt format a chat-template model speaks, read from its chat template.

A checkpoint's ``model_type`` (or a GGUF's ``general.architecture``) says which network
it is; its chat template says how it was taught to talk. They disagree in real
folders: a dense GLM-4-0414 fine-tuned on GLM-4.6's template (merges and community
fine-tunes ship such folders) reasons in ``<think>`` and calls tools in GLM-4.5's XML.
As llama.cpp's ``common_chat_templates_init`` and SGLang's "auto" chat format do, the
format is read from the template's own text, and the network's family only decides
the network.

Three formats exist for the families prompted by a chat template
(:data:`CHAT_FORMATS`):

- ``glm45``: GLM-4.5/4.6/4.7's, the template writes ``<tool_call>`` with ``<arg_key>``
  and ``<arg_value>`` (XML calls, reasoning in ``<think>``, ``enable_thinking``):
  :class:`~glmdesk.engine.formats.glm45_format.Glm45Format`;
- ``think``: GLM-Z1's, the template writes ``<think>``/``</think>`` and no XML calls
  (reasoning apart, no tools);
- ``plain``: the template as it is (GLM-4-0414, GLM-4-9B-chat-hf, any other model).

Only a GLM template (one that writes GLM's ``[gMASK]`` prefix or its ``<|user|>`` and
``<|assistant|>`` role tokens) is read this way: another model's ``<think>`` or ``<tool_call>`` (Qwen's JSON
calls) is not GLM's, and such a model keeps the generic format. Families with a format
of their own (ChatGLM2/3, GLM-4-9B's role tokens, the vision models) are not read.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from glmdesk.core.errors import ErrorInfo, GlmdeskError
from glmdesk.core.settings import CHAT_FORMATS

__all__ = [
    "CHAT_FORMATS",
    "FormatChoice",
    "choose_format",
    "is_glm_template",
    "read_template_file",
    "template_format",
]
#: The reason of a format the user chose.
CHOSEN = "chosen when the model was opened"
#: Each format in words (English; the window translates its own labels).
FORMAT_TITLES = {
    "glm45": "GLM-4.5/4.6/4.7 (reasoning, XML tool calls)",
    "think": "GLM-Z1 (reasoning, no tool calls)",
    "plain": "chat template only",
}
#: The format each template-prompted family speaks with its own template.
FAMILY_FORMATS = {
    "glm4-moe": "glm45",
    "glm4.6-moe": "glm45",
    "glm4-moe-lite": "glm45",
    "glm5": "glm45",
    "glm5-flash": "glm45",
    "glm-z1": "think",
    "glm4-0414": "plain",
    "glm4-hf": "plain",
    "generic": "plain",
    "generic-hf": "plain",
    "gguf": "plain",
    "hub": "plain",
    "embedded": "plain",
}
#: The family whose prompt format, tool dialect and reasoning a format is, for a
#: checkpoint whose own family speaks another (sampling defaults come with it).
FORMAT_FAMILIES = {"glm45": "glm4-moe", "think": "glm-z1", "plain": "glm4-0414"}


@dataclass(frozen=True)
class FormatChoice:
    """The prompt format a model is prompted in, and why.

    Attributes:
        family: The detected name whose format, tool dialect and reasoning are used
            (``ModelInfo.family``): the checkpoint's own, or the template's format's.
        chat_format: One of :data:`CHAT_FORMATS` but ``auto``; ``""`` for a family with
            a format of its own (not read from a template).
        reason: Why, in English (one sentence's end: "its chat template writes ..."); ``""``
            for a family with a format of its own, and for a template that is not GLM's
            (prompted by it as it is).
        checkpoint: The checkpoint's own family in words, when the format is not its
            family's (read from the template, or chosen); ``""`` when it is.
    """

    family: str
    chat_format: str
    reason: str
    checkpoint: str = ""

    def note(self) -> ErrorInfo | None:
        """The load note (kind ``chat_format``) when the format is not the checkpoint's
        own family's: params ``format``, ``checkpoint``, ``chosen``; else ``None``."""
        if not self.checkpoint:
            return None
        chosen = self.reason.startswith(CHOSEN)
        message = (
            f"The prompt format is {self.title}, as chosen, though the checkpoint is {self.checkpoint}."
            if chosen
            else f"The chat template is {self.title}, so this {self.checkpoint} checkpoint is prompted "
            "that way (another format can be chosen when opening the model)."
        )
        params = {"format": self.chat_format, "checkpoint": self.checkpoint, "chosen": chosen}
        return ErrorInfo("chat_format", message, params)

    @property
    def title(self) -> str:
        """The format in words (English)."""
        return FORMAT_TITLES.get(self.chat_format, "the family's own format")


def format_sentence(info) -> str:
    """A loaded model's format and why, in English (the CLI's note): "prompt format:
    GLM-4.5/4.6/4.7 (reasoning, XML tool calls), as its chat template writes ..."."""
    title = FORMAT_TITLES.get(info.chat_format, "the family's own format")
    return f"prompt format: {title}; {info.format_reason}."


def is_glm_template(template: str) -> bool:
    """Whether a chat template is GLM's: it writes GLM's ``[gMASK]`` prefix, or its role
    tokens ``<|user|>`` and ``<|assistant|>``."""
    return "[gMASK]" in template or ("<|user|>" in template and "<|assistant|>" in template)


def template_format(template: str) -> tuple[str, str]:
    """``(format, reason)`` read from a GLM chat template's text (see the module docstring)."""
    if "<arg_key>" in template and "<tool_call>" in template:
        switch = " and switches thinking with enable_thinking" if "enable_thinking" in template else ""
        return "glm45", f"its chat template writes tool calls with <arg_key>/<arg_value>{switch}"
    if "</think>" in template or "<think>" in template:
        return "think", "its chat template writes reasoning in <think>…</think> and no XML tool calls"
    return "plain", "its chat template has no reasoning markers and no XML tool calls"


def choose_format(family: str, template: str | None, chosen: str = "auto") -> FormatChoice:
    """The format a model of the detected name ``family`` is prompted in.

    Args:
        family: The checkpoint's detected name (from ``model_type`` or the GGUF
            architecture and vocabulary).
        template: Its chat template's text (the folder's, the GGUF's, or the one the
            user picked); ``None`` or ``""`` when it has none.
        chosen: The user's choice (:data:`CHAT_FORMATS`); ``auto`` reads the template.

    Returns:
        The :class:`FormatChoice`: the checkpoint's own family when the template speaks
        its format, else the family of the template's format.

    Raises:
        ValueError: for a choice not in :data:`CHAT_FORMATS`.
    """
    if chosen not in CHAT_FORMATS:
        raise ValueError(f"Unknown chat format {chosen!r}; choose one of {', '.join(CHAT_FORMATS)}.")
    own = FAMILY_FORMATS.get(family)
    if own is None:
        return FormatChoice(family, "", "")  # its family's own format, not read from a template
    if chosen != "auto":
        kind, reason = chosen, CHOSEN
    elif not template or not is_glm_template(template):
        return FormatChoice(family, own, "")  # nothing GLM's to read: the template as it is
    else:
        kind, reason = template_format(template)
    if kind == own:
        return FormatChoice(family, kind, reason)
    target = FORMAT_FAMILIES[kind]
    if kind == "plain" and template and not is_glm_template(template):
        target = "generic"
    from glmdesk.engine.families import get_family

    title = get_family(family).title
    named = title if title[:1].isupper() else f"a {title}"  # "GLM-Z1-0414", "a chat-template model"
    return FormatChoice(target, kind, f"{reason}, though the checkpoint is {named}", title)


def read_template_file(path: str) -> str:
    """The text of a chat template file the user picked (a ``.jinja`` file, or a
    ``tokenizer_config.json`` holding ``chat_template``).

    Raises:
        GlmdeskError: ``not_a_model`` when it cannot be read, holds no template, or is not
            valid Jinja (the sentence names the line).
    """
    file = Path(path).expanduser()
    try:
        text = file.read_text(encoding="utf-8")
        if file.suffix.lower() == ".json":
            text = json.loads(text).get("chat_template") or ""
    except (OSError, UnicodeDecodeError, ValueError, AttributeError) as exc:
        raise GlmdeskError(
            "not_a_model", f"The chat template file {file} could not be read ({exc}).", path=str(file)
        ) from exc
    if not isinstance(text, str) or not text.strip():
        raise GlmdeskError("not_a_model", f"The file {file} holds no chat template.", path=str(file))
    from jinja2 import Environment
    from jinja2.exceptions import TemplateSyntaxError

    try:  # said now, not at the first answer
        Environment(extensions=["jinja2.ext.loopcontrols"]).parse(text)
    except TemplateSyntaxError as exc:
        raise GlmdeskError(
            "not_a_model",
            f"The chat template file {file} is not a valid Jinja template: {exc.message} (line {exc.lineno}).",
            path=str(file),
        ) from exc
    return text


def model_template(model: str) -> str | None:
    """The chat template a local model ships: a folder's (``chat_template.jinja`` or
    ``tokenizer_config.json``), a GGUF file's ``tokenizer.chat_template`` (its metadata
    only is read); ``""`` when it has none; ``None`` when ``model`` is neither (a hub id,
    nothing there).

    Raises:
        GlmdeskError: for a GGUF file that cannot be read (see ``read_gguf_header``).
    """
    from glmdesk.engine.families.files import chat_template_text

    path = Path(model).expanduser()
    if path.is_file() and path.suffix.lower() == ".gguf":
        from glmdesk.engine.files.gguf_header import read_gguf_header

        template = read_gguf_header(path).get("tokenizer.chat_template")
        return template if isinstance(template, str) else ""
    return chat_template_text(path) if path.is_dir() else None
