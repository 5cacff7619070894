"""Test-wide settings: every test gets its own glmdesk home; converted models are shared."""

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
# One converted copy of the embedded model for the whole run (and later runs).
os.environ.setdefault("GLMDESK_MODEL_CACHE", os.path.join(tempfile.gettempdir(), "glmdesk-test-models"))


@pytest.fixture(autouse=True)
def glmdesk_home(tmp_path, monkeypatch):
    """Point data, cache and config directories at ``tmp_path``."""
    home = tmp_path / "glmdesk-home"
    monkeypatch.setenv("GLMDESK_HOME", str(home))
    return home
