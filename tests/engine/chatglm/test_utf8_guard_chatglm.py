"""The UTF-8 guard on ChatGLM2/3's sentencepiece byte-fallback vocabulary (issue 19 item 2)."""

from __future__ import annotations

from glmdesk.engine.decode.utf8_guard import GROUND, guard_for
from glmdesk.engine.formats.chatglm_tokenizer import ChatGLMTokenizer


def test_chatglm_byte_fallback_pieces(sp_model_file):
    """ChatGLM2/3's sentencepiece vocabulary: ``<0xNN>`` pieces are bytes, every other
    piece is whole characters, so after a lead byte only ``<0x80>``-``<0xBF>`` may come."""
    tokenizer = ChatGLMTokenizer(sp_model_file)
    guard = guard_for(tokenizer)
    assert guard is not None
    piece = tokenizer.sp.piece_to_id
    state = guard.step(GROUND, piece("<0xE6>"))
    allowed = guard.allowed[state].nonzero().flatten().tolist()
    assert sorted(tokenizer.sp.id_to_piece(i) for i in allowed) == [f"<0x{b:02X}>" for b in range(0x80, 0xC0)]
    assert guard.allowed[GROUND, piece("<0xE6>")] and not guard.allowed[GROUND, piece("<0x96>")]
    assert guard.allowed[GROUND, tokenizer.encode("你好")[-1]]
    eos = tokenizer.eos_token_id  # a stop id: only between characters
    assert guard.allowed[GROUND, eos] and not guard.allowed[state, eos]
