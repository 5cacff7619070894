"""What every ``torch.compile`` of a decode step needs: a compiler check, a code object of
its own, and Inductor's code cache in glmdesk's cache folder.

The static decode path (:mod:`glmdesk.engine.decode.static_decode`) compiles its one-token
step with these; :mod:`glmdesk.engine.backends.transformers.options` asks :func:`compiler_missing_reason` to grey
out *Compile the decode step* before any load.

Sources: PyTorch's ``torch.compile`` documentation (TorchDynamo's per-code-object cache
and ``torch._dynamo.config.recompile_limit``; Inductor's ``TORCHINDUCTOR_CACHE_DIR``).
"""

from __future__ import annotations

import os
import shutil
import sys
import types
from pathlib import Path

#: C++ compilers TorchInductor's CPU backend can call (``CXX`` overrides).
COMPILERS = ("g++", "c++", "clang++", "cl")


def compiler_missing_reason() -> str | None:
    """Why ``torch.compile`` cannot build code on this machine (``None`` when it can).

    Checked before compiling, so a load does not spend a minute tracing to fail at
    the first C++ build: the packaged app (PyInstaller) lacks Python's build tools,
    and Inductor needs a C++ compiler on ``PATH`` (or named by ``CXX``).

    Returns:
        An English reason (``packaged`` in it for the packaged app), or ``None``.
    """
    if getattr(sys, "frozen", False):
        return "the packaged app cannot compile (no Python build tools)"
    if not (os.environ.get("CXX") or any(shutil.which(name) for name in COMPILERS)):
        return "no C++ compiler was found (g++, clang++ or cl)"
    return None


def own_function(method: types.MethodType) -> types.MethodType:
    """``method`` bound to a copy of its function with its own code object.

    TorchDynamo keeps compiled graphs, and counts recompiles (8 at most), per code
    object: with a copy per step, a model's graphs are freed with its step and a
    session that loads many models never reaches the limit (past it, Dynamo would
    silently run the step uncompiled).

    Args:
        method: A bound method (``step._one_token``).

    Returns:
        The same method on a fresh code object, bound to the same instance.
    """
    func = method.__func__
    copy = types.FunctionType(
        func.__code__.replace(), func.__globals__, func.__name__, func.__defaults__, func.__closure__
    )
    return types.MethodType(copy, method.__self__)


def use_cache_dir(cache_dir: Path) -> None:
    """Point Inductor's code cache at ``cache_dir`` unless the user chose one, so a later
    start reuses the generated code (``TORCHINDUCTOR_CACHE_DIR``).

    Importing transformers already sets ``TORCHINDUCTOR_CACHE_DIR`` to torch's default
    (a folder under the temporary directory, emptied on reboot), so a value equal to
    that default is replaced; any other value was set by the user and is kept.
    """
    from torch._inductor.runtime.cache_dir_utils import default_cache_dir

    current = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    if current is None or os.path.abspath(current) == os.path.abspath(default_cache_dir()):
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(cache_dir)
