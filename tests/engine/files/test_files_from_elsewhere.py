"""Files from elsewhere: the header is read first and the problem named at once
(issue 19 item 6)."""

from __future__ import annotations

import numpy as np
import pytest
from gguf import GGUFWriter

from glmdesk import cli
from glmdesk.core.errors import ERROR_KINDS, GlmdeskError
from glmdesk.core.settings import LoadSettings
from glmdesk.engine.backends.transformers.loader import load_model
from glmdesk.engine.files.gguf_header import read_gguf_header
from glmdesk.engine.files.sources import converted_gguf_folder, embedded_gguf_path

LFS_POINTER = (
    "version https://git-lfs.github.com/spec/v1\n"
    "oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\n"
    "size 1952390144\n"
)


def write_gguf(path, architecture: str) -> None:
    """A small real GGUF file (gguf's own writer): metadata and two tensors."""
    writer = GGUFWriter(str(path), architecture)
    writer.add_name("tiny " + architecture)
    writer.add_context_length(8192)
    writer.add_array("tokenizer.ggml.tokens", [f"tok{i}" for i in range(300)])
    writer.add_tensor("token_embd.weight", np.zeros((8, 4), dtype=np.float32))
    writer.add_tensor("output_norm.weight", np.ones(4, dtype=np.float16))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def test_embedded_header():
    header = read_gguf_header(embedded_gguf_path())
    assert header.architecture == "llama" and header.n_tensors == 272
    assert header.quantization_types == ("F32", "Q4_1", "Q8_0")
    assert header.context_length == 8192


def test_written_header(tmp_path):
    write_gguf(tmp_path / "m.gguf", "chatglm")
    header = read_gguf_header(tmp_path / "m.gguf")
    assert (header.architecture, header.name, header.n_tensors) == ("chatglm", "tiny chatglm", 2)
    assert header.quantization_types == ("F16", "F32")


def test_chatglm_gguf_is_refused_naming_the_architecture(tmp_path, monkeypatch):
    monkeypatch.setenv("GLMDESK_MODEL_CACHE", str(tmp_path / "models"))
    file = tmp_path / "chatglm3-6b.Q4_0.gguf"
    write_gguf(file, "chatglm")
    with pytest.raises(GlmdeskError) as err:
        load_model(LoadSettings(model=str(file)))
    assert err.value.kind == "gguf_unsupported"
    assert err.value.params["architecture"] == "chatglm" and err.value.params["file"] == file.name
    assert "architecture chatglm" in err.value.message and "damaged" not in err.value.message
    assert not (tmp_path / "models" / "gguf").exists() or not any((tmp_path / "models" / "gguf").iterdir())


@pytest.mark.parametrize(
    ("content", "kind", "words"),
    [
        ("<html><body>404 Not Found</body></html>\n", "not_gguf", 'starts with the bytes "GGUF"'),
        ("", "not_gguf", 'starts with the bytes "GGUF"'),
        (LFS_POINTER, "lfs_pointer", "git lfs pull"),
    ],
)
def test_not_a_gguf_file_named_gguf(tmp_path, content, kind, words):
    file = tmp_path / "model.gguf"
    file.write_text(content)
    with pytest.raises(GlmdeskError) as err:
        converted_gguf_folder(file)
    assert err.value.kind == kind and words in err.value.message and file.name in err.value.message


def test_cut_off_header_is_damaged(tmp_path):
    good = tmp_path / "good.gguf"
    write_gguf(good, "llama")
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(good.read_bytes()[:200])
    with pytest.raises(GlmdeskError) as err:
        read_gguf_header(cut)
    assert err.value.kind == "corrupt_weights" and "cut.gguf" in err.value.message


def test_convert_on_a_text_file_named_gguf_gives_the_magic_bytes_sentence(tmp_path, capsys):
    file = tmp_path / "notes.gguf"
    file.write_text("just some notes\n")
    assert cli.main(["convert", str(file)]) == 2
    err = capsys.readouterr().err
    assert 'starts with the bytes "GGUF", this one starts with "just some notes' in err
    assert "loads as it is" not in err


def test_convert_on_a_real_gguf_says_it_needs_no_conversion(tmp_path, capsys):
    file = tmp_path / "m.gguf"
    write_gguf(file, "llama")
    assert cli.main(["convert", str(file)]) == 2
    assert "GGUF file (llama, F16, F32)" in capsys.readouterr().err


def test_new_kinds_are_known():
    assert {"not_gguf", "gguf_unsupported", "lfs_pointer"} <= set(ERROR_KINDS)


def test_hugging_face_folder_cloned_without_git_lfs(embedded_folder, tmp_path):
    folder = tmp_path / "SmolLM2-clone"
    folder.mkdir()
    for f in embedded_folder.iterdir():
        if f.suffix != ".safetensors":
            (folder / f.name).write_bytes(f.read_bytes())
    (folder / "model.safetensors").write_text(LFS_POINTER)
    with pytest.raises(GlmdeskError) as err:
        load_model(LoadSettings(model=str(folder)))
    assert err.value.kind == "lfs_pointer" and "model.safetensors" in err.value.message


def _safetensors_file(tmp_path):
    import torch
    from safetensors.torch import save_file

    path = tmp_path / "w.safetensors"
    tensors = {"b.weight": torch.ones(3, 5, dtype=torch.float16), "a.bias": torch.zeros(7)}
    save_file(tensors, str(path), metadata={"format": "pt"})
    return path


def test_safetensors_header_is_read_as_the_library_reads_it(tmp_path):
    from safetensors import safe_open

    from glmdesk.engine.files.file_checks import read_safetensors_header

    path = _safetensors_file(tmp_path)
    header = read_safetensors_header(path)
    with safe_open(str(path), framework="pt") as handle:
        assert sorted(header.tensors) == list(handle.keys())
        for name in handle.keys():
            view = handle.get_slice(name)
            assert header.tensors[name]["shape"] == list(view.get_shape())
            assert header.tensors[name]["dtype"] == view.get_dtype()
        assert header.metadata == handle.metadata()
    assert 8 + header.header_bytes + header.data_bytes == path.stat().st_size == 8 + header.header_bytes + 58


@pytest.mark.parametrize(
    ("cut", "words"),
    [(-10, "bytes on disk"), (20, "header is cut off"), (4, "header is cut off")],
)
def test_a_cut_safetensors_file_is_named_by_the_one_parser(tmp_path, cut, words):
    from glmdesk.engine.files.file_checks import SafetensorsHeaderError, read_safetensors_header
    from glmdesk.engine.files.model_source import _check_safetensors

    path = _safetensors_file(tmp_path)
    path.write_bytes(path.read_bytes()[:cut])
    with pytest.raises(SafetensorsHeaderError, match=words):
        read_safetensors_header(path)
    with pytest.raises(GlmdeskError) as err:
        _check_safetensors(path)
    assert err.value.kind == "corrupt_weights" and err.value.params["file"] == "w.safetensors"
    assert "is damaged or incomplete (" in err.value.message and words in err.value.message
