"""The server's endpoints, one module each: its request model (pydantic), what it turns
the body into, and ``register(app, state, guarded)`` adding its routes.
``REQUEST_MODELS`` names the bodies it reads (the field names of validation errors).

A new endpoint is one module here: :func:`discover` finds every module of this folder
that has a ``register``, and :func:`glmdesk.server.app.create_app` registers them in
:data:`ENDPOINTS`' order (by name: routes of different paths do not depend on it).
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType


def discover(paths=None, prefix: str = __name__ + ".") -> tuple[ModuleType, ...]:
    """Every endpoint module under ``paths`` (this package's folder), by name.

    Raises:
        TypeError: for a module here without ``register`` and ``REQUEST_MODELS``.
    """
    found = []
    for info in sorted(
        pkgutil.iter_modules(paths if paths is not None else __path__, prefix), key=lambda m: m.name
    ):
        module = importlib.import_module(info.name)
        if not callable(getattr(module, "register", None)) or not hasattr(module, "REQUEST_MODELS"):
            raise TypeError(f"{info.name} is in the endpoints folder without register() and REQUEST_MODELS.")
        found.append(module)
    return tuple(found)


#: The endpoint modules :func:`glmdesk.server.app.create_app` registers, in order.
ENDPOINTS: tuple[ModuleType, ...] = discover()
