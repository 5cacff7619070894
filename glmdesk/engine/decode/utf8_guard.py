"""Keep a byte-level model's output valid UTF-8 while sampling.

Byte-level vocabularies (GPT-2's byte BPE as in SmolLM2, GLM-4's tiktoken ranks,
sentencepiece's byte-fallback pieces ``<0xNN>`` in ChatGLM2/3) can sample byte
sequences that are not UTF-8 (a lead byte followed by a plain letter, a lone
continuation byte); the detokenizer then rightly shows U+FFFD. The fix is
upstream: a logits processor removes every token whose bytes cannot continue the
pending UTF-8 sequence.

A pending sequence is one of eight states: expecting a lead byte (ground), or
expecting 1, 2 or 3 continuation bytes, where the first one after ``E0``, ``ED``,
``F0`` and ``F4`` has a narrower range (no overlong forms, no surrogates, nothing
past U+10FFFF). One boolean mask over the vocabulary per state is built once per
tokenizer, so each token costs one ``masked_fill`` of the logits and a walk over
the chosen token's few bytes. Tokens without bytes (special tokens, stop ids) may
only come between whole characters.

Greedy decoding is unchanged whenever its output is valid UTF-8: only tokens that
would make it invalid are masked.

Source of the byte ranges: The Unicode Standard 15.0, Table 3-7 "Well-Formed UTF-8
Byte Sequences"; GPT-2's byte-to-unicode table: openai/gpt-2 ``encoder.py``
(``bytes_to_unicode``), as in the ``tokenizers`` ByteLevel decoder.
"""

from __future__ import annotations

import json
import threading
import weakref
from collections.abc import Sequence

import torch

#: Expecting a lead byte (between whole characters).
GROUND = 0
#: A byte that no well-formed sequence allows here.
DEAD = 8
N_STATES = 8

# (state, lowest, highest allowed byte, state after it) for the continuation states.
_CONTINUATIONS = (
    (1, 0x80, 0xBF, GROUND),  # one byte left
    (2, 0x80, 0xBF, 1),  # two left
    (3, 0xA0, 0xBF, 1),  # after E0 (no overlong three-byte forms)
    (4, 0x80, 0x9F, 1),  # after ED (no surrogates)
    (5, 0x80, 0xBF, 2),  # three left
    (6, 0x90, 0xBF, 2),  # after F0 (no overlong four-byte forms)
    (7, 0x80, 0x8F, 2),  # after F4 (nothing past U+10FFFF)
)


def _lead_state(b: int) -> int:
    if b < 0x80:
        return GROUND
    if 0xC2 <= b <= 0xDF:
        return 1
    if b == 0xE0:
        return 3
    if 0xE1 <= b <= 0xEC or b in (0xEE, 0xEF):
        return 2
    if b == 0xED:
        return 4
    if b == 0xF0:
        return 6
    if 0xF1 <= b <= 0xF3:
        return 5
    if b == 0xF4:
        return 7
    return DEAD  # 80-BF alone, C0, C1, F5-FF


def _transition_table() -> tuple[bytes, ...]:
    rows = [bytearray([DEAD]) * 256 for _ in range(N_STATES + 1)]
    for b in range(256):
        rows[GROUND][b] = _lead_state(b)
    for state, lo, hi, after in _CONTINUATIONS:
        for b in range(lo, hi + 1):
            rows[state][b] = after
    return tuple(bytes(r) for r in rows)


#: ``NEXT[state][byte]``: the state after ``byte``; :data:`DEAD` when not allowed.
NEXT = _transition_table()


def advance(state: int, data: bytes | None) -> int:
    """The state after ``data`` from ``state`` (:data:`DEAD` if ``data`` cannot follow).

    ``None`` or ``b""`` (a token without bytes) is allowed only at :data:`GROUND`.
    """
    if not data:
        return state if state == GROUND else DEAD
    for b in data:
        state = NEXT[state][b]
        if state == DEAD:
            return DEAD
    return state


class Utf8Guard:
    """Per-state masks over one vocabulary.

    Args:
        pieces: The bytes of each token id, ``None`` for tokens without text
            (special tokens). Ids at or past ``len(pieces)`` (embedding rows past
            the vocabulary) count as tokens without text.

    Attributes:
        allowed: ``[8, vocab]`` bool: which ids may come in each state (CPU).
    """

    def __init__(self, pieces: Sequence[bytes | None]) -> None:
        self.pieces = list(pieces)
        allowed = [[] for _ in range(N_STATES)]
        for i, data in enumerate(self.pieces):
            if data and data.isascii():  # whole characters: only between characters
                allowed[GROUND].append(i)
                continue
            # Only a token that starts with a continuation byte can come mid-character.
            starts = range(N_STATES) if data and 0x80 <= data[0] <= 0xBF else (GROUND,)
            for state in starts:
                if advance(state, data) != DEAD:
                    allowed[state].append(i)
        self.allowed = torch.zeros((N_STATES, len(self.pieces)), dtype=torch.bool)
        for state, ids in enumerate(allowed):
            self.allowed[state, ids] = True
        self._blocked: dict[tuple[str, int], torch.Tensor] = {}
        self._lock = threading.Lock()

    def step(self, state: int, token_id: int) -> int:
        """The state after ``token_id``; :data:`GROUND` again after an unmasked
        invalid token (a processor chain that left nothing valid)."""
        data = self.pieces[token_id] if 0 <= token_id < len(self.pieces) else None
        after = advance(state, data)
        return GROUND if after == DEAD else after

    def blocked(self, device: torch.device | str, width: int) -> torch.Tensor:
        """``[8, width]`` bool on ``device``: True where a token must be masked."""
        key = (str(device), width)
        with self._lock:
            found = self._blocked.get(key)
            if found is None:
                n = min(width, len(self.pieces))
                allowed = torch.zeros((N_STATES, width), dtype=torch.bool)
                allowed[:, :n] = self.allowed[:, :n]
                allowed[GROUND, n:] = True  # rows past the vocabulary: no bytes
                found = self._blocked[key] = (~allowed).to(device)
        return found

    def processor(self) -> Utf8GuardProcessor:
        """A fresh processor for one answer."""
        return Utf8GuardProcessor(self)


class Utf8GuardProcessor:
    """A logits processor (``(ids [1, n], scores [1, vocab]) -> scores``) for one answer.

    The first call sees the prompt, which ends between whole characters; each
    later call advances the pending state by the ids generated since, then sets
    the logits of every token that cannot continue it to ``-inf``. A state whose
    mask would leave no token (impossible for a vocabulary holding all 256 bytes)
    masks nothing.
    """

    def __init__(self, guard: Utf8Guard) -> None:
        self.guard = guard
        self.state = GROUND
        self._seen: int | None = None

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        n = int(input_ids.shape[-1])
        if self._seen is not None and n > self._seen:
            for token_id in input_ids[0, self._seen : n].tolist():
                self.state = self.guard.step(self.state, int(token_id))
        self._seen = n
        blocked = self.guard.blocked(scores.device, int(scores.shape[-1]))[self.state]
        return scores.masked_fill(blocked, float("-inf"))


# -- the bytes of each token, per tokenizer kind -----------------------------------


def _byte_decoder() -> dict[int, int]:
    """``str.translate`` table: GPT-2's printable stand-in character -> the character
    whose code point is its byte (inverse of ``bytes_to_unicode``); any other
    character below U+0180 -> U+0800, so that ``.encode("latin-1")`` refuses it."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    chars = list(keep)
    extra = 0
    for b in range(256):
        if b not in keep:
            keep.append(b)
            chars.append(256 + extra)
            extra += 1
    table = dict.fromkeys(range(0x180), 0x800)
    table.update(zip(chars, keep, strict=True))
    return table


def _byte_level_bytes(token: str, table: dict[int, int]) -> bytes | None:
    try:
        return token.translate(table).encode("latin-1")
    except UnicodeEncodeError:
        return None


def _fallback_bytes(token: str) -> bytes:
    if len(token) == 6 and token.startswith("<0x") and token.endswith(">"):
        return bytes([int(token[3:5], 16)])
    return token.replace("\u2581", " ").encode("utf-8")


def _hf_pieces(tokenizer) -> list[bytes | None] | None:
    """Bytes per id of a transformers fast tokenizer with a ByteLevel or ByteFallback
    decoder; ``None`` for any other kind of vocabulary."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None or backend.decoder is None:
        return None
    decoder = json.loads(backend.decoder.__getstate__())
    kinds = {d.get("type") for d in decoder.get("decoders", [decoder])}
    if "ByteLevel" in kinds:
        table = _byte_decoder()

        def convert(token: str) -> bytes | None:
            return _byte_level_bytes(token, table)

    elif "ByteFallback" in kinds:
        convert = _fallback_bytes
    else:
        return None
    vocab = backend.get_vocab(with_added_tokens=True)
    added = getattr(tokenizer, "added_tokens_decoder", {})
    pieces: list[bytes | None] = [None] * (max(vocab.values(), default=-1) + 1)
    for token, i in vocab.items():
        entry = added.get(i)
        if entry is None:
            pieces[i] = convert(token)
        elif not entry.special:
            pieces[i] = token.encode("utf-8")  # added text tokens decode as written
    return pieces


def token_pieces(tokenizer) -> list[bytes | None] | None:
    """The bytes of each token id, or ``None`` when the vocabulary is not byte-level.

    Knows transformers fast tokenizers (ByteLevel: GPT-2 style byte BPE;
    ByteFallback: sentencepiece-style with ``<0xNN>`` pieces), glmdesk's ChatGLM2/3
    sentencepiece tokenizer and both GLM-4 tokenizers.
    """
    if hasattr(tokenizer, "sp") and hasattr(tokenizer, "n_words"):  # ChatGLMTokenizer
        sp = tokenizer.sp
        return [
            None
            if sp.is_control(i) or sp.is_unknown(i)
            else _fallback_bytes(sp.id_to_piece(i))
            if sp.is_byte(i)
            else sp.id_to_piece(i).replace("\u2581", " ").encode("utf-8")
            for i in range(tokenizer.n_words)
        ]
    if hasattr(tokenizer, "enc") and hasattr(tokenizer, "special_ids"):  # TiktokenGLM4Tokenizer
        n_ranks = min(tokenizer.special_ids.values())
        return [tokenizer.enc.decode_single_token_bytes(i) for i in range(n_ranks)]
    if hasattr(tokenizer, "tok") and hasattr(tokenizer, "special_ids"):  # FastGLM4Tokenizer
        return _hf_pieces(tokenizer.tok)
    return _hf_pieces(tokenizer)


_GUARDS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_GUARDS_LOCK = threading.Lock()


def guard_for(tokenizer) -> Utf8Guard | None:
    """The :class:`Utf8Guard` of ``tokenizer`` (built once, then cached), or ``None``
    when its vocabulary is not byte-level (every token is then whole characters)."""
    with _GUARDS_LOCK:
        if tokenizer in _GUARDS:
            return _GUARDS[tokenizer]
    pieces = token_pieces(tokenizer)
    guard = Utf8Guard(pieces) if pieces is not None else None
    with _GUARDS_LOCK:
        _GUARDS[tokenizer] = guard
    return guard
