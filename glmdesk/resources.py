"""Find glmdesk's resource files (icons, translations, style sheets) wherever it runs.

The folder is ``resources/`` at the repository root. It is found, in this order:

1. frozen (PyInstaller): ``sys._MEIPASS/resources`` (the spec bundles it there);
2. installed from a wheel or sdist: ``glmdesk/_resources`` inside the package
   (pyproject.toml maps the package ``glmdesk._resources`` onto ``resources/``);
3. a source checkout or an editable install: ``resources/`` next to the ``glmdesk``
   package folder.

A candidate counts only when it holds the app icon, so an unrelated ``resources``
folder (e.g. in ``site-packages``) is never taken for ours.
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path

_MARKER = ("icons", "glmdesk.svg")


def _candidates() -> list[Path]:
    package = Path(__file__).resolve().parent
    found = []
    frozen = getattr(sys, "_MEIPASS", None)
    if frozen:
        found.append(Path(frozen) / "resources")
    found.append(package / "_resources")
    found.append(package.parent / "resources")
    return found


@functools.cache
def _root() -> Path:
    candidates = _candidates()
    for folder in candidates:
        if folder.joinpath(*_MARKER).is_file():
            return folder
    looked = ", ".join(str(c) for c in candidates)
    raise FileNotFoundError(f"glmdesk's resource folder was not found (looked in: {looked}).")


def resource_path(*parts: str) -> Path:
    """Path of a file or folder under glmdesk's resources.

    Args:
        *parts: Path components below the resources folder, e.g.
            ``resource_path("icons", "glmdesk-256.png")`` or
            ``resource_path("translations")``. None gives the folder itself.

    Returns:
        The absolute path. Its existence is not checked (optional resources such as
        a translation for one locale may be absent); check it where that matters.

    Raises:
        FileNotFoundError: when no resources folder is found at all (a broken
            install or bundle); the message lists the places looked in.
    """
    return _root().joinpath(*parts)
