"""A ChatGLM folder cloned without git-lfs: every file checked before converting
(issue 19 item 6)."""

from __future__ import annotations

import pytest

from glmdesk.core.errors import GlmdeskError
from glmdesk.core.settings import LoadSettings
from glmdesk.engine.backends.transformers.loader import load_model
from glmdesk.engine.chatglm import convert_checkpoint

LFS_POINTER = (
    "version https://git-lfs.github.com/spec/v1\n"
    "oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\n"
    "size 1952390144\n"
)


@pytest.mark.parametrize(
    ("fmt", "victim"),
    [
        ("bin", "pytorch_model-00001-of-00002.bin"),
        ("safetensors", "model-00002-of-00002.safetensors"),
        ("safetensors", "tokenizer.model"),
    ],
)
def test_pointer_is_named_with_git_lfs_pull(make_checkpoint, tmp_path, monkeypatch, fmt, victim):
    monkeypatch.setenv("GLMDESK_MODEL_CACHE", str(tmp_path / "models"))
    src, *_ = make_checkpoint("chatglm3", fmt=fmt, n_shards=2)
    (src / victim).write_text(LFS_POINTER)
    for attempt in (
        lambda: convert_checkpoint(src, tmp_path / "out"),
        lambda: load_model(LoadSettings(model=str(src))),
    ):
        with pytest.raises(GlmdeskError) as err:
            attempt()
        message = err.value.message
        assert err.value.kind == "lfs_pointer" and err.value.params["file"] == victim
        assert victim in message and "Git LFS pointer" in message and "git lfs pull" in message
    assert not (tmp_path / "out").exists()


def test_damaged_bin_never_repeats_torchs_advice(make_checkpoint, tmp_path):
    src, *_ = make_checkpoint("chatglm3", fmt="bin", n_shards=2)
    (src / "pytorch_model-00001-of-00002.bin").write_bytes(b"\x80\x02garbage" * 100)
    with pytest.raises(GlmdeskError) as err:
        convert_checkpoint(src, tmp_path / "out")
    message = err.value.message
    assert err.value.kind == "corrupt_weights" and "pytorch_model-00001-of-00002.bin" in message
    assert "weights_only" not in message and "issue" not in message.lower()
