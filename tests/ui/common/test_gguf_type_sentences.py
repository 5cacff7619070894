"""The window words a GGUF tensor type the engine cannot read, offering llama.cpp only when
it could run the file (issue 30 §3)."""

from __future__ import annotations

import pytest

from glmdesk.core.errors import ErrorInfo
from glmdesk.ui.common.i18n import install_translators
from glmdesk.ui.common.messages import error_sentence

PARAMS = {"path": "/m", "file": "m.gguf", "architecture": "llama", "engine": "transformers"}


@pytest.fixture
def chinese(qapp):
    """glmdesk's zh_CN translators installed for one test."""
    assert install_translators(qapp, "zh_CN") == "zh_CN"
    yield qapp
    install_translators(qapp, "en")


def sentence(types: str, llamacpp: bool) -> str:
    return error_sentence(
        ErrorInfo("gguf_unsupported", "FALLBACK", {**PARAMS, "tensor_types": types, "llamacpp": llamacpp})
    )


def test_the_type_is_named_and_llama_cpp_offered_only_when_it_could_run_the_file():
    offered = sentence("I32", True)
    assert "m.gguf holds tensors of type I32" in offered and "open it with the llama.cpp engine" in offered
    neither = sentence("Q8_1", False)
    assert "Q8_1" in neither and "neither the transformers engine nor the llama.cpp engine" in neither
    assert "open it with the llama.cpp engine" not in neither and "architecture" not in neither
    # The architecture sentence stays for files whose types are all readable.
    assert "architecture chatglm" in error_sentence(
        ErrorInfo("gguf_unsupported", "FALLBACK", {**PARAMS, "architecture": "chatglm"})
    )


def test_the_sentences_are_chinese(chinese):
    assert "Q8_1 类型的张量" in sentence("Q8_1", False) and "都无法运行" in sentence("Q8_1", False)
    assert "请用 llama.cpp 引擎打开" in sentence("I32", True)
