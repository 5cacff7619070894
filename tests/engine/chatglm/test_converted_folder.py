"""A folder written by ``glmdesk convert`` opens as it is, with its family's tokenizer and
format, and answers as the original folder does (issue 30 §3)."""

from __future__ import annotations

import warnings

import pytest

from glmdesk import cli
from glmdesk.core.errors import GlmdeskError
from glmdesk.core.messages import ChatMessage
from glmdesk.core.settings import LoadSettings, ParamsBox, SamplingParams
from glmdesk.engine.backends import create_backend
from glmdesk.engine.chatglm import convert_checkpoint, detect_family


@pytest.fixture
def original(request, make_checkpoint, make_glm4_checkpoint):
    """``(family, original folder)`` for each tiny original checkpoint."""
    if request.param == "glm4":
        return "glm4", make_glm4_checkpoint()[0]
    return request.param, make_checkpoint(request.param, n_shards=2)[0]


def greedy(model: str) -> tuple[list[int], str, str, list[str]]:
    """Open ``model`` as the window, ``chat`` and ``serve`` do (a backend's ``load``) and
    answer greedily: ``(token ids, text, family, load stages)``."""
    stages: list[str] = []
    settings = LoadSettings(model=model, engine="transformers")
    backend = create_backend(settings)
    info = backend.load(settings, progress=lambda p: stages.append(p.stage))
    try:
        params = ParamsBox(SamplingParams(temperature=0.0, max_new_tokens=12))
        chunks = list(backend.stream([ChatMessage("user", "你好, what is the weather?")], params))
    finally:
        backend.close()
    assert chunks[-1].finish_reason in ("stop", "length"), chunks[-1].error
    ids = [i for c in chunks for i in c.token_ids]
    return ids, "".join(c.text for c in chunks), info.family, stages


@pytest.mark.parametrize("original", ["chatglm3", "chatglm2", "glm4"], indirect=True)
def test_a_converted_folder_answers_as_its_original(original, tmp_path, monkeypatch, capfd):
    family, src = original
    monkeypatch.setenv("GLMDESK_MODEL_CACHE", str(tmp_path / "models"))
    dst = tmp_path / "converted-hf"
    assert cli.main(["convert", str(src), str(dst)]) == 0
    want_ids, want_text, want_family, _ = greedy(str(src))
    capfd.readouterr()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ids, text, got_family, stages = greedy(str(dst))
    err = capfd.readouterr().err
    assert (got_family, ids, text) == (want_family, want_ids, want_text) and family == got_family
    assert len(ids) > 0 and "converting" not in stages  # opened as it is, not converted again
    assert [str(w.message) for w in caught] == [] and "protobuf" not in err.lower() and "Warning" not in err


def test_a_converted_folder_keeps_its_source_family(make_glm4_checkpoint, tmp_path):
    src, _ = make_glm4_checkpoint()
    dst = convert_checkpoint(src, tmp_path / "glm4-hf-copy")
    assert detect_family(dst) == "glm4"
    with pytest.raises(GlmdeskError) as err:
        convert_checkpoint(dst, tmp_path / "again")
    assert err.value.kind == "unsupported_checkpoint" and "converted it already" in err.value.message


def test_the_terminal_chats_with_a_converted_folder(make_checkpoint, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("GLMDESK_MODEL_CACHE", str(tmp_path / "models"))
    src, *_ = make_checkpoint("chatglm3", n_shards=1)
    dst = convert_checkpoint(src, tmp_path / "chatglm3-hf")
    answers = []
    for model in (src, dst):
        args = ["chat", "--model", str(model), "--temperature", "0", "--max-new-tokens", "8"]
        assert cli.main([*args, "--prompt", "hi"]) == 0
        out = capsys.readouterr()
        assert "error" not in out.err and "Traceback" not in out.err
        answers.append(out.out)
    assert answers[0] == answers[1] and answers[0].strip()
