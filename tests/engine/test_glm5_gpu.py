"""GLM-5 and GLM-5.3-Flash on a CUDA GPU through the app's own backend (skipped without CUDA).

What a GPU user gets opening a GLM-5 folder: the weights on ``cuda:0`` in bf16 (or
bitsandbytes NF4), an answer on every KV strategy with the sparse-attention indexer's keys
(and GLM-5.3-Flash's linear-attention state) held on the card, and the same greedy tokens
as the CPU in fp32. The tiny folders are the ones the CPU tests build.
"""

from __future__ import annotations

import pytest
import torch

from glmdesk.core.messages import ChatMessage
from glmdesk.core.settings import CacheSettings, LoadSettings, ParamsBox, SamplingParams
from glmdesk.engine.backends import create_backend
from tests.helpers.glm5_models import write_glm5, write_glm5_flash

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

GREEDY = SamplingParams(temperature=0.0, max_new_tokens=16)
STRATEGIES = {
    "full": CacheSettings(),
    "window": CacheSettings(strategy="sliding_window", window=24, sinks=2),
    "dynamic": CacheSettings(strategy="dynamic", window=24, sinks=2),
    "quantized": CacheSettings(strategy="quantized"),
}
WRITERS = {"glm5": write_glm5, "glm5-flash": write_glm5_flash}


@pytest.fixture(scope="module", params=sorted(WRITERS))
def folder(request, tmp_path_factory):
    return request.param, WRITERS[request.param](tmp_path_factory.mktemp(request.param))


def load(settings: LoadSettings):
    backend = create_backend(settings)
    backend.load(settings)
    return backend


def answer(backend, cache: CacheSettings, question: str = "你好, what is 2 + 2?"):
    chunks = list(backend.stream([ChatMessage("user", question)], ParamsBox(GREEDY), cache))
    final = chunks[-1]
    assert final.error is None and final.finish_reason in ("stop", "length"), final.error
    return [t for c in chunks for t in c.token_ids], final


@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
def test_answers_on_the_gpu_on_every_kv_strategy(folder, strategy, monkeypatch, tmp_path):
    monkeypatch.setenv("GLMDESK_MODEL_CACHE", str(tmp_path / "models"))
    name, path = folder
    backend = load(LoadSettings(model=str(path)))
    try:
        assert (backend.info.family, backend.info.device, backend.info.dtype) == (name, "cuda:0", "bf16")
        ids, final = answer(backend, STRATEGIES[strategy])
        assert ids and final.n_generated == len(ids) and final.cache.kv_bytes > 0
    finally:
        backend.close()


def test_gpu_answers_match_the_cpu_in_fp32(folder, monkeypatch, tmp_path):
    monkeypatch.setenv("GLMDESK_MODEL_CACHE", str(tmp_path / "models"))
    _, path = folder
    cpu = load(LoadSettings(model=str(path), device="cpu", precision="fp32", threads=1))
    gpu = load(LoadSettings(model=str(path), device="cuda", precision="fp32"))
    try:
        assert (cpu.info.device, gpu.info.device) == ("cpu", "cuda:0")
        assert answer(gpu, CacheSettings())[0] == answer(cpu, CacheSettings())[0]
    finally:
        cpu.close()
        gpu.close()


def test_nf4_loads_and_answers(folder, monkeypatch, tmp_path):
    monkeypatch.setenv("GLMDESK_MODEL_CACHE", str(tmp_path / "models"))
    _, path = folder
    backend = load(LoadSettings(model=str(path), quantization="4bit"))
    try:
        assert backend.info.quantization == "4bit"
        ids, _ = answer(backend, CacheSettings())
        assert ids
    finally:
        backend.close()
