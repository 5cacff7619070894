"""ChatGLM-6B, the first generation: recognised so it can be refused with a reason.

A different network (2D positions, 130528/150528 ids), which glmdesk does not run.
Source: THUDM/chatglm-6b ``config.json`` (``position_encoding_2d``, ``inner_hidden_size``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from glmdesk.core.settings import SamplingParams
from glmdesk.engine.families.base import ModelFamily
from glmdesk.engine.families.files import chatglm_generation


def _recognise(config: Mapping[str, Any], folder: Path) -> str | None:
    return "chatglm-v1" if chatglm_generation(config, folder) == "chatglm-v1" else None


CHATGLM_V1 = ModelFamily(
    name="chatglm-v1",
    title="ChatGLM-6B (first generation)",
    variants=("chatglm-v1",),
    sampling_defaults=SamplingParams(temperature=0.95, top_p=0.7, max_new_tokens=2048),
    recognise=_recognise,
    unsupported="it is a first-generation ChatGLM-6B checkpoint, a different network that glmdesk does not run.",
)
