"""A new backend is one package (issue 26): dropped where the registry looks, it is an
engine the command line offers, with its options, and it answers. Nothing else in
glmdesk names it (tests/helpers/new_backend.py is all of it)."""

from __future__ import annotations

import dataclasses

import pytest

from glmdesk.core.settings import LoadSettings
from glmdesk.engine.backends import create_backend, engine_choice, spec_for
from tests.helpers.cli import run_cli
from tests.helpers.new_backend import install_echo, uninstall_echo


@pytest.fixture
def echo(tmp_path, monkeypatch):
    install_echo(tmp_path, monkeypatch)
    yield spec_for("echo")
    uninstall_echo()


def test_the_new_package_is_an_engine_with_its_options(echo) -> None:
    settings = LoadSettings(engine="echo", echo_repeat=2)
    assert settings.options_of("echo").echo_repeat == 2
    assert dataclasses.replace(settings, echo_repeat=3).option("echo_repeat") == 3
    with pytest.raises(ValueError, match="repeats 1 to 5 times"):
        LoadSettings(echo_repeat=9)
    assert engine_choice(settings).engine == "echo"
    assert engine_choice(LoadSettings()).engine != "echo"  # auto never takes it: it claims nothing
    backend = create_backend(settings)
    backend.load(settings)
    from glmdesk.core.messages import ChatMessage
    from glmdesk.core.settings import ParamsBox

    text = "".join(c.text for c in backend.stream([ChatMessage("user", "hi there")], ParamsBox()))
    assert text == "hi there hi there"


def test_the_command_line_offers_it_and_its_option(echo) -> None:
    done = run_cli("chat", "--engine", "echo", "--echo-repeat", "3", "--prompt", "ping")
    assert done.returncode == 0, done.stderr
    assert "ping ping ping" in done.stdout
    usage = run_cli("chat", "--help").stdout
    assert "--echo-repeat" in usage and "echo" in usage
    refused = run_cli("chat", "--engine", "echo", "--echo-repeat", "7", "--prompt", "ping")
    assert refused.returncode != 0 and "repeats 1 to 5 times" in refused.stderr
