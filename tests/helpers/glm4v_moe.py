"""A tiny random GLM-4.5V / GLM-4.6V folder (``Glm4vMoeForConditionalGeneration``) built in
tests, and its session fixtures (imported by ``tests/conftest.py``).

The same tokenizer, chat template, vision tower and image processor settings as the
tiny GLM-4.1V (:mod:`tests.helpers.glm4v`: GLM-4.5V's processor is the same
``Glm4vProcessor`` with the same patch, merge and temporal sizes); the language model is
a mixture of experts as GLM-4.5-Air's, shrunk: 2 layers, the first dense
(``first_k_dense_replace`` 1), then 4 routed experts (2 per token) and one shared expert.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from glmdesk.core.settings import LoadSettings
from tests.helpers.glm4v import (
    VISION_CONFIG,
    text_config,
    token_config,
    vocab_size,
    write_processor,
    write_tokenizer,
)


def write_glm4v_moe_folder(folder: Path, seed: int = 0) -> Path:
    """Write a tiny random ``Glm4vMoeForConditionalGeneration`` folder with its processor.

    Text: as :func:`tests.helpers.glm4v.write_glm4v_folder` (hidden 128, 4 heads of 32,
    partial M-RoPE) with a dense first layer (intermediate 192) and a second layer of
    4 routed experts of 64 (2 chosen per token, top-k normalised) plus 1 shared expert.
    """
    import torch
    from transformers import Glm4vMoeConfig, Glm4vMoeForConditionalGeneration

    folder.mkdir(parents=True, exist_ok=True)
    ids = write_tokenizer(folder)
    config = Glm4vMoeConfig(
        text_config={
            **text_config(ids, vocab_size(ids)),
            "intermediate_size": 192,
            "moe_intermediate_size": 64,
            "n_routed_experts": 4,
            "num_experts_per_tok": 2,
            "n_shared_experts": 1,
            "first_k_dense_replace": 1,
            "n_group": 1,
            "topk_group": 1,
            "norm_topk_prob": True,
        },
        vision_config=VISION_CONFIG,
        **token_config(ids),
    )
    torch.manual_seed(seed)
    model = Glm4vMoeForConditionalGeneration(config).eval()
    model.save_pretrained(folder)
    write_processor(folder)
    return folder


@pytest.fixture(scope="session")
def glm4v_moe_folder(tmp_path_factory) -> Path:
    """A tiny random ``Glm4vMoeForConditionalGeneration`` folder (GLM-4.5V's layout)."""
    return write_glm4v_moe_folder(tmp_path_factory.mktemp("glm4v-moe") / "GLM-4.5V-tiny")


@pytest.fixture(scope="session")
def glm4v_moe_loaded(glm4v_moe_folder):
    """The tiny GLM-4.5V loaded by glmdesk's transformers loader (fp32, CPU)."""
    from glmdesk.engine.backends.transformers.loader import load_model

    return load_model(LoadSettings(model=str(glm4v_moe_folder), device="cpu"))
