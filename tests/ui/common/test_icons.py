"""The window's SVG icons exist and draw."""

from __future__ import annotations

import pytest

from glmdesk.ui.common.icons import ICON_NAMES, ui_icon


@pytest.mark.parametrize("name", ICON_NAMES)
def test_each_icon_draws(qapp, name: str) -> None:
    image = ui_icon(name).pixmap(24, 24).toImage()
    assert not image.isNull() and image.width() == 24
    assert any(image.pixelColor(x, y).alpha() > 0 for x in range(24) for y in range(24))  # not blank


def test_an_unknown_icon_is_refused() -> None:
    with pytest.raises(KeyError, match="no icon named"):
        ui_icon("nope")
