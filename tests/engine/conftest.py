"""Engine fixtures: the real embedded model, loaded once per session."""

from __future__ import annotations

import pytest

from glmdesk.core.settings import LoadSettings
from glmdesk.engine.loader import load_model
from glmdesk.engine.sources import embedded_model_folder


@pytest.fixture(scope="session")
def embedded_folder():
    """Hugging Face folder of SmolLM2-135M-Instruct converted from the shipped GGUF."""
    return embedded_model_folder()


@pytest.fixture(scope="session")
def embedded(embedded_folder):
    """The embedded model loaded for chat (fp32, CPU)."""
    return load_model(LoadSettings())


@pytest.fixture(scope="session")
def embedded_model(embedded):
    """The bare transformers model of :func:`embedded`."""
    return embedded.model
