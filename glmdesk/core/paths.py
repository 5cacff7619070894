"""Where glmdesk keeps its files (platformdirs).

``GLMDESK_HOME`` overrides every directory (tests and portable installs): data in
``$GLMDESK_HOME/data``, cache in ``$GLMDESK_HOME/cache``, config in
``$GLMDESK_HOME/config``.
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

APP = "glmdesk"


def _base(kind: str) -> Path:
    home = os.environ.get("GLMDESK_HOME")
    if home:
        path = Path(home) / kind
    elif kind == "data":
        path = Path(platformdirs.user_data_dir(APP, appauthor=False))
    elif kind == "cache":
        path = Path(platformdirs.user_cache_dir(APP, appauthor=False))
    else:
        path = Path(platformdirs.user_config_dir(APP, appauthor=False))
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return path


def data_dir() -> Path:
    """User data directory (history database); created owner-only if missing."""
    return _base("data")


def cache_dir() -> Path:
    """User cache directory (converted model copies); created if missing.

    ``GLMDESK_MODEL_CACHE`` overrides it for converted models only, so a test run
    can share one conversion across tests with separate homes.
    """
    override = os.environ.get("GLMDESK_MODEL_CACHE")
    if override:
        path = Path(override)
        path.mkdir(parents=True, exist_ok=True)
        return path
    return _base("cache")


def wheel_dir() -> Path:
    """Wheels glmdesk built (llama-cpp-python, :mod:`glmdesk.engine.llamacpp_build`), under
    the user cache directory: shared by every checkout and environment of this user."""
    path = _base("cache") / "wheels"
    path.mkdir(parents=True, exist_ok=True)
    return path


def llamacpp_verdicts_file() -> Path:
    """The remembered smoke verdicts of llama.cpp builds (JSON,
    :mod:`glmdesk.engine.llamacpp_smoke`), in the user cache directory; the file
    ``GLMDESK_LLAMACPP_VERDICTS`` names instead when set (a test run shares one)."""
    override = os.environ.get("GLMDESK_LLAMACPP_VERDICTS")
    if override:
        Path(override).parent.mkdir(parents=True, exist_ok=True)
        return Path(override)
    return _base("cache") / "llamacpp-verdicts.json"


def config_dir() -> Path:
    """User config directory; created if missing."""
    return _base("config")


def interpreter_root() -> Path:
    """Parent of the code interpreter's per-conversation working folders (under the
    user data directory; created owner-only if missing)."""
    path = _base("data") / "interpreter"
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return path
