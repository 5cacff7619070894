"""GLM-4's tokenizer from an original THUDM folder, without the folder's code.

GLM-4-9B-chat ships ``tokenizer.model`` as a tiktoken rank file (``base64 rank``
per line, 151329 ranks) and special tokens appended after the ranks
(``<|endoftext|>`` 151329 ... ``<|observation|>`` 151338). Two ways work without
remote code:

- a ``tokenizer.json`` in the folder: transformers' ``PreTrainedTokenizerFast``;
- the tiktoken file, with the ``tiktoken`` package (a dependency of glmdesk).

Source: THUDM/glm-4-9b-chat ``tokenization_chatglm.py`` (``ChatGLM4Tokenizer``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from glmdesk.core.errors import GlmdeskError
from glmdesk.engine.families.files import is_tiktoken_file
from glmdesk.engine.formats.chatglm_formats import GLM4_SPECIAL_IDS

#: The pre-tokenizer regex of THUDM's ChatGLM4Tokenizer.
GLM4_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
    r"\s*[\r\n]+|\s+(?!\S)|\s+"
)


class FastGLM4Tokenizer:
    """Wrap a transformers fast tokenizer with glmdesk's tokenizer interface.

    Args:
        tokenizer: A ``PreTrainedTokenizerFast`` built from ``tokenizer.json``.
    """

    def __init__(self, tokenizer) -> None:
        self.tok = tokenizer
        self.special_ids = {}
        for name, default in GLM4_SPECIAL_IDS.items():
            found = tokenizer.convert_tokens_to_ids(name)
            self.special_ids[name] = (
                found if isinstance(found, int) and found != tokenizer.unk_token_id else default
            )
        self.eos_token_id = self.special_ids["<|endoftext|>"]
        self.pad_token_id = self.eos_token_id

    def special_id(self, name: str) -> int:
        """The id of the special token ``name``.

        Raises:
            KeyError: when the vocabulary has no such special token.
        """
        return self.special_ids[name]

    def encode(self, text: str) -> list[int]:
        """Plain-text ids; typed special tokens stay text."""
        if not text:
            return []
        return list(self.tok.encode(text, add_special_tokens=False, split_special_tokens=True))

    def decode(self, ids: Iterable[int], skip_special_tokens: bool = True) -> str:
        """Decode, skipping special tokens by default."""
        return self.tok.decode([int(i) for i in ids], skip_special_tokens=skip_special_tokens)

    def convert_ids_to_tokens(self, ids: int | Sequence[int]) -> str | list[str]:
        """Token strings for ids."""
        return self.tok.convert_ids_to_tokens(ids)


class TiktokenGLM4Tokenizer:
    """GLM-4's tiktoken vocabulary through the ``tiktoken`` package.

    Args:
        model_file: The tiktoken rank file (``tokenizer.model``).

    Raises:
        ImportError: if ``tiktoken`` is missing (a broken install: it is a dependency).
    """

    def __init__(self, model_file: Path) -> None:
        import tiktoken
        from tiktoken.load import load_tiktoken_bpe

        ranks = load_tiktoken_bpe(str(model_file))
        base = len(ranks)
        self.special_ids = {name: base + i for i, name in enumerate(GLM4_SPECIAL_IDS)}
        self.enc = tiktoken.Encoding(
            name="glm4", pat_str=GLM4_PATTERN, mergeable_ranks=ranks, special_tokens=self.special_ids
        )
        self._special = set(self.special_ids.values())
        self.eos_token_id = self.special_ids["<|endoftext|>"]
        self.pad_token_id = self.eos_token_id

    def special_id(self, name: str) -> int:
        """The id of the special token ``name``.

        Raises:
            KeyError: when the vocabulary has no such special token.
        """
        return self.special_ids[name]

    def encode(self, text: str) -> list[int]:
        """Plain-text ids (``disallowed_special=()``: typed special tokens stay text)."""
        return self.enc.encode(text, disallowed_special=()) if text else []

    def decode(self, ids: Iterable[int], skip_special_tokens: bool = True) -> str:
        """Decode; incomplete UTF-8 at the end becomes U+FFFD."""
        ids = [int(i) for i in ids]
        if skip_special_tokens:
            ids = [i for i in ids if i not in self._special and i < self.enc.n_vocab]
        return self.enc.decode(ids, errors="replace")

    def convert_ids_to_tokens(self, ids: int | Sequence[int]) -> str | list[str]:
        """Token strings (bytes decoded with replacement) for ids."""
        names = {v: k for k, v in self.special_ids.items()}

        def one(i: int) -> str:
            if i in names:
                return names[i]
            return self.enc.decode_single_token_bytes(i).decode("utf-8", errors="replace")

        return one(ids) if isinstance(ids, int) else [one(int(i)) for i in ids]


def load_glm4_tokenizer(folder: Path):
    """Return a GLM-4 tokenizer for an original folder, running none of its code.

    Args:
        folder: The THUDM glm-4-9b(-chat) folder (or its converted copy).

    Returns:
        :class:`FastGLM4Tokenizer` or :class:`TiktokenGLM4Tokenizer`.

    Raises:
        GlmdeskError: ``unsupported_checkpoint`` when neither a ``tokenizer.json``
            nor a usable tiktoken file (with ``tiktoken`` installed) is there.
    """
    tokenizer_json = folder / "tokenizer.json"
    if tokenizer_json.is_file():
        from transformers import PreTrainedTokenizerFast

        return FastGLM4Tokenizer(PreTrainedTokenizerFast(tokenizer_file=str(tokenizer_json)))
    model_file = folder / "tokenizer.model"
    if model_file.is_file() and is_tiktoken_file(model_file):
        try:
            return TiktokenGLM4Tokenizer(model_file)
        except ImportError:
            reason = (
                "its tokenizer is a tiktoken file and the tiktoken package is not installed "
                "(pip install tiktoken), or use the glm-4-9b-chat-hf checkpoint."
            )
        except Exception as exc:  # a damaged rank file
            reason = f"its tiktoken tokenizer file could not be read ({exc})."
    else:
        reason = "it has neither a tokenizer.json nor a tiktoken tokenizer.model."
    raise GlmdeskError(
        "unsupported_checkpoint",
        f"glmdesk cannot read the GLM-4 tokenizer of {folder} without running its code: {reason}",
        path=str(folder),
        reason=reason,
    )
