"""Server settings and the stop-string filter (plain values, no server)."""

from __future__ import annotations

import pytest

from glmdesk.server.answer import StopStrings
from glmdesk.server.config import ServeSettings, is_loopback


def test_all_interfaces_without_a_key_is_refused():
    with pytest.raises(ValueError, match="give an API key too"):
        ServeSettings(host="0.0.0.0")
    assert ServeSettings(host="0.0.0.0", api_key="k").host == "0.0.0.0"
    assert "k" not in repr(ServeSettings(host="0.0.0.0", api_key="k"))
    assert ServeSettings().host == "127.0.0.1" and ServeSettings().url == "http://127.0.0.1:8000/v1"
    assert is_loopback("localhost") and is_loopback("::1") and not is_loopback("192.168.1.2")
    with pytest.raises(ValueError, match="port"):
        ServeSettings(port=70000)


def test_stop_strings_hold_back_a_possible_start():
    stops = StopStrings(("</end>",))
    assert stops.push("Hello <") == "Hello "
    assert stops.push("/e") == ""
    assert stops.push("x") == "</ex"
    assert stops.push(" more </en") == " more "
    assert stops.push("d> tail") == "" and stops.stopped
    assert stops.flush() == "" and stops.push("after") == ""


def test_stop_strings_earliest_of_several_and_flush():
    stops = StopStrings(("bc", "d"))
    assert stops.push("abxd") == "abx" and stops.stopped
    held = StopStrings(("xyz",))
    assert held.push("abx") == "ab" and held.flush() == "x"
    assert StopStrings(()).push("anything") == "anything"
