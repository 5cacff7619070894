"""llama.cpp's vocabulary as glmdesk's prompt formats and detokenizer need it.

- :class:`LlamaVocab`: ids <-> bytes with ``llama_tokenize`` / ``llama_token_to_piece``,
  special tokens looked up by their text.
- :class:`TemplateTokenizer`: what :class:`~glmdesk.engine.formats.prompt.ChatTemplateFormat`
  needs from a tokenizer (``chat_template``, ``apply_chat_template``, ``encode``), on
  llama.cpp's tokenizer and the GGUF's ``tokenizer.chat_template``, rendered by
  transformers' own Jinja renderer, so the prompt ids match the transformers path.
- :func:`prompt_format_for`: the registry's family's format: ChatGLM3 / GLM-4 GGUFs get
  glmdesk's role-token format (role tokens as ids, never typed text), ChatGLM2 its
  rounds, others their chat template.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence

from glmdesk.core.errors import GlmdeskError
from glmdesk.engine import families
from glmdesk.engine.formats.prompt import PromptFormat


class LlamaVocab:
    """A loaded model's vocabulary through llama.cpp.

    Args:
        lib: The ``llama_cpp`` module.
        model: The ``llama_model`` pointer.
    """

    def __init__(self, lib, model) -> None:
        self.lib = lib
        self.vocab = lib.llama_model_get_vocab(model)
        self.n_vocab = int(lib.llama_vocab_n_tokens(self.vocab))
        self._pieces: dict[int, bytes] = {}
        self._buf = ctypes.create_string_buffer(256)

    def _valid(self, token: int) -> int | None:
        return token if 0 <= token < self.n_vocab else None

    @property
    def eos(self) -> int | None:
        """End-of-sequence id (``tokenizer.ggml.eos_token_id``)."""
        return self._valid(int(self.lib.llama_vocab_eos(self.vocab)))

    @property
    def eot(self) -> int | None:
        """End-of-turn id (``tokenizer.ggml.eot_token_id`` or llama.cpp's guess)."""
        return self._valid(int(self.lib.llama_vocab_eot(self.vocab)))

    @property
    def bos(self) -> int | None:
        """Beginning-of-sequence id."""
        return self._valid(int(self.lib.llama_vocab_bos(self.vocab)))

    def text(self, token: int) -> str:
        """The token's text as stored in the GGUF (special tokens as written)."""
        return (self.lib.llama_vocab_get_text(self.vocab, token) or b"").decode("utf-8", "replace")

    def piece(self, token: int) -> bytes:
        """The bytes a token stands for in generated text (special tokens: none)."""
        cached = self._pieces.get(token)
        if cached is None:
            n = self.lib.llama_token_to_piece(self.vocab, token, self._buf, len(self._buf), 0, False)
            if n < 0:
                buf = ctypes.create_string_buffer(-n)
                n = self.lib.llama_token_to_piece(self.vocab, token, buf, len(buf), 0, False)
                cached = buf.raw[:n]
            else:
                cached = self._buf.raw[:n]
            self._pieces[token] = cached
        return cached

    def decode(self, ids: Sequence[int]) -> str:
        """Ids to text, special tokens skipped; an incomplete UTF-8 tail is U+FFFD
        (:class:`~glmdesk.engine.decode.detokenizer.IncrementalDetokenizer` holds it back)."""
        return b"".join(self.piece(int(i)) for i in ids).decode("utf-8", errors="replace")

    def encode(self, text: str, special: bool = False) -> list[int]:
        """Text to ids, never adding BOS/EOS.

        Args:
            text: The text.
            special: Recognise special-token text (``<|im_start|>``) as its id; off for
                anything a user typed.
        """
        data = text.encode("utf-8")
        if not data:
            return []
        size = len(data) + 8
        tokens = (self.lib.llama_token * size)()
        n = self.lib.llama_tokenize(self.vocab, data, len(data), tokens, size, False, special)
        if n < 0:
            size = -n
            tokens = (self.lib.llama_token * size)()
            n = self.lib.llama_tokenize(self.vocab, data, len(data), tokens, size, False, special)
        return list(tokens[:n])

    def special_id(self, name: str) -> int | None:
        """The id of the special token written ``name``, or ``None`` when the vocabulary
        has none (text that tokenizes into several pieces)."""
        ids = self.encode(name, special=True)
        if len(ids) == 1 and self.text(ids[0]) == name:
            return ids[0]
        return None

    def stop_ids(self, family: str = "gguf") -> frozenset[int]:
        """eos, eot and the family's end-of-turn tokens the vocabulary has (the one
        rule, :func:`glmdesk.engine.families.base.collect_stop_ids`)."""
        return families.get_family(family).stop_ids((self.eos, self.eot), self.special_id)


class TemplateTokenizer:
    """The tokenizer face :class:`ChatTemplateFormat` uses, over llama.cpp.

    Args:
        vocab: The vocabulary.
        chat_template: The GGUF's ``tokenizer.chat_template`` (Jinja).
    """

    def __init__(self, vocab: LlamaVocab, chat_template: str) -> None:
        self.vocab = vocab
        self.chat_template = chat_template
        self.eos_token_id = vocab.eos
        self._specials = {
            "bos_token": vocab.text(vocab.bos) if vocab.bos is not None else "",
            "eos_token": vocab.text(vocab.eos) if vocab.eos is not None else "",
        }

    unk_token_id = None

    def apply_chat_template(
        self, conversation, tokenize: bool = False, add_generation_prompt: bool = True, tools=None, **kwargs
    ):
        """Render the template (transformers' Jinja renderer, as ``apply_chat_template``;
        ``tools`` and other keywords such as ``enable_thinking`` go to the template)."""
        from transformers.utils.chat_template_utils import render_jinja_template

        rendered, _ = render_jinja_template(
            [conversation],
            tools=tools,
            chat_template=self.chat_template,
            add_generation_prompt=add_generation_prompt,
            **self._specials,
            **kwargs,
        )
        return rendered[0]

    def convert_tokens_to_ids(self, name: str) -> int | None:
        """The id of the special token ``name``, or ``None`` (as transformers' lookup)."""
        return self.vocab.special_id(name)

    def encode(self, text: str, add_special_tokens: bool = False, split_special_tokens: bool = False):
        """Text to ids; ``split_special_tokens`` keeps special-token text as plain text."""
        return self.vocab.encode(text, special=not split_special_tokens)

    def special_id(self, name: str) -> int:
        """The id of the special token ``name`` (for the stop-id rule).

        Raises:
            KeyError: when the vocabulary has none.
        """
        token = self.vocab.special_id(name)
        if token is None:
            raise KeyError(name)
        return token


class _SpecialTokens:
    """What the ChatGLM-layout formats need (``special_id``, ``encode``, ``eos_token_id``)."""

    def __init__(self, vocab: LlamaVocab) -> None:
        self._vocab = vocab
        self.eos_token_id = vocab.eos

    def special_id(self, name: str) -> int:
        token = self._vocab.special_id(name)
        if token is None:
            raise KeyError(name)
        return token

    def encode(self, text: str) -> list[int]:
        return self._vocab.encode(text)


def prompt_format_for(vocab: LlamaVocab, header, name: str) -> tuple[PromptFormat, str]:
    """The prompt format of a GGUF model and its family name (:func:`gguf_format` with
    the format read from the file's own template)."""
    fmt, choice = gguf_format(vocab, header, name)
    return fmt, choice.family


def gguf_format(vocab: LlamaVocab, header, name: str, chosen: str = "auto", template: str | None = None):
    """The prompt format of a GGUF model and the :class:`FormatChoice` that made it.

    The family is the registry's (:func:`glmdesk.engine.families.recognise_gguf`, from
    ``general.architecture``, the vocabulary and the metadata): ChatGLM3 / GLM-4 get glmdesk's
    role-token formats and ChatGLM2 its rounds, ids from the GGUF vocabulary; any other
    model its ``tokenizer.chat_template`` (or ``template``, the one the user picked), in
    the format that template speaks
    (:func:`~glmdesk.engine.families.template_format.choose_format`; ``chosen``: the
    user's choice of format).

    Returns:
        ``(format, choice)``; ``choice.family`` is ``chatglm3``, ``glm4``, ``chatglm2``,
        the chat-template GLM families' (``glm4-0414``, ``glm-z1``, ``glm4-moe``,
        ``glm4-moe-lite``: prompted by the file's chat template) or ``gguf``.

    Raises:
        GlmdeskError: ``not_a_model`` when the model has neither role tokens nor a
            chat template.
    """
    from glmdesk.engine.families.template_format import FormatChoice, choose_format

    variant = families.gguf_variant(header.architecture, vocab.special_id, header.get)
    family = families.get_family(variant)
    eos = (vocab.eos, vocab.eot)
    if family.name != "generic" and not family.chat_template:
        own = FormatChoice(family.name, "", "")  # its family's own format, not read from a template
        return family.prompt_format(_SpecialTokens(vocab), eos), own
    template = template or header.get("tokenizer.chat_template")
    if isinstance(template, str) and template:
        choice = choose_format(variant, template, chosen)
        fmt = families.get_family(choice.family).prompt_format(TemplateTokenizer(vocab, template), eos)
        return fmt, choice
    raise GlmdeskError(
        "not_a_model", f"{name} has no chat template, so it cannot be used for chat.", path=str(header.path)
    )
