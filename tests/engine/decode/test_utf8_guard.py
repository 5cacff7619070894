"""The model's own invalid UTF-8 never reaches the screen (issue 19 item 2)."""

from __future__ import annotations

import codecs

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from transformers.convert_slow_tokenizer import bytes_to_unicode

from glmdesk.core.messages import ChatMessage
from glmdesk.core.settings import ParamsBox, SamplingParams
from glmdesk.engine.decode.generate import stream_chat
from glmdesk.engine.decode.utf8_guard import DEAD, GROUND, advance, guard_for

# -- the state machine against Python's own strict UTF-8 decoder ----------------


def _is_prefix_of_utf8(data: bytes) -> bool:
    """Independent check: some completion of at most 3 bytes makes ``data`` valid."""
    for tail in (b"", b"\x80", b"\x80\x80", b"\x80\x80\x80", b"\xbf", b"\xbf\xbf", b"\xbf\xbf\xbf"):
        for head_fix in (b"", b"\x90", b"\xa0"):
            try:
                (data + head_fix + tail).decode("utf-8")
                return True
            except UnicodeDecodeError:
                pass
    return False


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=8) | st.text(max_size=4).map(lambda s: s.encode("utf-8", "surrogatepass")))
def test_state_machine_matches_strict_decoder(data):
    state = advance(GROUND, data)
    try:
        data.decode("utf-8")
        whole = True
    except UnicodeDecodeError:
        whole = False
    assert (state == GROUND) == whole
    assert (state != DEAD) == _is_prefix_of_utf8(data)


@pytest.mark.parametrize(
    "data",
    [b"\xed\xa0\x80", b"\xe0\x80\x80", b"\xf4\x90\x80\x80", b"\xc0\xaf", b"\xf5", b"\x80", b"\xe6ospace"],
)
def test_known_invalid_sequences_are_dead(data):
    assert advance(GROUND, data) == DEAD


# -- the guard on real vocabularies --------------------------------------------------

GPT2_BYTES = {c: b for b, c in bytes_to_unicode().items()}


def token_bytes(tokenizer, token_id: int) -> bytes:
    """Bytes of a byte-level BPE token, from transformers' own byte table."""
    if token_id in tokenizer.all_special_ids:
        return b""
    return bytes(GPT2_BYTES[c] for c in tokenizer.convert_ids_to_tokens(token_id))


@pytest.fixture(scope="module")
def tok(embedded):
    return embedded.tokenizer


@pytest.fixture(scope="module")
def guard(tok):
    return guard_for(tok)


def byte_token(tok, b: int) -> int:
    return tok.convert_tokens_to_ids(bytes_to_unicode()[b])


def test_embedded_vocabulary_masks_follow_pending_bytes(tok, guard):
    assert guard is guard_for(tok)  # built once per tokenizer
    lead = byte_token(tok, 0xE6)  # first byte of 新 (E6 96 B0)
    proc = guard.processor()
    scores = torch.zeros(1, guard.allowed.shape[1])
    prompt = torch.tensor([[1, 520]])
    out = proc(prompt, scores)
    assert torch.isfinite(out[0, lead]) and torch.isfinite(out[0, 2])  # between characters
    assert out[0, byte_token(tok, 0x96)] == float("-inf")  # a lone continuation byte
    out = proc(torch.tensor([[1, 520, lead]]), scores)
    assert proc.state != GROUND
    letters = tok.encode("ospace", add_special_tokens=False)
    assert all(out[0, i] == float("-inf") for i in letters)
    assert out[0, 2] == float("-inf")  # no stop inside a character
    assert torch.isfinite(out[0, byte_token(tok, 0x96)])
    allowed = torch.isfinite(out[0]).nonzero().flatten().tolist()
    assert allowed and all(0x80 <= token_bytes(tok, i)[0] <= 0xBF for i in allowed)
    out = proc(torch.tensor([[1, 520, lead, byte_token(tok, 0x96), byte_token(tok, 0xB0)]]), scores)
    assert proc.state == GROUND and torch.isfinite(out[0, 2])


# -- end to end: a processor that pushes probability onto invalid continuations ----


class Saboteur:
    """Test-only processor that pushes probability onto invalid continuations.

    It follows the answer's bytes with Python's own incremental UTF-8 decoder:
    between characters it boosts a lead byte (E6) and a lone continuation byte;
    inside a character it boosts plain ASCII text. Alone it makes the model write
    ``新�ospace``-like text, as in the issue.
    """

    def __init__(self, tok) -> None:
        self.tok = tok
        self.lead, self.lone = byte_token(tok, 0xE6), byte_token(tok, 0x96)
        self.ascii = tok.encode("ospace", add_special_tokens=False)
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.seen: int | None = None

    def __call__(self, ids, scores):
        n = ids.shape[-1]
        if self.seen is not None:
            for token_id in ids[0, self.seen : n].tolist():
                self.decoder.decode(token_bytes(self.tok, token_id))
        self.seen = n
        scores = scores.clone()
        if self.decoder.getstate()[0]:  # inside a character
            scores[0, self.ascii] += 40.0
        else:
            scores[0, self.lead] += 40.0
            scores[0, self.lone] += 39.0
        return scores


class WithProcessors:
    """The loaded embedded model with a test processor in front of its own."""

    def __init__(self, loaded, saboteur, guard: bool) -> None:
        self._loaded, self._saboteur, self._guard = loaded, saboteur, guard

    def __getattr__(self, name):
        return getattr(self._loaded, name)

    def logits_processors(self):
        own = self._loaded.logits_processors() if self._guard else ()
        return (self._saboteur, *own)


def answer(model, params) -> tuple[str, list[int], str]:
    chunks = list(stream_chat(model, [ChatMessage("user", "用中文介绍一下新空间。")], ParamsBox(params)))
    assert chunks[-1].finish_reason in ("stop", "length")
    return "".join(c.text for c in chunks), [i for c in chunks for i in c.token_ids], chunks[-1].finish_reason


@pytest.mark.parametrize(
    "params",
    [
        SamplingParams(temperature=0.0, max_new_tokens=16),
        SamplingParams(temperature=1.3, top_p=0.9, top_k=5, seed=11, max_new_tokens=16),
    ],
)
def test_pushed_invalid_bytes_never_reach_the_text(embedded, tok, params):
    saboteur = Saboteur(tok)
    text, _, _ = answer(WithProcessors(embedded, saboteur, guard=False), params)
    assert "\ufffd" in text  # without the guard the push does garble the answer
    text, ids, finish = answer(WithProcessors(embedded, saboteur, guard=True), params)
    assert "\ufffd" not in text and text
    data = b"".join(token_bytes(tok, i) for i in ids)
    decoder = codecs.getincrementaldecoder("utf-8")()  # strict: raises on invalid bytes
    assert text == decoder.decode(data, final=False)
    if decoder.getstate()[0]:  # cut off by the token limit inside a character
        assert finish == "length" and len(decoder.getstate()[0]) < 4


@pytest.mark.parametrize("question", ["What is the capital of France?", "用中文说你好，加一个表情🙂"])
def test_greedy_output_unchanged_when_already_valid(embedded, tok, question):
    params = ParamsBox(SamplingParams(temperature=0.0, max_new_tokens=20))
    messages = [ChatMessage("user", question)]

    class Bare(WithProcessors):
        def logits_processors(self):
            return ()

    bare = list(stream_chat(Bare(embedded, None, False), messages, params))
    ids = [i for c in bare for i in c.token_ids]
    # the bare output is valid UTF-8 (possibly cut off inside a last character)
    codecs.getincrementaldecoder("utf-8")().decode(b"".join(token_bytes(tok, i) for i in ids), final=False)
    guarded = list(stream_chat(embedded, messages, params))
    assert [i for c in guarded for i in c.token_ids] == ids
