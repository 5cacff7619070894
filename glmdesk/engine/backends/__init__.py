"""Backends: each way of answering behind the one :class:`Backend` interface, and the
registry that chooses one.

A backend is a package of its own here (``llamacpp/``, ``remote/``, ``transformers/``)
whose ``__init__`` is light (nothing heavy imported) and declares ``SPEC``, its
:class:`~glmdesk.engine.backends.spec.BackendSpec`. Importing this registry finds every
such package (:func:`discover`), orders the specs by :attr:`BackendSpec.auto_order`
(the order ``auto`` asks them: the remote backend when a server URL is set, llama.cpp
for a ``.gguf`` file when llama-cpp-python is installed, else transformers) into
:data:`BACKENDS`, and registers each one's options dataclass with
:mod:`glmdesk.core.engine_options`: the shipped engines' are ``LoadSettings`` fields
already (``settings.llamacpp``) and are only checked; an engine added beside them gets
its group in ``LoadSettings.added`` and its flat keywords. :func:`engine_choice` is the rule for ``auto``,
the one place it lives: :func:`create_backend`, the CLI and the Open model dialog all
ask it. Backends never import each other, nor this registry (import-linter's
independence contract in ``pyproject.toml`` covers every package here).
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
from collections.abc import Mapping

from glmdesk.core import engine_options
from glmdesk.core.distrusted_engines import is_distrusted
from glmdesk.core.errors import ErrorInfo, GlmdeskError
from glmdesk.core.settings import LoadSettings
from glmdesk.engine.backends.base import MEMORY_PROBES, SAMPLING_FIELDS, Backend, Capabilities
from glmdesk.engine.backends.llamacpp import llama_cpp_available, llamacpp_availability
from glmdesk.engine.backends.spec import BackendSpec, EngineChoice, is_gguf_model

__all__ = [
    "AUTO_RULE",
    "BACKENDS",
    "MEMORY_PROBES",
    "SAMPLING_FIELDS",
    "Backend",
    "BackendSpec",
    "Capabilities",
    "EngineChoice",
    "availability",
    "create_backend",
    "discover",
    "engine_choice",
    "engine_for",
    "is_gguf_model",
    "is_remote",
    "llama_cpp_available",
    "llamacpp_availability",
    "option_reasons",
    "preferred_engine",
    "spec_for",
    "specs",
    "wants_llamacpp",
]


def discover(paths=None, prefix: str = __name__ + ".") -> tuple[BackendSpec, ...]:
    """Every backend package's ``SPEC`` under ``paths`` (this package's folder), in
    :attr:`~BackendSpec.auto_order`, each one's options registered with
    :func:`glmdesk.core.engine_options.register_engine`.

    Args:
        paths: Folders to look in (``__path__`` of this package by default).
        prefix: The dotted name their packages import under.

    Raises:
        TypeError: for a backend package without a ``SPEC`` that is a :class:`BackendSpec`.
        ValueError: what registering its options raises (a name already taken).
    """
    specs = []
    for module in pkgutil.iter_modules(paths if paths is not None else __path__, prefix):
        if not module.ispkg:
            continue
        spec = getattr(importlib.import_module(module.name), "SPEC", None)
        if not isinstance(spec, BackendSpec):
            raise TypeError(f"{module.name} is a backend package without a BackendSpec SPEC.")
        specs.append(spec)
    specs.sort(key=lambda spec: spec.auto_order)
    for spec in specs:
        if spec.options_type is not None:
            engine_options.register_engine(spec.name, spec.options_type, spec.renamed)
    return tuple(specs)


#: Every backend, in the order ``auto`` asks them; the last one claims every source.
BACKENDS: tuple[BackendSpec, ...] = discover()


def specs() -> tuple[BackendSpec, ...]:
    """:data:`BACKENDS` as it is now (what the dialog, the CLI and the settings store
    read when they build, so a registry a test extends reaches them too)."""
    return BACKENDS


#: What ``auto`` does, in a line (the command line's help for ``--engine``).
AUTO_RULE = (
    "auto: llama.cpp for .gguf files (the embedded model too) when llama-cpp-python is "
    "installed and no transformers-only option is given, else transformers"
)


def spec_for(engine: str) -> BackendSpec:
    """The spec of the engine named ``engine``.

    Raises:
        GlmdeskError: ``load_failed`` for an engine this build does not have.
    """
    for spec in BACKENDS:
        if spec.name == engine:
            return spec
    raise GlmdeskError(
        "load_failed", f"The {engine} engine is not available in this build.", detail=f"engine {engine}"
    )


def engine_choice(
    settings: LoadSettings, availability: Mapping[str, ErrorInfo | None] | None = None
) -> EngineChoice:
    """The engine that will run ``settings``, and why.

    ``auto`` asks :data:`BACKENDS` in order and takes the first engine that claims the
    settings (:meth:`BackendSpec.claims`) and is available; an engine that claims them
    but is not available is named as passed over, with its reason. An engine named in
    the settings runs them, with ``auto``'s reason when ``auto`` takes it too (and none
    passed over), else its own claim, else ``chosen``.

    Args:
        settings: What to load.
        availability: What :func:`availability` found (the Open model dialog has it
            from the worker); ``None`` asks each engine cheaply (nothing imported).
    """
    auto = _auto_choice(settings, availability)
    if settings.engine == "auto":
        return auto
    if settings.engine == auto.engine:  # named, so nothing was passed over
        return EngineChoice(auto.engine, auto.reason)
    named = [spec for spec in BACKENDS if spec.name == settings.engine]
    claim = named[0].claims(settings) if named else None
    return EngineChoice(settings.engine, claim or "chosen")


#: The reason ``auto`` gives for passing over an engine that crashed while it answered
#: (:mod:`glmdesk.core.distrusted_engines`), until the user picks it by name.
ENGINE_CRASHED = "engine_crashed"


def _auto_choice(settings: LoadSettings, availability) -> EngineChoice:
    passed_over: EngineChoice | None = None
    for spec in BACKENDS:
        reason = spec.claims(settings)
        if reason is None:
            continue
        if is_distrusted(spec.name):
            passed_over = passed_over or EngineChoice(spec.name, ENGINE_CRASHED)
            continue
        if spec.available(availability):
            if passed_over is not None:
                return EngineChoice(spec.name, passed_over.reason, passed_over.engine)
            return EngineChoice(spec.name, reason)
        passed_over = passed_over or EngineChoice(spec.name, spec.missing_reason(availability))
    raise GlmdeskError(  # the last spec claims every source: only a broken registry gets here
        "load_failed", "No engine of this build can run this model.", detail="no engine claimed it"
    )


def engine_for(settings: LoadSettings) -> str:
    """The engine that will run ``settings``: ``settings.engine`` unless ``auto``
    (:func:`engine_choice`).

    ``auto`` is ``remote`` with a server's URL, ``llamacpp`` for a GGUF file when
    llama-cpp-python is installed and no transformers-only option is asked for (a torch
    quantization, the compiled decode step): llama.cpp runs the file's own quantized
    weights, several times faster on a CPU than transformers' dequantized copy.
    Otherwise ``transformers``.
    """
    return engine_choice(settings).engine


def preferred_engine(settings: LoadSettings) -> str:
    """The engine ``auto`` takes for ``settings`` once every engine is installed (the one
    it passes over now, when it does). Nothing is imported."""
    choice = _auto_choice(settings, None)
    if choice.reason == ENGINE_CRASHED:  # it would take it, but not by itself after a crash
        return choice.engine
    return choice.passed_over or choice.engine


def wants_llamacpp(settings: LoadSettings) -> bool:
    """Whether ``auto`` picks llama.cpp for ``settings`` once llama-cpp-python is
    installed: ``engine`` is ``auto`` and llama.cpp is :func:`preferred_engine` (a GGUF
    file, no server, no transformers-only option). Nothing is imported."""
    return settings.engine == "auto" and preferred_engine(settings) == "llamacpp"


def availability() -> dict[str, ErrorInfo | None]:
    """Which engines and load options work on this machine, every backend's
    :meth:`~BackendSpec.availability` together (``{"quantization:8bit": None,
    "engine:llamacpp": ErrorInfo(...), ...}``). Imports torch and llama-cpp-python:
    call it off the GUI thread."""
    out: dict[str, ErrorInfo | None] = {}
    for spec in BACKENDS:
        out.update(spec.availability())
    return out


def option_reasons() -> tuple[str, ...]:
    """Every ``option_unavailable`` reason a backend can give (the UI words each)."""
    return tuple(reason for spec in BACKENDS for reason in spec.reasons)


def create_backend(settings: LoadSettings) -> Backend:
    """A new, unloaded backend for ``settings`` (call its ``load``).

    The backend is told the :class:`EngineChoice` (an engine taken because the preferred
    one is not here takes its best setting for the model). An engine whose
    :meth:`BackendSpec.vet` objects (a llama.cpp build that crashed in its smoke test, run
    in a child process the first time a build is used) is passed over for ``auto``'s next
    one, even when named; the choice's ``note`` says why. The engine's quick checks run first (a GGUF file for the transformers engine has
    its tensor types read from the header, in milliseconds, before anything imports
    torch, which takes seconds).

    Raises:
        GlmdeskError: ``load_failed`` for an engine this build does not have or cannot
            run (llama.cpp without llama-cpp-python); what the engine's checks raise
            (``gguf_unsupported``, ``not_gguf``, ``lfs_pointer``, ``corrupt_weights``).
    """
    choice = engine_choice(settings)
    spec = spec_for(choice.engine)
    problem = spec.vet()
    if problem is not None and spec.local:
        # A native build that crashed (or answered wrongly) in its smoke test never runs:
        # ``auto``'s next engine does, with the reason as a load note.
        auto = _auto_choice(dataclasses.replace(settings, engine="auto"), None)
        choice = dataclasses.replace(auto, passed_over=auto.passed_over or choice.engine, note=problem)
        spec = spec_for(choice.engine)
    spec.check(settings)
    return spec.create(choice)


def is_remote(settings: LoadSettings) -> bool:
    """Whether a server answers ``settings``: the engine that runs them
    (:func:`engine_choice`) is not a local one (``remote``, or ``auto`` with a URL)."""
    return not spec_for(engine_choice(settings).engine).local
