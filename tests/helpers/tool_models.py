"""Tiny GLM-4 pieces for tool tests (imported by engine, server and UI tests).

A tiktoken vocabulary trained here with tiktoken's reference BPE trainer and GLM-4's
pre-tokenizer regex (special tokens after the ranks, as in GLM-4), a GLM-4-shaped
``GlmForCausalLM`` with random weights on it, and :class:`ForceTokens`, a test-only
logits processor that makes the real decode loop write a scripted reply.
"""

from __future__ import annotations

import base64
from pathlib import Path

import torch

GLM4_CORPUS = (
    "你是一个名为 ChatGLM 的人工智能助手。你的任务是针对用户的问题和要求提供适当的答复和支持。\n\n# 可用工具\n\n"
    '## get_weather\n\n{\n    "name": "get_weather",\n    "description": "查询天气",\n    "parameters": {}\n}\n'
    "在调用上述函数时，请使用 Json 格式表示调用的参数。\n"
    '{"city": "北京", "unit": "celsius"} Hello world, the weather today is sunny.\n'
    "```python\nprint(1 + 2)\n```\n```result\n3\n```\n"
)


def write_glm4_tokenizer(folder: Path) -> Path:
    """Write a tiny GLM-4 tiktoken ``tokenizer.model`` into ``folder``; return the folder."""
    from tiktoken._educational import bpe_train

    from glmdesk.engine.formats.glm4_tokenizer import GLM4_PATTERN

    ranks = bpe_train(GLM4_CORPUS * 2, 360, GLM4_PATTERN, visualise=None)
    lines = [f"{base64.b64encode(t).decode()} {r}" for t, r in sorted(ranks.items(), key=lambda x: x[1])]
    (folder / "tokenizer.model").write_text("\n".join(lines) + "\n")
    return folder


def tiny_glm4(folder: Path):
    """A :class:`~glmdesk.engine.backends.transformers.loader.LoadedModel`: tiny GLM-4 weights (seeded) and format."""
    from transformers import GlmConfig, GlmForCausalLM

    from glmdesk.engine.backends.transformers.loaded_model import LoadedModel
    from glmdesk.engine.chatglm import GLM4Format
    from glmdesk.engine.formats.glm4_tokenizer import load_glm4_tokenizer
    from glmdesk.engine.info import ModelInfo

    tok = load_glm4_tokenizer(folder)
    vocab = -(-(max(tok.special_ids.values()) + 1) // 64) * 64
    torch.manual_seed(0)
    config = GlmConfig(
        vocab_size=vocab, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, head_dim=16, max_position_embeddings=2048, pad_token_id=tok.eos_token_id,
    )  # fmt: skip
    fmt = GLM4Format(tok.encode, tok.special_ids)
    info = ModelInfo(
        "tiny-glm4", "glm4", "folder", str(folder), "cpu", "fp32", "none", 0.0, 2048, 0, fmt.name
    )
    return LoadedModel(GlmForCausalLM(config).eval(), tok, fmt, info)


class ForceTokens:
    """Test-only logits processor: the k-th answer writes ``scripts[k]`` (then repeats its
    last token). A new answer is noticed when the ids are not one longer than before."""

    def __init__(self, scripts: list[list[int]]) -> None:
        self.scripts, self.k, self.last, self.start = scripts, -1, None, 0

    def __call__(self, ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        n = ids.shape[1]
        if self.last is None or n != self.last + 1:
            self.k, self.start = min(self.k + 1, len(self.scripts) - 1), n
        self.last = n
        script = self.scripts[self.k]
        forced = torch.full_like(scores, float("-inf"))
        forced[:, script[min(n - self.start, len(script) - 1)]] = 0.0
        return forced
