"""GLM-4.5's multi-token-prediction (MTP) layer, in a tiny folder (random weights).

transformers 5.24 drafts with it in ``generate(..., use_mtp=True)``: the head is read from
the folder and the greedy answer is the trunk's own (a draft is kept only where the trunk
agrees). llama.cpp's converter writes it as the GGUF's NextN block
(``glm4moe.nextn_predict_layers``, ``blk.<n>.nextn.*``); glmdesk's llama.cpp engine loads
such a file without the block (llama-cpp-python 0.3.36 drafts with it only through
llama.cpp's low-level MTP context, which glmdesk does not drive) and answers as the trunk.
"""

from __future__ import annotations

import pytest

from glmdesk.core.messages import ChatMessage
from glmdesk.core.settings import CacheSettings, LoadSettings, ParamsBox, SamplingParams
from glmdesk.engine.backends.llamacpp.backend import LlamaCppBackend
from glmdesk.engine.files.gguf_header import read_gguf_header
from tests.helpers.llamacpp_convert import convert, converter_or_skip
from tests.helpers.mtp_models import allow_mtp_keys, write_glm45_mtp

pytestmark = pytest.mark.slow  # a folder, its head, generate twice; a conversion


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return write_glm45_mtp(tmp_path_factory.mktemp("glm45-mtp") / "GLM-4.5-Air")


def test_transformers_drafts_with_the_folders_head_and_answers_as_plain_greedy(folder):
    import torch
    from safetensors.torch import load_file
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    assert model.config.num_mtp_layers == 1
    allow_mtp_keys(model)
    ids = torch.tensor([[402, 404, 407, 198, 392, 381, 315, 11, 408]])
    seen = {}

    def keep(module, _args, output) -> None:
        seen.setdefault("head", module)

    from transformers.modeling_layers import MtpModel

    hook = torch.nn.modules.module.register_module_forward_hook(
        lambda m, a, o: keep(m, a, o) if isinstance(m, MtpModel) else None
    )
    try:
        with torch.inference_mode():
            plain = model.generate(
                ids, max_new_tokens=16, min_new_tokens=16, do_sample=False, eos_token_id=None
            )
            drafted = model.generate(
                ids, max_new_tokens=16, min_new_tokens=16, do_sample=False, eos_token_id=None, use_mtp=True
            )
    finally:
        hook.remove()
    assert drafted.tolist() == plain.tolist()
    written = load_file(folder / "model.safetensors")
    head = seen["head"].layers[0]  # the folder's head drafted: its weights are the written ones
    assert torch.equal(head.eh_proj.weight, written["model.layers.2.eh_proj.weight"])
    experts = head.mtp_block.mlp.experts
    assert torch.equal(experts.down_proj[3], written["model.layers.2.mlp.experts.3.down_proj.weight"])
    gate_up = torch.cat(
        [written[f"model.layers.2.mlp.experts.3.{p}.weight"] for p in ("gate_proj", "up_proj")]
    )
    assert torch.equal(experts.gate_up_proj[3], gate_up)


def test_the_converter_keeps_the_head_and_the_llamacpp_engine_answers_with_the_trunk(folder, tmp_path):
    path = convert(folder, tmp_path / "GLM-4.5-Air-MTP-F32.gguf", converter_or_skip())
    header = read_gguf_header(path)
    assert header.metadata["glm4moe.nextn_predict_layers"] == 1
    assert header.metadata["glm4moe.block_count"] == 3  # the trunk's two and the NextN block
    backend = LlamaCppBackend()
    backend.load(LoadSettings(model=str(path), engine="llamacpp"))
    try:
        assert backend.info.family == "glm4-moe"
        box = ParamsBox(SamplingParams(temperature=0.0, max_new_tokens=6))
        final = list(backend.stream([ChatMessage("user", "Hello world")], box, CacheSettings()))[-1]
        assert final.finish_reason in ("stop", "length"), final.error
    finally:
        backend.close()
