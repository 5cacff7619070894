"""The window's small icons (send, stop, attach, settings, more), drawn as SVG in
``resources/icons/ui``.

Each icon is drawn in colours that read on both themes (a mid grey, or white on the
accent blue), so no icon needs a second, dark-theme copy.
"""

from __future__ import annotations

from functools import cache

from PySide6.QtGui import QIcon

from glmdesk.resources import resource_path

#: The icons there are, by name (``resources/icons/ui/<name>.svg``).
ICON_NAMES = ("send", "stop", "attach", "settings", "more")


@cache
def ui_icon(name: str) -> QIcon:
    """The icon ``name`` (one of :data:`ICON_NAMES`), made once.

    Raises:
        KeyError: ``name`` is not one of :data:`ICON_NAMES`.
    """
    if name not in ICON_NAMES:
        raise KeyError(f"no icon named {name!r}; there are {', '.join(ICON_NAMES)}")
    return QIcon(str(resource_path("icons", "ui", f"{name}.svg")))
