"""The backends' registry: which engine runs some settings and why, what each engine
says of itself (availability with typed reasons, its own options), and the command
line built from it. Nothing is loaded."""

from __future__ import annotations

import argparse
import dataclasses

import pytest

from glmdesk.cli.options import add_model_arguments, load_settings
from glmdesk.core.engine_options import flat_options
from glmdesk.core.errors import ErrorInfo
from glmdesk.core.settings import LoadSettings
from glmdesk.engine.backends import (
    BACKENDS,
    EngineChoice,
    availability,
    create_backend,
    engine_choice,
    option_reasons,
    spec_for,
    wants_llamacpp,
)
from glmdesk.engine.backends.spec import unavailable

LLAMA = {"engine:llamacpp": None, "llamacpp:gpu": None}
NO_LLAMA = {"engine:llamacpp": unavailable("engine:llamacpp", "llamacpp_broken", "cannot be loaded")}


@pytest.mark.parametrize(
    ("settings", "found", "expected"),
    [
        (LoadSettings(), LLAMA, EngineChoice("llamacpp", "native")),
        (
            LoadSettings(model="/m/x.gguf"),
            NO_LLAMA,
            EngineChoice("transformers", "llamacpp_broken", "llamacpp"),
        ),
        (LoadSettings(), {}, EngineChoice("transformers", "llamacpp_missing", "llamacpp")),
        (LoadSettings(model="/some/folder"), LLAMA, EngineChoice("transformers", "source")),
        (LoadSettings(quantization="int4-wo"), LLAMA, EngineChoice("transformers", "options")),
        (LoadSettings(engine="transformers"), LLAMA, EngineChoice("transformers", "fallback")),
        (LoadSettings(engine="llamacpp", quantization="int8-wo"), LLAMA, EngineChoice("llamacpp", "chosen")),
        (LoadSettings(remote_url="http://gpu-box:8000/v1"), LLAMA, EngineChoice("remote", "server")),
    ],
)
def test_the_registry_says_which_engine_runs_and_why(settings, found, expected) -> None:
    assert engine_choice(settings, found) == expected


def test_every_reason_an_engine_gives_is_declared_and_every_note_exists() -> None:
    found = availability()
    assert "engine:llamacpp" in found and "quantization:8bit" in found and "device:cuda" in found
    declared = set(option_reasons())
    for key, info in found.items():
        assert info is None or (isinstance(info, ErrorInfo) and info.params["reason"] in declared), key
    for spec in BACKENDS:
        for reason, text in spec.notes.items():
            assert text and (
                reason == "chosen"
                or reason in declared
                or reason in {"native", "source", "options", "fallback", "vision_projector"}
            )


def test_each_engine_creates_its_own_backend_unloaded() -> None:
    remote = create_backend(LoadSettings(remote_url="http://gpu-box:8000/v1"))
    assert remote.name == "remote"
    remote.close()
    assert create_backend(LoadSettings(model="/some/folder")).name == "transformers"
    with pytest.raises(Exception, match="not available in this build"):
        spec_for("mlx")


def test_the_command_line_offers_every_engines_own_options() -> None:
    parser = argparse.ArgumentParser()
    add_model_arguments(parser)
    args = parser.parse_args(["--engine", "llamacpp", "--n-ctx", "4096", "--n-batch", "64", "--no-mmap"])
    settings = load_settings(args)
    assert (settings.engine, settings.n_ctx, settings.n_batch, settings.use_mmap) == (
        "llamacpp",
        4096,
        64,
        False,
    )
    defaults = load_settings(parser.parse_args(["--model", "/some/folder"]))
    assert dataclasses.replace(defaults, engine="auto") == LoadSettings(model="/some/folder")
    assert defaults.engine == "transformers"
    flags = [option.flag for spec in BACKENDS for option in spec.options]
    assert len(flags) == len(set(flags)) and all(flag.startswith("--") for flag in flags)


def test_each_engine_declares_its_options_dataclass_and_shows_its_fields() -> None:
    settings = LoadSettings()
    for spec in BACKENDS:
        assert isinstance(settings.options_of(spec.name), spec.options_type), spec.name
        fields = {f.name for f in dataclasses.fields(spec.options_type)}
        for option in spec.options:
            assert flat_options()[option.name][0] == spec.name and flat_options()[option.name][1] in fields


def test_each_engines_options_are_its_own_group_and_the_flat_names_still_work():
    from glmdesk.engine.backends.llamacpp import LlamaCppOptions
    from glmdesk.engine.backends.remote import RemoteOptions
    from glmdesk.engine.backends.transformers import TransformersOptions

    flat = LoadSettings("m", "int4-wo", device="cpu", threads=2, n_ctx=4096, remote_model="glm-4")
    grouped = LoadSettings(
        "m",
        device="cpu",
        threads=2,
        transformers=TransformersOptions(quantization="int4-wo"),
        llamacpp=LlamaCppOptions(n_ctx=4096),
        remote=RemoteOptions(model="glm-4"),
    )
    assert flat == grouped and hash(flat) == hash(grouped)
    assert (flat.quantization, flat.n_ctx, flat.remote_model) == ("int4-wo", 4096, "glm-4")
    changed = dataclasses.replace(flat, engine="llamacpp", n_batch=64)  # a flat field beside its group
    assert (changed.engine, changed.llamacpp, changed.quantization) == (
        "llamacpp",
        LlamaCppOptions(n_ctx=4096, n_batch=64),
        "int4-wo",
    )
    secret = LoadSettings(remote_url="http://gpu-box:8000/v1", remote_api_key="sk-secret")
    assert secret.remote.api_key == "sk-secret" and "sk-secret" not in repr(secret)
    with pytest.raises(ValueError, match="256 to 2097152"):
        dataclasses.replace(flat, n_ctx=5)
    with pytest.raises(ValueError, match="quantization"):
        LoadSettings(quantization="3bit")
    with pytest.raises(ValueError, match="needs the server's URL"):
        LoadSettings(engine="remote")


def test_an_engine_passed_over_is_still_the_preferred_one(monkeypatch) -> None:
    from glmdesk.engine.backends import llamacpp as llamacpp_spec

    monkeypatch.setattr(llamacpp_spec, "llama_cpp_available", lambda: False)
    assert wants_llamacpp(LoadSettings()) and not wants_llamacpp(LoadSettings(quantization="int4-wo"))
    assert not wants_llamacpp(LoadSettings(engine="transformers"))
    assert create_backend(LoadSettings(device="cpu"))._fallback  # it takes the file's weight-only scheme
    assert not create_backend(LoadSettings(device="cpu", engine="transformers"))._fallback


def test_importing_any_engine_module_registers_the_engines_options() -> None:
    """A script that imports only the loader (the benchmarks do) still has every engine's
    options: the engine package imports the registry."""
    import subprocess
    import sys

    code = (
        "from glmdesk.engine.backends.transformers.loader import load_model; from glmdesk.core.settings import LoadSettings;"
        "s = LoadSettings(precision='fp32', n_ctx=4096); print(s.precision, s.n_ctx)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "fp32 4096"
