"""Tiny GLM-4-0414 and GLM-Z1 folders, built once per session."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import glm4_0414_models


@pytest.fixture(scope="session")
def glm0414():
    """The fixture module (templates, special tokens, :func:`write_glm4_0414`)."""
    return glm4_0414_models


@pytest.fixture(scope="session")
def glm4_0414_folder(tmp_path_factory, glm0414) -> Path:
    """A tiny GLM-4-9B-0414-shaped folder (chat model, no reasoning)."""
    return glm0414.write_glm4_0414(tmp_path_factory.mktemp("glm4-0414") / "GLM-4-9B-0414")


@pytest.fixture(scope="session")
def glm_z1_folder(tmp_path_factory, glm0414) -> Path:
    """A tiny GLM-Z1-9B-0414-shaped folder: Z1's template opens ``<think>`` itself."""
    folder = tmp_path_factory.mktemp("glm-z1") / "GLM-Z1-9B-0414"
    return glm0414.write_glm4_0414(folder, glm0414.Z1_TEMPLATE, "THUDM/GLM-Z1-9B-0414")


@pytest.fixture(scope="session")
def glm45_folder(tmp_path_factory) -> Path:
    """A tiny GLM-4.5-Air-shaped folder (``Glm4MoeForCausalLM``, its chat template)."""
    from tests.helpers.glm45_models import write_glm45

    return write_glm45(tmp_path_factory.mktemp("glm45") / "GLM-4.5-Air")


@pytest.fixture(scope="session")
def glm47_flash_folder(tmp_path_factory) -> Path:
    """A tiny GLM-4.7-Flash-shaped folder (``Glm4MoeLiteForCausalLM``, GLM-4.7's template)."""
    from tests.helpers.glm47_flash_models import write_glm47_flash

    return write_glm47_flash(tmp_path_factory.mktemp("glm47-flash") / "GLM-4.7-Flash")
