"""A GGUF tensor type the engine cannot read is named from the header, at once (issue 30 §3)."""

from __future__ import annotations

import shutil
import struct
import time

import numpy as np
import pytest
from gguf import GGMLQuantizationType, GGUFWriter

from glmdesk import cli
from glmdesk.core.errors import GlmdeskError
from glmdesk.core.settings import LoadSettings
from glmdesk.engine.backends import create_backend
from glmdesk.engine.files.gguf_header import llama_cpp_runs, read_gguf_header, transformers_dequantizes
from glmdesk.engine.files.sources import converted_gguf_folder, embedded_gguf_path

#: The embedded model's last tensor-table entry (F32 [576]): its name, then n_dims, one dim.
LAST = b"output_norm.weight"


@pytest.fixture
def q8_1_last(tmp_path, monkeypatch):
    """The embedded model with its last tensor (of 272) retyped to Q8_1, as the new user's file:
    transformers would dequantize the 271 others (22 s on two cores) before failing on it."""
    monkeypatch.setenv("GLMDESK_MODEL_CACHE", str(tmp_path / "models"))
    file = tmp_path / "SmolLM2-Q8_1-last.gguf"
    shutil.copyfile(embedded_gguf_path(), file)
    with open(file, "r+b") as fh:
        head = fh.read(4 << 20)
        at = head.rindex(LAST) + len(LAST) + 4 + 8  # the tensor's ggml type code
        assert struct.unpack_from("<I", head, at)[0] == GGMLQuantizationType.F32
        fh.seek(at)
        fh.write(struct.pack("<I", GGMLQuantizationType.Q8_1))
    return file


def test_dequantizable_types_come_from_the_gguf_function_transformers_calls():
    for name in ("F32", "F16", "BF16", "Q4_0", "Q4_1", "Q8_0", "Q4_K", "Q6_K", "IQ4_XS"):
        assert transformers_dequantizes(name), name
    for name in ("Q8_1", "Q8_K", "I32", "F64", "type 99"):
        assert not transformers_dequantizes(name), name


def test_a_q8_1_tensor_placed_last_is_refused_from_the_header_within_a_second(q8_1_last, tmp_path):
    settings = LoadSettings(model=str(q8_1_last), engine="transformers")
    t0 = time.perf_counter()
    with pytest.raises(GlmdeskError) as err:
        create_backend(settings).load(settings)
    elapsed = time.perf_counter() - t0
    assert elapsed < 3.0, f"refused after {elapsed:.1f} s"  # dequantizing first took 22 s
    assert err.value.kind == "gguf_unsupported"
    assert err.value.params["tensor_types"] == "Q8_1" and err.value.params["llamacpp"] is False
    assert "tensors of type Q8_1" in err.value.message and "cannot dequantize" in err.value.message
    assert "llama.cpp engine cannot run it either" in err.value.message
    gguf_cache = tmp_path / "models" / "gguf"
    assert not gguf_cache.exists() or not any(p.is_dir() for p in gguf_cache.iterdir())


def test_the_conversion_into_the_cache_checks_the_types_too(q8_1_last):
    # The transformers backend's own load path (not only create_backend) refuses it first.
    with pytest.raises(GlmdeskError) as err:
        converted_gguf_folder(q8_1_last)
    assert err.value.kind == "gguf_unsupported" and err.value.params["tensor_types"] == "Q8_1"


def test_the_terminal_names_the_type(q8_1_last, capsys):
    assert cli.main(["chat", "--model", str(q8_1_last), "--engine", "transformers", "--prompt", "hi"]) == 2
    err = capsys.readouterr().err
    assert "tensors of type Q8_1" in err and "Traceback" not in err


def test_the_llama_cpp_engine_refuses_activation_only_types_too(q8_1_last):
    assert not llama_cpp_runs(read_gguf_header(q8_1_last))
    settings = LoadSettings(model=str(q8_1_last), engine="llamacpp")
    with pytest.raises(GlmdeskError) as err:
        create_backend(settings).load(settings)
    assert err.value.kind == "unsupported_checkpoint" and "Q8_1" in err.value.message


def test_a_type_llama_cpp_reads_offers_the_llama_cpp_engine(tmp_path, monkeypatch):
    monkeypatch.setenv("GLMDESK_MODEL_CACHE", str(tmp_path / "models"))
    file = tmp_path / "with-int-tensor.gguf"
    writer = GGUFWriter(str(file), "llama")
    writer.add_tensor("token_embd.weight", np.zeros((8, 4), dtype=np.float32))
    writer.add_tensor("rope_positions", np.arange(8, dtype=np.int32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    settings = LoadSettings(model=str(file), engine="transformers")
    with pytest.raises(GlmdeskError) as err:
        create_backend(settings).load(settings)
    assert err.value.params["tensor_types"] == "I32" and err.value.params["llamacpp"] is True
    assert "Open it with the llama.cpp engine" in err.value.message
