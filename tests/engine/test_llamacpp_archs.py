"""Which GGUF architectures the installed llama.cpp runs, read from its library, and the
shapes it would abort on, refused before loading."""

from __future__ import annotations

import pytest

from glmdesk.engine.backends.llamacpp.archs import library_knows, unrunnable_shape
from glmdesk.engine.backends.llamacpp.backend import check_runnable
from glmdesk.engine.files.gguf_header import GGUFHeader


def test_the_library_names_the_glm5_architectures_the_gguf_package_may_lack():
    pytest.importorskip("llama_cpp")
    assert library_knows("glm5-next") and library_knows("glm-dsa") and library_knows("deepseek2")
    assert not library_knows("no-such-architecture")
    check_runnable(GGUFHeader("m.gguf", 3, "glm5-next", {"glm5-next.hyper_connection.count": 4}), "m")


@pytest.mark.parametrize(
    ("architecture", "metadata", "refused"),
    [
        ("glm-dsa", {"glm-dsa.attention.indexer.key_length": 128}, None),
        ("glm-dsa", {"glm-dsa.attention.indexer.key_length": 16}, "indexer keys are 16 wide"),
        ("glm5-next", {"glm5-next.attention.indexer.key_length": 96}, "indexer keys are 96 wide"),
        ("glm5-next", {"glm5-next.hyper_connection.count": 2}, "other than 4 hyper-connection streams"),
        (
            "glm5-next",
            {"glm5-next.hyper_connection.count": 4, "glm5-next.attention.indexer.key_length": 64},
            None,
        ),
        ("deepseek2", {"deepseek2.attention.indexer.key_length": 16}, None),  # no indexer there
    ],
)
def test_shapes_llamacpp_would_abort_on_are_named(architecture, metadata, refused):
    reason = unrunnable_shape(architecture, metadata)
    assert (reason is None) if refused is None else (refused in (reason or ""))
