"""The :class:`ModelFamily` object: everything glmdesk knows about one model family.

One module per family under :mod:`glmdesk.engine.families` declares one (or a few
close siblings) of these, and the registry (``families/__init__.py``) lists them in
the order they are tried. The loaders, the stop-id rule, llama.cpp's vocabulary, the
remote backend, the CLI and the window ask the registry; none of them names a family.

The shape follows mlx-lm's ``TokenizerWrapper`` (one object knows a model's tokens
and markers) and vLLM's reasoning and tool-parser registries (parsers keyed by family).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from glmdesk.core.parts import ThinkMarkers
from glmdesk.core.settings import SamplingParams

#: A vocabulary lookup: token text -> id, or ``None`` when the vocabulary lacks it.
TokenLookup = Callable[[str], int | None]
#: ``recognise(config, folder) -> variant name or None``: the family's test of a Hugging
#: Face folder (its parsed ``config.json`` and the folder, for tokenizer files).
Recogniser = Callable[[Mapping[str, Any], Path], str | None]
#: A GGUF file's metadata: key (``tokenizer.chat_template``, ``general.name``) -> its value,
#: or ``None`` when the file has none (``GGUFHeader.get``).
GgufMeta = Callable[[str], Any]
#: ``recognise_gguf(architecture, lookup, meta) -> variant name or None``: the family's test
#: of a GGUF file (``general.architecture``, its vocabulary and its metadata).
GgufRecogniser = Callable[[str, TokenLookup, GgufMeta], str | None]
#: ``make_format(family, tokenizer, eos_ids) -> PromptFormat``: the family's prompt format
#: over a loaded tokenizer (see :meth:`ModelFamily.prompt_format`).
FormatFactory = Callable[["ModelFamily", Any, tuple[int, ...]], Any]


def _never(*_args) -> None:
    return None


def collect_stop_ids(
    end_tokens: Iterable[str], eos_ids: Iterable[int | None], lookup: TokenLookup
) -> frozenset[int]:
    """``eos_ids`` (``None`` skipped) plus the ids of ``end_tokens`` the vocabulary has.

    The one rule for which ids end a reply, whatever the backend: the model's
    end-of-sequence ids (config and generation config ``eos_token_id`` lists, the
    tokenizer's eos, llama.cpp's eos and eot) and the end-of-turn tokens its family
    declares (:attr:`ModelFamily.end_tokens`) that its vocabulary has: none for ChatGLM2
    (its rounds are plain text, caught by its reply filter); ``<|endoftext|>``,
    ``<|user|>`` and ``<|observation|>`` for ChatGLM3 and every GLM-4 (THUDM's
    ``generation_config.json`` eos lists); for other models the end-of-turn tokens of
    common chat templates. Every path (the chat-template formats, the ChatGLM formats,
    the converted folder's config, llama.cpp's vocabulary) passes its own vocabulary's
    ``lookup``, so a model gets the same ids whichever path loads it.
    """
    ids = {int(i) for i in eos_ids if i is not None}
    for name in end_tokens:
        token = lookup(name)
        if token is not None:
            ids.add(int(token))
    return frozenset(ids)


def eos_list(value) -> list[int]:
    """A config's ``eos_token_id`` (an id, a list of ids, or ``None``) as a list."""
    if isinstance(value, int):
        return [value]
    return [int(i) for i in value or [] if isinstance(i, int)]


def token_lookup(tokenizer) -> TokenLookup:
    """The cheapest lookup of single token texts in a tokenizer's vocabulary.

    A fast (Rust) tokenizer answers one name at a time: ``get_vocab()`` builds the
    whole vocabulary as a dict while holding the GIL (about 30 ms for 49K tokens,
    the window waiting). Others fall back to ``get_vocab``, then to glmdesk's own
    tokenizers' ``special_id`` (``KeyError`` meaning absent).
    """
    backend = getattr(tokenizer, "backend_tokenizer", None)
    lookup = getattr(backend, "token_to_id", None)
    if lookup is not None:
        return lookup
    if hasattr(tokenizer, "get_vocab"):
        return tokenizer.get_vocab().get
    special_id = getattr(tokenizer, "special_id", None)
    if special_id is None:
        return lambda _name: None

    def lookup_special(name: str) -> int | None:
        try:
            return special_id(name)
        except KeyError:
            return None

    return lookup_special


@dataclass(frozen=True)
class ModelFamily:
    """One model family.

    Attributes:
        name: The registry key (``chatglm3``, ``glm-z1``...).
        title: The family in words (``ChatGLM3-6B``).
        variants: The detected names it covers (``chatglm3``, ``chatglm3-32k``): what
            :func:`~glmdesk.engine.chatglm.detect.detect_family` returns and
            ``ModelInfo.family`` carries. The first is :attr:`name`.
        sampling_defaults: The published demo defaults (model card or official demo).
        variant_defaults: ``(variant, defaults)`` pairs for variants whose published
            defaults differ from :attr:`sampling_defaults` (GLM-4.6/4.7 beside GLM-4.5).
        end_tokens: Token texts that end a reply besides eos, used when the
            vocabulary has them (THUDM's ``generation_config.json`` eos lists).
        tool_dialect: How tools are offered and calls written (``chatglm3``: fenced
            ``tool_call(...)``; ``glm4``: JSON after the name line), or ``None``.
        reasoning: The reasoning block's markers (GLM-Z1), or ``None``.
        answer_markers: Texts it writes around its final answer that are never shown
            (GLM-4.1V-Thinking's ``<answer>``, ``</answer>``): what a served model sends.
        opens_reasoning: The family's own template writes the open marker (GLM-Z1's
            "enforced thinking"), so a served model's text starts inside the block (a
            local format tells from the template it has).
        chat_template: Prompted by the model's own chat template also in a GGUF (its
            format reads the file's ``tokenizer.chat_template``, GLM-4.5).
        converted: Original THUDM layout, converted once before loading.
        sentencepiece: Its tokenizer is glmdesk's sentencepiece ChatGLM tokenizer.
        model_id_markers: Lower-case pieces of a served model's id that name this
            family (remote servers; ``chatglm3`` in ``THUDM/chatglm3-6b``).
        recognise: The family's test of a Hugging Face folder (:data:`Recogniser`).
        recognise_gguf: The family's test of a GGUF file (:data:`GgufRecogniser`).
        make_format: Builds the prompt format (:data:`FormatFactory`), or ``None`` for
            a family glmdesk recognises but does not run.
        unsupported: Why glmdesk does not run it (a sentence's end), or ``""``.
        thinking_switch: Its template switches reasoning off (``enable_thinking``), so
            a server of such a model takes ``chat_template_kwargs`` for it.
    """

    name: str
    title: str
    variants: tuple[str, ...]
    sampling_defaults: SamplingParams
    end_tokens: tuple[str, ...] = ()
    tool_dialect: str | None = None
    reasoning: ThinkMarkers | None = None
    answer_markers: tuple[str, ...] = ()
    opens_reasoning: bool = False
    chat_template: bool = False
    converted: bool = False
    sentencepiece: bool = False
    model_id_markers: tuple[str, ...] = ()
    recognise: Recogniser = _never
    recognise_gguf: GgufRecogniser = _never
    make_format: FormatFactory | None = None
    unsupported: str = ""
    thinking_switch: bool = False
    variant_defaults: tuple[tuple[str, SamplingParams], ...] = ()

    def __post_init__(self) -> None:
        if not self.variants or self.variants[0] != self.name:
            raise ValueError(f"family {self.name!r}: its first variant must be its name")

    def stop_ids(self, eos_ids: Iterable[int | None], lookup: TokenLookup) -> frozenset[int]:
        """Every id that ends a reply: ``eos_ids`` plus :attr:`end_tokens` in the vocabulary."""
        return collect_stop_ids(self.end_tokens, eos_ids, lookup)

    def prompt_format(self, tokenizer, eos_ids: Iterable[int | None] = ()):
        """The family's :class:`~glmdesk.engine.formats.prompt.PromptFormat` over ``tokenizer``.

        Args:
            tokenizer: What the family's format reads: for the ChatGLM layouts an
                object with ``encode(text)`` (plain text) and ``special_id(name)``
                (``KeyError`` when absent; ChatGLM2/3 also ``eos_token_id``); for
                chat-template families a tokenizer with a ``chat_template``.
            eos_ids: End-of-sequence ids from the config, generation config or GGUF.

        Raises:
            ValueError: for a family glmdesk does not run, or a tokenizer without
                what the format needs (no chat template).
        """
        if self.make_format is None:
            raise ValueError(f"glmdesk does not run {self.title} models: {self.unsupported}")
        return self.make_format(self, tokenizer, tuple(i for i in eos_ids if i is not None))
