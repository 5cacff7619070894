"""One rule for stop ids: a tiny ChatGLM3 and a tiny GLM-4 stop on the same ids whichever
path asks (the prepared prompt format, the converted folder's config and generation
config, the app's loader), and the rule gives THUDM's lists on the released vocabularies."""

from __future__ import annotations

import json

import pytest

from glmdesk.core.settings import LoadSettings
from glmdesk.engine.backends.transformers.loader import load_model
from glmdesk.engine.chatglm import prepare_checkpoint
from glmdesk.engine.chatglm.glm_config import tokenizer_stop_ids
from glmdesk.engine.families import get_family
from glmdesk.engine.formats.chatglm_formats import GLM4_SPECIAL_IDS, STOP_IDS_BY_FAMILY
from glmdesk.engine.formats.chatglm_tokenizer import SPECIAL_TOKENS


def test_the_rule_gives_thudms_lists_on_the_released_vocabularies():
    chatglm_pieces = 64789  # ChatGLM2/3-6B's sentencepiece pieces; special tokens follow
    special = {name: chatglm_pieces + i for i, name in enumerate(SPECIAL_TOKENS)}.get
    for family in ("chatglm2", "chatglm2-32k", "chatglm3", "chatglm3-32k"):
        assert get_family(family).stop_ids((2,), special) == frozenset(STOP_IDS_BY_FAMILY[family])
    assert get_family("glm4").stop_ids((), GLM4_SPECIAL_IDS.get) == frozenset(STOP_IDS_BY_FAMILY["glm4"])
    assert STOP_IDS_BY_FAMILY["chatglm3"] == (2, 64795, 64797)  # THUDM chatglm3-6b generation_config
    assert STOP_IDS_BY_FAMILY["glm4"] == (151329, 151336, 151338)  # THUDM glm-4-9b-chat


def _every_path(src, family, cache, monkeypatch) -> dict[str, frozenset[int]]:
    prepared = prepare_checkpoint(src, cache)
    config = json.loads((prepared.hf_folder / "config.json").read_text())
    generation = json.loads((prepared.hf_folder / "generation_config.json").read_text())
    monkeypatch.setenv("GLMDESK_MODEL_CACHE", str(cache))
    loaded = load_model(LoadSettings(model=str(src)))
    return {
        "prepared": prepared.stop_ids,
        "prompt format": prepared.prompt_format.stop_ids,
        "converted config": frozenset(config["eos_token_id"]),
        "converted generation config": frozenset(generation["eos_token_id"]),
        "converter": frozenset(tokenizer_stop_ids(src, family)),
        "loader": loaded.prompt_format.stop_ids,
    }


@pytest.mark.parametrize("family", ["chatglm3", "chatglm2"])
def test_tiny_chatglm_stops_on_the_same_ids_on_every_path(make_checkpoint, tmp_path, monkeypatch, family):
    src, *_ = make_checkpoint(family, n_shards=1)
    paths = _every_path(src, family, tmp_path / "cache", monkeypatch)
    tok = prepare_checkpoint(src, tmp_path / "cache").tokenizer
    roles = {tok.special_id("<|user|>"), tok.special_id("<|observation|>")} if family == "chatglm3" else set()
    expected = frozenset({tok.eos_token_id, *roles})
    assert paths == dict.fromkeys(paths, expected)


def test_tiny_glm4_stops_on_the_same_ids_on_every_path(make_glm4_checkpoint, tmp_path, monkeypatch):
    src, config = make_glm4_checkpoint(n_shards=1)
    paths = _every_path(src, "glm4", tmp_path / "cache", monkeypatch)
    ranks = config["eos_token_id"][0]  # the specials follow the tiktoken ranks
    names = list(GLM4_SPECIAL_IDS)
    expected = frozenset(ranks + names.index(t) for t in ("<|endoftext|>", "<|user|>", "<|observation|>"))
    assert paths == dict.fromkeys(paths, expected)
