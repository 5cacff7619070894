"""Import the engine before the window appears.

Importing torch and transformers holds the GIL for hundreds of milliseconds at a
time; done on the worker thread while the window is up, it stalls the window's
event loop. The app calls :func:`preload_engine` once, behind its splash screen.
"""

from __future__ import annotations

import importlib

#: Modules ``from_pretrained`` and the backends import on first use (optional ones may be missing).
WARM_MODULES = (
    "accelerate",
    "torch._inductor.lowering",
    "safetensors.torch",
    "transformers.tokenization_utils_tokenizers",
    "transformers.models.llama.modeling_llama",
    "transformers.models.glm.modeling_glm",
    "transformers.models.glm4.modeling_glm4",
    "transformers.models.auto.tokenization_auto",
    "transformers.convert_slow_tokenizer",
    "sentencepiece",
)


def preload_engine(first_load=None) -> None:
    """Import torch, transformers and the engine modules on the calling thread.

    A few seconds on two cores, once per process.

    Args:
        first_load: The :class:`~glmdesk.core.settings.LoadSettings` the window will
            load first; its tokenizer is built here too when its files are on disk (one
            ~100 ms native call that holds the GIL; see
            :func:`glmdesk.engine.backends.transformers.placement.prebuild_tokenizer`).
    """
    import transformers

    import glmdesk.engine.backends.transformers.backend
    import glmdesk.engine.backends.transformers.loader
    import glmdesk.engine.backends.transformers.options
    import glmdesk.engine.backends.transformers.placement  # noqa: F401
    import glmdesk.engine.cache
    import glmdesk.engine.decode.generate

    _ = transformers.AutoModelForCausalLM, transformers.AutoTokenizer  # resolve the lazy modules
    for name in WARM_MODULES:
        try:
            importlib.import_module(name)
        except Exception:
            pass
    if first_load is not None:
        glmdesk.engine.backends.transformers.placement.prebuild_tokenizer(first_load)
