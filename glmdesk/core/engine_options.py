"""Which engines there are, and their own load options: a registry the engine fills.

:class:`~glmdesk.core.settings.LoadSettings` holds what every engine reads (model,
device, threads, engine) and one options dataclass per engine (llama.cpp's context,
transformers' quantization, a server's URL). Those dataclasses belong to the backends
that read them (``glmdesk.engine.backends.NAME``), and core never imports the engine,
so each backend's options are registered here when the backends' registry is imported
(:mod:`glmdesk.engine.backends` registers every backend it finds). The pattern is
transformers' ``AutoConfig.register``: the plain-data layer keeps the table, the
packages that own the types fill it.

Every field of a registered dataclass is also a flat name of ``LoadSettings``
(``n_ctx`` reads ``settings.llamacpp.n_ctx``), unless the engine gives it another one
(the remote engine's ``url`` is ``remote_url``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class EngineOptions:
    """One engine's entry in the registry.

    Attributes:
        engine: The engine's name (``LoadSettings.engine``, the group's attribute name).
        options_type: Its frozen options dataclass; ``options_type()`` is its default.
        flat: ``{flat name: field}`` for every field (the field's own name unless the
            engine renamed it).
    """

    engine: str
    options_type: type
    flat: Mapping[str, str]


_ENGINES: dict[str, EngineOptions] = {}
_FLAT: dict[str, tuple[str, str]] = {}


def register_engine(engine: str, options_type: type, renamed: Mapping[str, str] | None = None) -> None:
    """Register ``engine`` and its options dataclass (idempotent for the same type).

    Args:
        engine: The engine's name: a Python identifier, not ``auto`` and not a field of
            ``LoadSettings`` (``model``, ``device``, ``threads``, ``engine``, ``options``).
        options_type: A frozen dataclass whose fields all have defaults. It may define
            ``require(self) -> None``, called when a ``LoadSettings`` names this engine
            (raise ``ValueError`` with a sentence when the options cannot run it: the
            remote engine without a URL).
        renamed: ``{field: flat name}`` for fields whose flat name differs.

    Raises:
        ValueError: for a bad name, a type that is not a dataclass, another type under
            the same name, or a flat name another engine already has.
    """
    if not engine.isidentifier() or engine in _RESERVED:
        raise ValueError(f"{engine!r} cannot name an engine.")
    if not dataclasses.is_dataclass(options_type):
        raise ValueError(f"The {engine} engine's options must be a dataclass, not {options_type!r}.")
    known = _ENGINES.get(engine)
    if known is not None:
        if known.options_type is options_type:
            return
        raise ValueError(f"The {engine} engine is registered already, with {known.options_type.__name__}.")
    renamed = dict(renamed or {})
    flat = {renamed.get(f.name, f.name): f.name for f in dataclasses.fields(options_type)}
    for name in flat:
        owner = _FLAT.get(name)
        if owner is not None or name in _RESERVED:
            raise ValueError(f"The option name {name!r} of the {engine} engine is taken.")
    _ENGINES[engine] = EngineOptions(engine, options_type, flat)
    _FLAT.update({name: (engine, field) for name, field in flat.items()})


def unregister_engine(engine: str) -> None:
    """Forget ``engine`` (tests that register one of their own); no error when unknown."""
    entry = _ENGINES.pop(engine, None)
    if entry is not None:
        for name in entry.flat:
            _FLAT.pop(name, None)


def engines() -> tuple[str, ...]:
    """Every valid ``LoadSettings.engine``: ``auto`` and the registered engines, in the
    order they were registered."""
    return ("auto", *_ENGINES)


def engine_options() -> tuple[EngineOptions, ...]:
    """Every registered engine's entry, in registration order."""
    return tuple(_ENGINES.values())


def options_of(engine: str) -> EngineOptions | None:
    """The entry of ``engine``, or ``None`` when it is not registered."""
    return _ENGINES.get(engine)


def flat_options() -> dict[str, tuple[str, str]]:
    """``{flat name: (engine, field)}`` for every registered engine's options."""
    return dict(_FLAT)


#: Names an engine or one of its options cannot take (``LoadSettings``' own fields).
_RESERVED = frozenset({"auto", "model", "device", "threads", "engine", "options"})
