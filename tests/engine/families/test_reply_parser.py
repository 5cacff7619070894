"""The family registry and the reply parser's reasoning split (pure Python, no model)."""

from __future__ import annotations

import pytest

from glmdesk.core.parts import ReasoningPart, TextPart, ThinkMarkers, merged
from glmdesk.engine import families
from glmdesk.engine.families.parser import ThinkSplitter


def _split(pieces: list[str], inside: bool = False):
    splitter = ThinkSplitter(ThinkMarkers(), inside=inside)
    parts = [p for piece in pieces for p in splitter(piece)] + splitter.finish()
    return merged(parts)


@pytest.mark.parametrize(
    ("reply", "inside"),
    [("  <think>ab</think>\n\ncd", False), ("ab</think>\ncd", True), ("<think>ab</think>cd", True)],
)
def test_reasoning_and_answer_wherever_the_deltas_split(reply, inside):
    expected = (ReasoningPart("ab"), TextPart("cd"))
    for cut in range(len(reply) + 1):
        assert _split([reply[:cut], reply[cut:]], inside) == expected, cut
    assert _split(list(reply), inside) == expected


def test_a_reply_without_a_think_block_is_all_answer():
    assert _split(["Hello <think>", " there"]) == (TextPart("Hello <think> there"),)
    assert _split(["<thi"]) == (TextPart("<thi"),)  # ended before it was a marker


def test_reasoning_cut_off_keeps_what_was_written():
    assert _split(["<think>ab</th"]) == (ReasoningPart("ab</th"),)


def test_each_detected_name_belongs_to_one_family():
    names = [v for f in families.FAMILIES for v in f.variants]
    assert len(names) == len(set(names))
    assert families.get_family("chatglm3-32k").name == "chatglm3"
    assert families.get_family("glm4-hf").end_tokens == families.get_family("glm4").end_tokens
    assert families.get_family("never-heard-of").name == "generic"


def test_served_models_are_told_by_their_id():
    assert families.family_for_model_id("THUDM/chatglm3-6b").tool_dialect == "chatglm3"
    assert families.family_for_model_id("THUDM/GLM-Z1-9B-0414").name == "glm-z1"
    assert families.family_for_model_id("THUDM/GLM-4-9B-0414").name == "glm4-0414"
    assert families.served_tool_dialects("glm-4-9b-chat") == ("glm4", "chatglm3", "glm45")
    assert families.served_tool_dialects("chatglm3-6b") == ("chatglm3", "glm4", "glm45")
    assert families.served_tool_dialects("zai-org/GLM-4.6")[0] == "glm45"


def test_gguf_files_are_told_by_architecture_and_vocabulary():
    glm4 = {"[gMASK]", "<sop>", "<|system|>", "<|user|>", "<|assistant|>", "<|observation|>"}
    chatglm3 = (glm4 - {"<sop>"}) | {"sop"}
    chatglm2 = {"[gMASK]", "sop"}

    def lookup(vocab):
        return lambda name: 1 if name in vocab else None

    assert families.recognise_gguf("glm4", lookup(glm4)).name == "glm4"
    assert families.recognise_gguf("chatglm", lookup(chatglm3)).name == "chatglm3"
    assert families.recognise_gguf("chatglm", lookup(chatglm2)).name == "chatglm2"
    assert families.recognise_gguf("llama", lookup(glm4)).name == "generic"
