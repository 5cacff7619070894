"""Loading: sources, device/precision choices, bitsandbytes, broken folders (issues 2, 7)."""

from __future__ import annotations

import os
import shutil

import pytest
import torch

from glmdesk.core.errors import GlmdeskError
from glmdesk.core.messages import ChatMessage
from glmdesk.core.settings import LoadSettings, ParamsBox, SamplingParams
from glmdesk.engine.backends.transformers.loader import load_model
from glmdesk.engine.backends.transformers.options import option_availability
from glmdesk.engine.backends.transformers.placement import choose_device_and_dtype
from glmdesk.engine.decode.generate import stream_chat
from glmdesk.engine.files import sources
from glmdesk.engine.files.sources import converted_gguf_folder, embedded_gguf_path, resolve_source

PARIS = [ChatMessage("user", "What is the capital of France?")]


def answer(loaded, max_new_tokens=24) -> str:
    box = ParamsBox(SamplingParams(temperature=0.0, max_new_tokens=max_new_tokens))
    chunks = list(stream_chat(loaded, PARIS, box))
    assert chunks[-1].finish_reason in ("stop", "length"), chunks[-1].error
    return "".join(c.text for c in chunks)


def test_embedded_model_is_found_through_its_package():
    path = embedded_gguf_path()
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.is_file()
    assert resolve_source(None).kind == "embedded"


def test_embedded_info(embedded):
    info = embedded.info
    assert info.device == "cpu" and info.dtype == "fp32" and info.quantization == "none"
    assert 300 < info.footprint_mib < 1000
    assert info.context_length == 8192
    # SmolLM2-135M: 30 layers x 3 KV heads x 64 head dim x 2 (K and V) x 4 bytes.
    assert info.kv_bytes_per_token == 2 * 30 * 3 * 64 * 4
    assert "SmolLM2" in info.describe()


def test_conversion_is_cached_and_keyed_by_the_file(embedded_folder, tmp_path, monkeypatch):
    assert (embedded_folder / "model.safetensors").is_file()
    assert (embedded_folder / "chat_template.jinja").is_file() or "chat_template" in (
        embedded_folder / "tokenizer_config.json"
    ).read_text()
    again = converted_gguf_folder(embedded_gguf_path())
    assert again == embedded_folder  # no second conversion
    from glmdesk.engine.files.sources import _file_key

    # The same file elsewhere (another install) reuses the copy; a changed file does not.
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    copy = folder / embedded_gguf_path().name
    shutil.copy(embedded_gguf_path(), copy)
    assert _file_key(copy) == _file_key(embedded_gguf_path())
    with open(copy, "r+b") as fh:
        fh.seek(-10, 2)
        fh.write(b"0123456789")
    assert _file_key(copy) != _file_key(embedded_gguf_path())


def test_fp16_on_cpu_runs_in_fp32_with_a_note():
    device, dtype, notes = choose_device_and_dtype(LoadSettings(precision="fp16", device="cpu"))
    assert (device, dtype) == ("cpu", "fp32")
    assert notes and notes[0].kind == "fp16_on_cpu" and "fp32" in notes[0].message


def test_fp16_on_cpu_loads_and_answers(embedded_folder):
    loaded = load_model(LoadSettings(precision="fp16"))
    assert loaded.info.dtype == "fp32" and loaded.info.notes
    assert "Paris" in answer(loaded)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only case")
def test_options_without_cuda_say_why():
    options = option_availability()
    assert options["device:cuda"].params == {"option": "device:cuda", "reason": "no_cuda"}
    assert "CPU" in options["device:cuda"].message
    assert options["precision:fp16"] and options["quantization:8bit"] is None


@pytest.mark.parametrize("quantization", ["8bit", "4bit"])
def test_bitsandbytes_quantized_embedded_model_answers(embedded_folder, quantization):
    loaded = load_model(LoadSettings(quantization=quantization))
    assert loaded.info.quantization == quantization
    assert loaded.info.footprint_mib < 513
    assert "Paris" in answer(loaded)


def test_missing_folder_is_a_sentence(tmp_path):
    with pytest.raises(GlmdeskError) as err:
        load_model(LoadSettings(model=str(tmp_path / "nowhere" / "model")))
    assert err.value.kind == "model_not_found"


def test_folder_without_config_is_not_a_model(tmp_path):
    (tmp_path / "readme.txt").write_text("hi")
    with pytest.raises(GlmdeskError) as err:
        load_model(LoadSettings(model=str(tmp_path)))
    assert err.value.kind == "not_a_model" and "config.json" in err.value.message


def test_truncated_weights_name_the_file(embedded_folder, tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(embedded_folder, broken)
    weights = broken / "model.safetensors"
    data = weights.read_bytes()
    weights.write_bytes(data[: len(data) // 2])
    with pytest.raises(GlmdeskError) as err:
        load_model(LoadSettings(model=str(broken)))
    assert err.value.kind == "corrupt_weights"
    assert "model.safetensors" in err.value.message


def test_folder_loads_like_the_embedded_model(embedded_folder):
    loaded = load_model(LoadSettings(model=str(embedded_folder)))
    assert loaded.info.source_kind == "folder" and "Paris" in answer(loaded)


def test_hub_id_offline_is_a_sentence(monkeypatch):
    """Offline (no network, as on this machine): a sentence at once, no retries."""
    import time

    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    start = time.perf_counter()
    with pytest.raises(GlmdeskError) as err:
        load_model(LoadSettings(model="someone/no-such-model-here"))
    assert err.value.kind == "offline"
    assert "someone/no-such-model-here" in err.value.message
    assert time.perf_counter() - start < 5


def test_hub_id_without_a_connection_is_a_sentence_within_the_probe_timeout(monkeypatch):
    """Online mode, but no connection (this machine; CI alike): one probe, no download retries."""
    import time

    from huggingface_hub import constants

    from glmdesk.engine.files.model_source import HUB_PROBE_TIMEOUT_S

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    start = time.perf_counter()
    with pytest.raises(GlmdeskError) as err:
        load_model(LoadSettings(model="someone/no-such-model-here"))
    # No network: offline; with a network, the hub says there is no such model.
    assert err.value.kind in ("offline", "model_not_found")
    assert "someone/no-such-model-here" in err.value.message
    assert time.perf_counter() - start < HUB_PROBE_TIMEOUT_S + 5


def test_cancel_stops_loading():
    import threading

    cancel = threading.Event()
    cancel.set()
    with pytest.raises(GlmdeskError) as err:
        load_model(LoadSettings(), cancel=cancel)
    assert err.value.kind == "load_cancelled"


def _folder_copy(embedded_folder, tmp_path):
    """A model folder like the embedded one: small files copied, the weights linked."""
    folder = tmp_path / "copy"
    folder.mkdir()
    for item in embedded_folder.iterdir():
        if item.suffix == ".safetensors":
            (folder / item.name).symlink_to(item)
        else:
            shutil.copy2(item, folder / item.name)
    return folder


def test_prebuilt_tokenizer_is_used_once_and_only_while_its_files_are_unchanged(embedded_folder, tmp_path):
    from glmdesk.engine.backends.transformers.placement import prebuild_tokenizer

    folder = _folder_copy(embedded_folder, tmp_path)
    settings = LoadSettings(model=str(folder))
    built = prebuild_tokenizer(settings)
    assert built is not None
    loaded = load_model(settings)
    assert loaded.tokenizer is built
    assert "Paris" in answer(loaded)
    assert load_model(settings).tokenizer is not built  # taken once
    # An edited tokenizer file after the prebuild: the load builds a new one.
    built = prebuild_tokenizer(settings)
    stat = (folder / "tokenizer.json").stat()
    os.utime(folder / "tokenizer.json", ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    assert load_model(settings).tokenizer is not built


def test_prebuild_never_converts_or_downloads(tmp_path):
    from glmdesk.engine.backends.transformers.placement import prebuild_tokenizer

    fake = tmp_path / "new.gguf"
    fake.write_bytes(b"GGUF" + os.urandom(4096))
    assert prebuild_tokenizer(LoadSettings(model=str(fake))) is None
    assert not sources._converted_target(fake).exists()  # not converted on the way
    assert prebuild_tokenizer(LoadSettings(model="someone/some-model")) is None
    assert prebuild_tokenizer(LoadSettings(model=str(tmp_path / "missing"))) is None


def test_first_conversion_reports_an_unmeasured_step(tmp_path, monkeypatch):
    """The GGUF conversion's steps cannot be measured: it says so (total 0, a busy
    indicator) before the first one, instead of a bar at "0 of 1"."""
    from tests.engine.files.test_files_from_elsewhere import write_gguf

    monkeypatch.setenv("GLMDESK_MODEL_CACHE", str(tmp_path / "cache"))
    broken = tmp_path / "broken.gguf"
    write_gguf(broken, "llama")  # a sound header; transformers then finds no model in it
    reports = []
    with pytest.raises(GlmdeskError) as info:
        converted_gguf_folder(broken, lambda *args: reports.append(args))
    assert info.value.kind == "corrupt_weights"
    assert reports == [("converting", 0, 0)]


@pytest.mark.parametrize("idle_slab", [True, False], ids=["idle-slab", "nothing-idle"])
def test_a_load_out_of_memory_gives_back_idle_slabs_then_tries_again(embedded_folder, monkeypatch, idle_slab):
    """Weights that do not fit (the error injected into the first ``from_pretrained``):
    the static step's idle KV slabs are given back and the load tries once more; with
    nothing idle it says there is not enough memory at once."""
    import gc

    from glmdesk.engine.backends.transformers import placement
    from glmdesk.engine.cache.static_pool import StaticBufferPool, release_idle_slabs

    release_idle_slabs()  # other tests' idle slabs
    pool = StaticBufferPool()
    if idle_slab:
        owner = type("Layer", (), {})()
        pool.lease(owner, 2, (1, 2, 64), torch.float32, "cpu", 1024)
        del owner
        gc.collect()
    real, tries = placement._auto_model_class, []

    def first_try_fails(folder, trust_remote_code):
        cls = real(folder, trust_remote_code)

        class FirstTryOutOfMemory:
            @staticmethod
            def from_pretrained(*args, **kwargs):
                tries.append(1)
                if len(tries) == 1:
                    raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
                return cls.from_pretrained(*args, **kwargs)

        return FirstTryOutOfMemory

    monkeypatch.setattr(placement, "_auto_model_class", first_try_fails)
    if idle_slab:
        loaded = load_model(LoadSettings())
        assert len(tries) == 2 and pool.idle_bytes() == 0 and pool.slabs == []
        assert "Paris" in answer(loaded)
        return
    with pytest.raises(GlmdeskError) as caught:
        load_model(LoadSettings())
    assert caught.value.kind == "out_of_memory" and caught.value.params["stage"] == "load"
    assert len(tries) == 1 and "freed_mib" not in caught.value.params
