"""The ChatGLM2/ChatGLM3 tokenizer on the ``sentencepiece`` library.

ChatGLM2-6B and ChatGLM3-6B share one sentencepiece model (``tokenizer.model``,
64789 pieces: ``<unk>`` 0, ``<s>`` 1, ``</s>`` 2, byte-fallback pieces ``<0x00>``..
``<0xFF>`` from 3). THUDM's ``tokenization_chatglm.py`` appends special tokens right
after the sentencepiece vocabulary, in this order: ``[MASK]``, ``[gMASK]``,
``[sMASK]``, ``sop``, ``eop`` (ChatGLM2 and ChatGLM3), then ``<|system|>``,
``<|user|>``, ``<|assistant|>``, ``<|observation|>`` (ChatGLM3). With the real model
that gives ids 64789..64797. The embedding table is padded to 65024 rows; ids past
the special tokens are never produced by :meth:`ChatGLMTokenizer.encode` and decode
to nothing.

Source: THUDM/chatglm3-6b ``tokenization_chatglm.py`` (``SPTokenizer``) and the
model card of THUDM/chatglm2-6b.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import sentencepiece as spm

from glmdesk.core.errors import corrupt_weights

#: Special tokens in id order, starting at the sentencepiece vocabulary size.
SPECIAL_TOKENS = (
    "[MASK]",
    "[gMASK]",
    "[sMASK]",
    "sop",
    "eop",
    "<|system|>",
    "<|user|>",
    "<|assistant|>",
    "<|observation|>",
)


class ChatGLMTokenizer:
    """Encode plain text and decode ids for ChatGLM2/ChatGLM3.

    ``encode`` never produces special ids: text such as ``"<|user|>"`` or ``"sop"``
    typed by a user is split into ordinary pieces. Prompt formats add special ids
    themselves (see :mod:`glmdesk.engine.formats.chatglm_formats`).

    Leading spaces: sentencepiece prepends a dummy ``"▁"`` when encoding and
    :meth:`decode` removes one leading space of the first piece, exactly like
    ``SentencePieceProcessor.decode`` (and THUDM's tokenizer). So
    ``decode(ids[a:b])`` of a window that starts with ``"▁word"`` gives ``"word"``.
    Diffing two decodes that share their first id (as
    :class:`glmdesk.engine.decode.detokenizer.IncrementalDetokenizer` does) is therefore
    exact. Concatenating decodes of adjacent windows would lose that space: pass
    ``keep_leading_space=True`` for that use.

    Byte-fallback pieces of an incomplete UTF-8 character decode to one U+FFFD
    per byte, so a window ending inside a character ends with U+FFFD.

    Args:
        model_file: Path to the sentencepiece ``tokenizer.model``.

    Attributes:
        n_words: Size of the sentencepiece vocabulary (64789 for the real model);
            also the id of ``[MASK]``.
        special_ids: Special token name -> id.
        eos_token_id: ``</s>`` (2).
        bos_token_id: ``<s>`` (1); ChatGLM prompts do not use it.
        pad_token_id: ``<unk>`` (0), as in THUDM's tokenizer.

    Raises:
        GlmdeskError: ``corrupt_weights`` if the file is missing or is not a
            sentencepiece model.
    """

    def __init__(self, model_file: str | Path) -> None:
        path = Path(model_file)
        try:
            self.sp = spm.SentencePieceProcessor(model_file=str(path))
        except (OSError, RuntimeError) as exc:
            raise corrupt_weights(
                path, f"The tokenizer file {path} could not be read as a sentencepiece model ({exc}).", exc
            ) from exc
        self.model_file = path
        self.n_words: int = self.sp.vocab_size()
        self.special_ids: dict[str, int] = {tok: self.n_words + i for i, tok in enumerate(SPECIAL_TOKENS)}
        self._special_names = {i: tok for tok, i in self.special_ids.items()}
        self.bos_token_id: int = self.sp.bos_id()
        self.eos_token_id: int = self.sp.eos_id()
        self.pad_token_id: int = self.sp.unk_id()
        self.unk_token_id: int = self.sp.unk_id()
        self._control_ids = frozenset(
            i for i in (self.bos_token_id, self.eos_token_id, self.unk_token_id) if i >= 0
        )

    # -- ids of special tokens -------------------------------------------------

    def special_id(self, token: str) -> int:
        """Return the id of a special token (``"[gMASK]"``, ``"<|user|>"``...).

        Raises:
            KeyError: for a name that is not in :data:`SPECIAL_TOKENS`.
        """
        return self.special_ids[token]

    @property
    def all_special_ids(self) -> list[int]:
        """Control ids (unk/pad, bos, eos) and the special token ids."""
        return sorted(self._control_ids | set(self.special_ids.values()))

    @property
    def vocab_size(self) -> int:
        """Sentencepiece pieces plus special tokens (64798 for the real model)."""
        return self.n_words + len(SPECIAL_TOKENS)

    def __len__(self) -> int:
        return self.vocab_size

    # -- encode / decode ---------------------------------------------------------

    def encode(self, text: str) -> list[int]:
        """Encode plain text, without any special id.

        Args:
            text: Any string; special-token names in it stay plain text.

        Returns:
            Token ids, shape ``[n]`` (``[]`` for ``""``).
        """
        if not text:
            return []
        return list(self.sp.encode(text))

    def is_special(self, token_id: int) -> bool:
        """True for control ids, special tokens and padding rows past them."""
        return token_id in self._control_ids or token_id >= self.n_words or token_id < 0

    def decode(
        self,
        ids: Iterable[int],
        skip_special_tokens: bool = True,
        keep_leading_space: bool = False,
    ) -> str:
        """Decode ids to text.

        Args:
            ids: Token ids, shape ``[n]`` (a list, tuple or 1-D tensor).
            skip_special_tokens: Drop unk/pad, bos, eos and the special tokens. When
                False, special tokens are written by name (``"<|user|>"``) and
                control ids as sentencepiece writes them.
            keep_leading_space: Keep the space a first piece ``"▁word"`` stands for
                (see the class docstring).

        Returns:
            The text. Ids past the special tokens (embedding padding) never decode
            to anything.
        """
        ids = [int(i) for i in ids]
        out: list[str] = []
        run: list[int] = []
        first = True

        def flush_run() -> None:
            nonlocal first
            if not run:
                return
            text = self.sp.decode(run)
            if first and keep_leading_space and self.sp.id_to_piece(run[0]).startswith("▁"):
                text = " " + text
            elif not first and self.sp.id_to_piece(run[0]).startswith("▁"):
                text = " " + text  # after a special token sentencepiece starts anew
            out.append(text)
            run.clear()
            first = False

        for i in ids:
            if i < 0 or i >= self.n_words:
                name = self._special_names.get(i)
                if name is None or skip_special_tokens:
                    continue
                flush_run()
                out.append(name)
                first = False
            elif skip_special_tokens and i in self._control_ids:
                continue
            else:
                run.append(i)
        flush_run()
        return "".join(out)

    def convert_ids_to_tokens(self, ids: int | Sequence[int]) -> str | list[str]:
        """Return the piece (``"▁Hello"``, ``"<0x0A>"``) or special name for ids.

        Args:
            ids: One id or a sequence of ids.

        Returns:
            One string for an int, else a list. Padding ids give ``"<pad_ID>"``.
        """
        if isinstance(ids, int):
            return self._token(ids)
        return [self._token(int(i)) for i in ids]

    def _token(self, i: int) -> str:
        if 0 <= i < self.n_words:
            return self.sp.id_to_piece(i)
        return self._special_names.get(i, f"<pad_{i}>")

    def convert_tokens_to_ids(self, tokens: str | Sequence[str]) -> int | list[int]:
        """Inverse of :meth:`convert_ids_to_tokens` (unknown pieces give unk, 0)."""
        if isinstance(tokens, str):
            return self._id(tokens)
        return [self._id(t) for t in tokens]

    def _id(self, token: str) -> int:
        if token in self.special_ids:
            return self.special_ids[token]
        return self.sp.piece_to_id(token)
