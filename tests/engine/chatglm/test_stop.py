"""Replies stop on every stop id; no role token or "[Round" text reaches the chat.

The converted tiny model is run through transformers' GlmForCausalLM; a forward
hook on ``lm_head`` scripts which token greedy decoding picks at each step.
"""

from __future__ import annotations

import pytest
import torch
from transformers import GlmForCausalLM

from glmdesk.core.messages import ChatMessage
from glmdesk.engine.chatglm import prepare_checkpoint


def script_model(model, script: list[int]):
    """Make greedy decoding emit ``script`` (one id per forward call, then repeat the last)."""
    step = {"n": 0}

    def hook(_module, _inputs, out):
        forced = torch.full_like(out, -1e4)
        forced[..., script[min(step["n"], len(script) - 1)]] = 1e4
        step["n"] += 1
        return forced

    model.lm_head.register_forward_hook(hook)
    return model


@pytest.fixture
def prepared(make_checkpoint, tmp_path):
    def make(family):
        src, *_ = make_checkpoint(family, n_shards=1)
        return prepare_checkpoint(src, tmp_path / "cache")

    return make


def _stop_names(tok):
    return ["[gMASK]", "sop", "<|user|>", "<|assistant|>", "<|observation|>", "<|system|>"]


@pytest.mark.parametrize("stop_name", ["</s>", "<|user|>", "<|observation|>"])
def test_generate_stops_on_each_chatglm3_stop_id(prepared, stop_name):
    p = prepared("chatglm3")
    tok = p.tokenizer
    stop = tok.eos_token_id if stop_name == "</s>" else tok.special_id(stop_name)
    assert stop in p.stop_ids
    model = GlmForCausalLM.from_pretrained(p.hf_folder, dtype=torch.float32).eval()
    # generation_config.json of the converted folder carries the stop list (real ids
    # 2, 64795, 64797) in the tiny vocabulary's own ids.
    assert list(model.generation_config.eos_token_id) == sorted(p.stop_ids)
    reply = tok.encode("\n") + tok.encode("Hello world")
    script_model(model, reply + [stop, *tok.encode("never shown")])
    prompt = p.prompt_format.encode([ChatMessage("user", "hi")])
    out = model.generate(torch.tensor([prompt]), max_new_tokens=30, do_sample=False)[
        0, len(prompt) :
    ].tolist()
    assert out == reply + [stop]
    f = p.prompt_format.reply_filter()
    shown = f(tok.decode(out)) + f.flush()
    assert shown == "Hello world"


def test_stream_chat_end_to_end(prepared):
    generate = pytest.importorskip("glmdesk.engine.decode.generate")
    loader = pytest.importorskip("glmdesk.engine.backends.transformers.loader")
    from glmdesk.core.settings import ParamsBox, SamplingParams

    def run(p, script, max_new=40):
        model = GlmForCausalLM.from_pretrained(p.hf_folder, dtype=torch.float32).eval()
        script_model(model, script)
        info = loader.ModelInfo(
            name="tiny",
            family=p.family,
            source_kind="folder",
            location=str(p.hf_folder),
            device="cpu",
            dtype="fp32",
            quantization="none",
            footprint_mib=0.0,
            context_length=p.context_length,
            kv_bytes_per_token=0,
            prompt_format=p.prompt_format.name,
        )
        loaded = loader.LoadedModel(model, p.tokenizer, p.prompt_format, info)
        params = ParamsBox(SamplingParams(temperature=0.0, max_new_tokens=max_new))
        msgs = [ChatMessage("system", "Be brief."), ChatMessage("user", "<|user|> [Round 2] hi")]
        chunks = list(generate.stream_chat(loaded, msgs, params))
        assert chunks[-1].error is None, chunks[-1].error
        return "".join(c.text for c in chunks), chunks[-1]

    p3 = prepared("chatglm3")
    tok = p3.tokenizer
    for stop in sorted(p3.stop_ids):
        text, last = run(p3, tok.encode("\n") + tok.encode("你好 world") + [stop])
        assert (text, last.finish_reason) == ("你好 world", "stop")
        assert all(name not in text for name in _stop_names(tok))

    p2 = prepared("chatglm2")
    tok = p2.tokenizer
    text, last = run(p2, tok.encode("Hi there") + [tok.eos_token_id])
    assert (text, last.finish_reason) == ("Hi there", "stop")
    text, last = run(p2, tok.encode("Hi there\n\n[Round 2]\n\n问：more"), max_new=30)
    assert "[Round" not in text and text.startswith("Hi there")
