"""A new family is one module (issue 26): the registry finds every ModelFamily defined in
a module of its folder and tries them in their recognise_order."""

from __future__ import annotations

import sys

import pytest

from glmdesk.engine import families

TOY = """
from glmdesk.core.settings import SamplingParams
from glmdesk.engine.families.base import ModelFamily
from glmdesk.engine.families.glm4 import GLM4  # an import of another family is not a second one

TOY = ModelFamily(
    name="toy-glm",
    title="Toy GLM",
    variants=("toy-glm",),
    sampling_defaults=SamplingParams(temperature=0.3),
    model_id_markers=("toy-glm",),
    recognise=lambda config, folder: config.get("model_type") == "toy_glm",
    recognise_order=35,
)
"""


@pytest.fixture
def toy_folder(tmp_path, monkeypatch):
    (tmp_path / "toy_glm.py").write_text(TOY, encoding="utf-8")
    monkeypatch.setattr(families, "__path__", [*families.__path__, str(tmp_path)])
    yield
    sys.modules.pop("glmdesk.engine.families.toy_glm", None)


def test_a_new_module_is_found_in_its_place(toy_folder) -> None:
    found = families.discover()
    names = [family.name for family in found]
    assert names.count("toy-glm") == 1 and names.count("glm4") == 1
    assert names.index("glm4-0414") < names.index("toy-glm") < names.index("glm4")
    assert names[-1] == "generic" and [f.name for f in families.FAMILIES] == [
        n for n in names if n != "toy-glm"
    ]


def test_two_families_may_not_share_a_variant(tmp_path, monkeypatch) -> None:
    (tmp_path / "twin.py").write_text(TOY.replace('variants=("toy-glm",)', 'variants=("toy-glm", "glm4")'))
    monkeypatch.setattr(families, "__path__", [*families.__path__, str(tmp_path)])
    try:
        with pytest.raises(ValueError, match="'glm4' is a variant of both"):
            families.discover()
    finally:
        sys.modules.pop("glmdesk.engine.families.twin", None)
