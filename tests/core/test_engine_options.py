"""An engine's own options reach LoadSettings once its backend registers them, and
core names no engine (glmdesk.core.engine_options)."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest

from glmdesk.core import engine_options
from glmdesk.core.settings import LoadSettings


@dataclasses.dataclass(frozen=True)
class ToyOptions:
    """A test engine's options: a level and a name."""

    level: int = 1
    label: str = "toy"

    def __post_init__(self) -> None:
        if not 0 <= self.level <= 9:
            raise ValueError(f"The toy level is 0 to 9, not {self.level}.")

    def require(self) -> None:
        if self.label == "unnamed":
            raise ValueError("The toy engine needs a label.")


@pytest.fixture
def toy():
    engine_options.register_engine("toy", ToyOptions, {"label": "toy_label"})
    yield
    engine_options.unregister_engine("toy")


def test_a_registered_engine_has_its_group_its_flat_names_and_its_checks(toy) -> None:
    assert "toy" in engine_options.engines()
    flat = LoadSettings(level=3, toy_label="x")
    grouped = LoadSettings(added=(("toy", ToyOptions(level=3, label="x")),))
    assert flat == grouped and hash(flat) == hash(grouped)
    assert (flat.options_of("toy"), flat.option("level"), flat.option("toy_label")) == (
        ToyOptions(3, "x"),
        3,
        "x",
    )
    changed = dataclasses.replace(flat, level=5, engine="toy")  # a flat name beside the group
    assert changed.options_of("toy") == ToyOptions(5, "x") and changed.engine == "toy"
    with pytest.raises(ValueError, match="toy level is 0 to 9"):
        dataclasses.replace(flat, level=12)
    with pytest.raises(ValueError, match="needs a label"):  # refused only once it is named
        LoadSettings(engine="toy", toy_label="unnamed")
    assert LoadSettings(toy_label="unnamed").option("toy_label") == "unnamed"
    with pytest.raises(TypeError, match="takes ToyOptions"):
        LoadSettings(added=(("toy", "level 3"),))


def test_names_that_are_taken_are_refused(toy) -> None:
    engine_options.register_engine("toy", ToyOptions, {"label": "toy_label"})  # the same again: no-op
    with pytest.raises(ValueError, match="registered already"):
        engine_options.register_engine("toy", dataclasses.make_dataclass("Other", [("a", int, 0)]))
    with pytest.raises(ValueError, match="'level' of the other engine is taken"):
        engine_options.register_engine("other", dataclasses.make_dataclass("Other", [("level", int, 0)]))
    with pytest.raises(ValueError, match="cannot name an engine"):
        engine_options.register_engine("model", ToyOptions)
    with pytest.raises(ValueError, match="must be a dataclass"):
        engine_options.register_engine("plain", dict)
    assert "other" not in engine_options.engines()


def test_unknown_names_say_where_engine_options_come_from() -> None:
    with pytest.raises(TypeError, match="unknown keywords: n_context .*glmdesk.engine.backends"):
        LoadSettings(n_context=4096)
    with pytest.raises(ValueError, match="Unknown engine 'magic'"):
        LoadSettings(engine="magic")
    with pytest.raises(AttributeError, match="n_context"):
        LoadSettings().n_context  # type: ignore[attr-defined]  # noqa: B018
    with pytest.raises(KeyError, match="no engine option 'n_context'"):
        LoadSettings().option("n_context")


def test_the_shipped_engines_groups_are_fields_a_reader_sees() -> None:
    """Each shipped engine's options are a typed field of ``LoadSettings`` (no lookup by
    name behind attribute access): what a type checker and ``dataclasses.fields`` see."""
    fields = {f.name: f.type for f in dataclasses.fields(LoadSettings)}
    assert list(fields) == [
        "model",
        "device",
        "threads",
        "engine",
        "transformers",
        "llamacpp",
        "remote",
        "added",
        "chat_format",
        "chat_template",
    ]
    assert (fields["transformers"], fields["llamacpp"], fields["remote"]) == (
        "TransformersOptions",
        "LlamaCppOptions",
        "RemoteOptions",
    )
    assert not hasattr(LoadSettings, "__getattr__")


def test_core_alone_knows_the_shipped_engines_and_no_other() -> None:
    """In a process that imports only core, the shipped engines' options are there, no
    engine is imported, and no added engine is known."""
    code = (
        "from glmdesk.core import engine_options; from glmdesk.core.settings import LoadSettings;"
        "import sys; s = LoadSettings(model='m', threads=2, n_ctx=4096);"
        "print(engine_options.engines(), s.llamacpp.n_ctx, s.added, 'glmdesk.engine' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "('auto', 'transformers', 'llamacpp', 'remote') 4096 () False"
