"""The order in which families claim a model is one list, read top to bottom
(``FAMILIES`` in glmdesk/engine/families/__init__.py): the first family that claims a
folder, a GGUF file or a served model's id names it."""

from __future__ import annotations

import dataclasses

import pytest

from glmdesk.engine import families
from glmdesk.engine.families import FAMILIES, GENERIC, in_order
from glmdesk.engine.families.glm4 import GLM4


def test_the_specific_are_tried_before_the_general_and_the_generic_last() -> None:
    names = [family.name for family in FAMILIES]
    assert names.index("glm-z1") < names.index("glm4-0414") < names.index("glm4")
    assert names[0] == "chatglm-v1" and names[-1] == "generic" and len(set(names)) == len(names)


def test_a_folder_two_families_would_claim_goes_to_the_one_listed_first(monkeypatch) -> None:
    toy = dataclasses.replace(
        GLM4,
        name="toy-glm",
        title="Toy GLM",
        variants=("toy-glm",),
        recognise=lambda config, folder: "toy-glm",
    )
    monkeypatch.setattr(families, "FAMILIES", in_order(toy, *FAMILIES))
    assert families.recognise_folder({"model_type": "chatglm"}, None) == "toy-glm"
    monkeypatch.setattr(families, "FAMILIES", in_order(*FAMILIES[:-1], toy, GENERIC))
    assert families.recognise_folder({"model_type": "toy"}, None) == "toy-glm"


def test_two_families_may_not_share_a_variant_and_the_generic_one_comes_last() -> None:
    twin = dataclasses.replace(GLM4, name="twin", variants=("twin", "glm4"))
    with pytest.raises(ValueError, match="'glm4' is a variant of both"):
        in_order(GLM4, twin, GENERIC)
    with pytest.raises(ValueError, match="generic family must come last"):
        in_order(GENERIC, GLM4)
