"""Test-wide settings and the one embedded model.

Every test gets its own glmdesk home; converted models are shared through
``GLMDESK_MODEL_CACHE``; the embedded model (SmolLM2-135M-Instruct, fp32, CPU) is loaded
once per session here and shared by the engine, server and UI tests (their conftests
name it ``embedded``, ``backend`` and ``shared_model``). Helpers that tests import
(tiny model builders, ``ForceTokens``, the fake backend) live in ``tests/helpers``.
"""

from __future__ import annotations

import os
import tempfile

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# Tests never reach a model hub.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
# A window on a machine without llama-cpp-python would build it (minutes): never in a test
# (the builder's and the window's tests turn it back on with fakes).
os.environ["GLMDESK_LLAMACPP_BUILD"] = "0"
# The installed llama.cpp build's smoke test (a child process) once (per build) for the
# whole run and later runs.
os.environ.setdefault(
    "GLMDESK_LLAMACPP_VERDICTS", os.path.join(tempfile.gettempdir(), "glmdesk-test-llamacpp-verdicts.json")
)
# One converted copy of the embedded model for the whole run (and later runs).
os.environ.setdefault("GLMDESK_MODEL_CACHE", os.path.join(tempfile.gettempdir(), "glmdesk-test-models"))


@pytest.fixture(autouse=True)
def glmdesk_home(tmp_path, monkeypatch):
    """Point data, cache and config directories at ``tmp_path``."""
    home = tmp_path / "glmdesk-home"
    monkeypatch.setenv("GLMDESK_HOME", str(home))
    return home


@pytest.fixture(scope="session")
def embedded_folder():
    """Hugging Face folder of SmolLM2-135M-Instruct converted from the shipped GGUF."""
    from glmdesk.engine.files.sources import embedded_model_folder

    return embedded_model_folder()


#: The session's embedded model once loaded (read by :func:`_embedded_left_as_found`).
_LOADED: list = []


@pytest.fixture(scope="session")
def embedded(embedded_folder):
    """The embedded model loaded for chat (fp32, CPU): the session's one load of it."""
    from glmdesk.core.settings import LoadSettings
    from glmdesk.engine.backends.transformers.loader import load_model

    loaded = load_model(LoadSettings())
    _LOADED.append(loaded)
    yield loaded
    _LOADED.clear()
    loaded.close()


@pytest.fixture(autouse=True)
def _embedded_left_as_found():
    """After each test: the shared embedded model's kept KV caches are dropped and a
    test's own ``logits_processors`` is removed, so no test sees another's conversation
    state."""
    yield
    for loaded in _LOADED:
        if loaded.model is not None:
            loaded.kv_pool.clear()
            vars(loaded).pop("logits_processors", None)


# The tiny GLM-4.1V folder, its loaded model and test photos: session fixtures shared by
# the engine, server and UI tests (built in tests/helpers/glm4v.py).
from tests.helpers.glm4v import blue_photo, glm4v_folder, glm4v_loaded, red_photo  # noqa: E402, F401
from tests.helpers.glm4v_moe import glm4v_moe_folder, glm4v_moe_loaded  # noqa: E402, F401
from tests.helpers.glm46v import glm46v_folder, glm46v_loaded, glm_ocr_folder, glm_ocr_loaded  # noqa: E402, F401

# A test past the per-test limit (pyproject.toml) is named, from an xdist worker too.
from tests.helpers.time_limits import pytest_timeout_set_timer  # noqa: E402, F401
