"""Test-wide settings: every test gets its own glmdesk home; converted models are shared."""

from __future__ import annotations

import importlib.util
import os
import tempfile
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# Tests never reach a model hub.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
# One converted copy of the embedded model for the whole run (and later runs).
os.environ.setdefault("GLMDESK_MODEL_CACHE", os.path.join(tempfile.gettempdir(), "glmdesk-test-models"))


@pytest.fixture(autouse=True)
def glmdesk_home(tmp_path, monkeypatch):
    """Point data, cache and config directories at ``tmp_path``."""
    home = tmp_path / "glmdesk-home"
    monkeypatch.setenv("GLMDESK_HOME", str(home))
    return home


def _glm4v_fixtures():
    """``tests/glm4v_fixtures.py`` (the import mode is importlib: loaded by path)."""
    spec = importlib.util.spec_from_file_location(
        "glm4v_fixtures", Path(__file__).with_name("glm4v_fixtures.py")
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# The tiny GLM-4.1V folder, its loaded model and test photos: session fixtures shared
# by the engine, server and UI tests.
_vision = _glm4v_fixtures()
glm4v_folder = _vision.glm4v_folder
glm4v_loaded = _vision.glm4v_loaded
red_photo = _vision.red_photo
blue_photo = _vision.blue_photo
