"""Model loading, prompt formats, the decode loop, KV caches and memory: no Qt."""

import logging as _logging

# transformers imports torchao whenever it is installed (transformers/quantizers), and
# torchao then logs a warning for each optional CUDA kernel library that this torch
# build cannot load (mxfp8, cutlass) and torch's pytree a deprecation per enum it
# registers: notes about kernels glmdesk does not use, on every start. Only their
# errors reach the terminal.
for _name in ("torchao", "torch.utils._pytree"):
    _logging.getLogger(_name).setLevel(_logging.ERROR)

# An engine added beside the shipped ones registers its options with core when the
# backends' registry is imported (glmdesk.core.engine_options): import it with the
# engine, so a caller that only imports the loader (a benchmark, a script) knows them too.
from glmdesk.engine import backends as _backends  # noqa: E402, F401
