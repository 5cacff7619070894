"""Engines that crashed while they answered, which ``auto`` no longer chooses by itself.

``distrusted_engines.json`` in glmdesk's data folder (:func:`paths.data_dir`):
``{engine: {"model", "signal", "crash_log", "when"}}``. An engine goes in when a start
finds the marker of a run that crashed while it generated
(:func:`glmdesk.core.run_marker.dead_runs`); it comes out when the user picks it by name
(Open model's engine list, ``glmdesk chat --engine NAME``). The engine registry's
``auto`` rule passes a distrusted engine over
(:func:`glmdesk.engine.backends.engine_choice`, reason ``engine_crashed``).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path

from glmdesk.core import paths


def _path() -> Path:
    return paths.data_dir() / "distrusted_engines.json"


def distrusted_engines() -> dict[str, dict]:
    """``{engine: {"model", "signal", "crash_log", "when"}}``: engines whose process crashed
    while they generated and that the user has not picked by name since (``when``: s
    since the Unix epoch). Never raises."""
    try:
        data = json.loads(_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def is_distrusted(engine: str) -> bool:
    """Whether ``auto`` should pass ``engine`` over (:func:`distrusted_engines`)."""
    return engine in distrusted_engines()


def _write(data: dict[str, dict]) -> None:
    path = _path()
    with contextlib.suppress(OSError):
        if not data:
            path.unlink(missing_ok=True)
            return
        part = path.with_name(f"{path.name}.{os.getpid()}.part")
        part.write_text(json.dumps(data, indent=1), encoding="utf-8")
        os.replace(part, path)


def distrust_engine(engine: str, model: str = "", signal: str = "", crash_log: str = "") -> None:
    """Record that ``engine`` crashed while it answered with ``model`` (``signal``: the
    fatal signal's name, ``crash_log``: its path); ``auto`` passes it over from now on.
    A remote server's engine is never recorded: its failures do not end this process."""
    if not engine or engine == "remote":
        return
    data = distrusted_engines()
    data[engine] = {"model": model, "signal": signal, "crash_log": crash_log, "when": time.time()}
    _write(data)


def trust_engine(engine: str) -> None:
    """The user picked ``engine`` by name: ``auto`` may choose it again."""
    data = distrusted_engines()
    if data.pop(engine, None) is not None:
        _write(data)
