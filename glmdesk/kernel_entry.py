"""The packaged app as the code interpreter's kernel: ``glmdesk --glmdesk-kernel BYTES -f FILE``.

From source, the interpreter (:mod:`glmdesk.engine.tools.interpreter`) starts
``python -m ipykernel_launcher``. In a PyInstaller bundle ``sys.executable`` is the
app itself, which has no ``-m``: it would open another window. So the bundle's
executable is started with :data:`KERNEL_FLAG` first; the entry script
(``packaging/glmdesk_main.py``) sees it before anything else is imported and calls
:func:`run_kernel`, which sets the address-space limit and runs ipykernel's
launcher in this process (what ``ipykernel_launcher``'s ``__main__`` does).

Imports only the standard library until ipykernel: no torch, no Qt in the kernel.
"""

from __future__ import annotations

import sys

#: First argument that makes the app's executable run as a kernel.
KERNEL_FLAG = "--glmdesk-kernel"


def is_kernel_launch(argv: list[str]) -> bool:
    """True when ``argv`` (``sys.argv``) asks for a kernel: ``[exe, KERNEL_FLAG, ...]``."""
    return len(argv) > 1 and argv[1] == KERNEL_FLAG


def kernel_argv(entry: list[str], memory_bytes: int) -> list[str]:
    """The kernel spec's ``argv`` for an app started as ``entry`` (``[sys.executable]``
    in a bundle, ``[python, glmdesk_main.py]`` in tests).

    Args:
        entry: The command that starts the app's entry script.
        memory_bytes: Address-space limit for the kernel process, in bytes (0: none).
    """
    return [*entry, KERNEL_FLAG, str(int(memory_bytes)), "-f", "{connection_file}"]


def run_kernel(args: list[str]) -> int:
    """Run an IPython kernel in this process until it is shut down.

    Args:
        args: What follows :data:`KERNEL_FLAG`: the address-space limit in bytes,
            then ipykernel's own arguments (``-f CONNECTION_FILE``).

    Returns:
        0 when the kernel exits normally.

    Raises:
        SystemExit: with a sentence for a missing or bad limit.
    """
    if not args or not args[0].isdigit():
        raise SystemExit(f"{KERNEL_FLAG} needs the memory limit in bytes, then the kernel's arguments")
    limit = int(args[0])
    if limit > 0:
        try:
            import resource
        except ImportError:  # Windows: no RLIMIT_AS (the source launcher has none either)
            resource = None
        if resource is not None:
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    sys.argv = [sys.argv[0], *args[1:]]
    from ipykernel import kernelapp

    kernelapp.launch_new_instance()
    return 0
