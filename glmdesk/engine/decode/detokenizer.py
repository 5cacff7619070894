"""Incremental detokenization that emits only whole characters.

A byte-level BPE or sentencepiece byte-fallback tokenizer may split one CJK
character or emoji over several tokens; decoding a prefix then ends in U+FFFD.
:class:`IncrementalDetokenizer` holds such text back until the character is
complete. It decodes a short window (``prefix_offset:``) and diffs it against
the decode of the window's already-emitted part, as vLLM's
``detokenize_incrementally`` and mlx-lm's ``StreamingDetokenizer`` do, so the
cost per token does not grow with the answer.

Invariant: the concatenation of everything :meth:`push` and :meth:`flush`
return equals ``decode(all ids)``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

REPLACEMENT = "\ufffd"


class IncrementalDetokenizer:
    """Turn a stream of token ids into a stream of complete characters.

    Args:
        decode: ``decode(ids) -> str``, skipping special tokens (e.g.
            ``lambda ids: tok.decode(ids, skip_special_tokens=True)``).
    """

    def __init__(self, decode: Callable[[Sequence[int]], str]) -> None:
        self._decode = decode
        self.ids: list[int] = []
        self._prefix = 0  # window start
        self._read = 0  # ids already turned into emitted text
        self._emitted = 0  # characters emitted so far

    def add_context(self, ids: Sequence[int]) -> None:
        """Start after ``ids`` (shape ``[n]``, e.g. the tail of a continued answer in the
        prompt): they are the first window's left context and are never emitted, so a
        tokenizer's leading-space rule (sentencepiece drops a first piece's space) sees the
        text the new ids follow. Call before the first :meth:`push`."""
        if self.ids:
            raise RuntimeError("add_context must come before the first id")
        self.ids = list(ids)
        self._prefix, self._read = 0, len(self.ids)
        self._emitted = len(self._decode(self.ids))

    def push(self, token_id: int) -> str:
        """Add one id; return the newly completed text (possibly ``""``)."""
        self.ids.append(token_id)
        prefix_text = self._decode(self.ids[self._prefix : self._read])
        text = self._decode(self.ids[self._prefix :])
        if text.endswith(REPLACEMENT):
            return ""  # an incomplete character: wait for its remaining bytes
        if text == prefix_text:
            return ""  # e.g. a skipped special token
        if text.startswith(prefix_text):
            new = text[len(prefix_text) :]
        else:
            # The window decoded differently from its prefix (a tokenizer that
            # rewrites across token boundaries): fall back to the full decode.
            full = self._decode(self.ids)
            if full.endswith(REPLACEMENT):
                return ""
            new = full[self._emitted :]
        self._emitted += len(new)
        # The ids just emitted become the next window's left context, so
        # leading-space rules of the tokenizer see the same neighbours.
        self._prefix, self._read = self._read, len(self.ids)
        return new

    def flush(self, drop_incomplete: bool = False) -> str:
        """Return whatever is still held back (at the end of an answer).

        Args:
            drop_incomplete: Drop a trailing incomplete character (U+FFFD run at the
                end) instead of showing it: for an answer cut off by the token limit
                or by Stop in the middle of a multi-byte character.

        A genuinely invalid byte sequence the model ended on is emitted as U+FFFD
        unless ``drop_incomplete`` is set.
        """
        full = self._decode(self.ids)
        if drop_incomplete:
            full = full.rstrip(REPLACEMENT)
        new = full[self._emitted :]
        self._emitted += len(new)
        self._prefix = self._read = len(self.ids)
        return new
