"""A backend a contributor adds: one package, written into a folder the registry reads.

:data:`ECHO_PACKAGE` is the whole of a new backend, as ``docs/ARCHITECTURE.md`` says to
write one: ``engine/backends/echo/__init__.py`` with its options dataclass, its
:class:`~glmdesk.engine.backends.spec.BackendSpec` (``SPEC``) and the backend (which
answers by repeating the user's last message). :func:`install_echo` puts it where the
registry looks (a folder added to ``glmdesk.engine.backends.__path__``) and re-runs
discovery, exactly as a new folder in the source tree is found at import; nothing else
in glmdesk is told about it.
"""

from __future__ import annotations

import sys
from pathlib import Path

ECHO_PACKAGE = '''
"""The echo engine: answers with the user's last message, repeated (a test engine)."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from glmdesk.core.parts import TextPart
from glmdesk.engine.backends.base import Backend, Capabilities
from glmdesk.engine.backends.spec import QT_TRANSLATE_NOOP, BackendSpec, OptionField
from glmdesk.engine.chunk import GenerationChunk
from glmdesk.engine.info import LoadProgress, ModelInfo


@dataclass(frozen=True)
class EchoOptions:
    """The echo engine's options.

    Attributes:
        echo_repeat: How many times the answer repeats the message (1 to 5).
    """

    echo_repeat: int = 1

    def __post_init__(self) -> None:
        if not 1 <= self.echo_repeat <= 5:
            raise ValueError(f"The echo repeats 1 to 5 times, not {self.echo_repeat}.")


class EchoBackend(Backend):
    """Repeats the last message, word by word."""

    name = "echo"

    def __init__(self) -> None:
        self._info = None
        self._repeat = 1

    def load(self, settings, progress=None, cancel: threading.Event | None = None) -> ModelInfo:
        if progress is not None:
            progress(LoadProgress("loading"))
        self._repeat = settings.options_of("echo").echo_repeat
        self._info = ModelInfo(
            name="echo", family="generic-hf", source_kind="folder", location="echo",
            device="cpu", dtype="fp32", quantization="none", footprint_mib=0.0,
            context_length=4096, kv_bytes_per_token=0, prompt_format="echo", engine="echo",
        )
        return self._info

    @property
    def info(self) -> ModelInfo:
        if self._info is None:
            raise RuntimeError("no model is loaded")
        return self._info

    def stream(self, messages, params, cache=None, stop=None, conversation=None):
        words = " ".join([messages[-1].content] * self._repeat).split(" ")
        for n, word in enumerate(words, 1):
            if stop is not None and stop.is_set():
                yield GenerationChunk(n_generated=n - 1, finish_reason="cancelled")
                return
            piece = word if n == 1 else " " + word
            finish = "stop" if n == len(words) else None
            yield GenerationChunk(
                parts=(TextPart(piece),), n_generated=n, prompt_tokens=1, finish_reason=finish
            )

    def capabilities(self) -> Capabilities:
        return Capabilities(engine="echo", kv_strategies={"full": None}, context_length=4096)

    def close(self) -> None:
        self._info = None


class EchoSpec(BackendSpec):
    """Runs any source; ``auto`` never takes it (only when named)."""

    name = "echo"
    label = "echo"
    auto_order = 95
    options_type = EchoOptions
    context = "EchoOptions"
    options = (
        OptionField(
            "echo_repeat",
            QT_TRANSLATE_NOOP("EchoOptions", "Repeat"),
            QT_TRANSLATE_NOOP("EchoOptions", "How many times the answer repeats the message"),
            minimum=1,
            maximum=5,
            flag="--echo-repeat",
            help="echo engine: how many times the answer repeats the message",
        ),
    )

    def create(self, choice=None):
        return EchoBackend()


SPEC = EchoSpec()
'''


def install_echo(folder: Path, monkeypatch) -> None:
    """Write :data:`ECHO_PACKAGE` as ``folder/echo/__init__.py``, make ``folder`` one of
    the registry's folders and re-run its discovery (``monkeypatch`` undoes both; the
    echo engine's options are unregistered at teardown by the caller's fixture)."""
    from glmdesk.engine import backends

    (folder / "echo").mkdir()
    (folder / "echo" / "__init__.py").write_text(ECHO_PACKAGE, encoding="utf-8")
    monkeypatch.setattr(backends, "__path__", [*backends.__path__, str(folder)])
    monkeypatch.setattr(backends, "BACKENDS", backends.discover())


def uninstall_echo() -> None:
    """Forget the echo engine's options and module (after :func:`install_echo`)."""
    from glmdesk.core import engine_options

    engine_options.unregister_engine("echo")
    sys.modules.pop("glmdesk.engine.backends.echo", None)
