"""What a backend says of itself before it is imported: :class:`BackendSpec`.

Each backend declares one spec, ``SPEC``, in its package's ``__init__`` (``llamacpp/``,
``remote/``, ``transformers/``: nothing heavy at import, as the Open model dialog reads
them on the GUI thread), and :data:`glmdesk.engine.backends.BACKENDS` lists what it
finds there. The spec says whether the engine
can run here (with the typed reason when not), which sources it accepts, when
``auto`` picks it, which load options apply to it and the schema of its own options
(:class:`OptionField`, which the Open model dialog renders), and creates the backend.

Nothing here imports the implementations: :meth:`BackendSpec.create` does, when asked.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from glmdesk.core.errors import ErrorInfo
from glmdesk.core.settings import LoadSettings


def QT_TRANSLATE_NOOP(context: str, text: str) -> str:  # noqa: N802 (Qt's name, for lupdate)
    """Mark ``text`` for translation in ``context`` (the UI translates it); returns ``text``."""
    return text


def unavailable(option: str, reason: str, message: str, **params) -> ErrorInfo:
    """An ``option_unavailable`` error for ``option`` (``quantization:4bit``...).

    Args:
        option: The option key (``engine:NAME`` for a whole engine).
        reason: One of a spec's :attr:`BackendSpec.reasons` (the UI words each).
        message: The English sentence (terminal and logs).
        **params: Extra values for the sentence (``bits``...).
    """
    return ErrorInfo("option_unavailable", message, {"option": option, "reason": reason, **params})


def is_gguf_model(model: str | None) -> bool:
    """Whether ``model`` names a GGUF file: the embedded default (``None`` or blank) or
    a path ending in ``.gguf`` (checked by name only; nothing is read)."""
    return model is None or not model.strip() or model.strip().lower().endswith(".gguf")


@dataclass(frozen=True)
class OptionField:
    """One of a backend's own load options, as the Open model dialog shows it.

    Attributes:
        name: The :class:`~glmdesk.core.settings.LoadSettings` field it sets.
        label: English label, marked for translation in :attr:`BackendSpec.context`.
        tooltip: English tooltip (same context).
        minimum: Smallest value (an ``int`` field); ignored for a ``bool`` one.
        maximum: Largest value.
        step: Spin step.
        special_text: Shown instead of ``minimum`` (``Automatic``...); ``{name}``
            placeholders are filled from ``special_values``.
        special_values: Values for ``special_text``'s placeholders.
        needs: An availability key (``llamacpp:gpu``) whose reason, when it has one,
            disables the field and becomes its tooltip.
        gpu_only: Offered only while the device is not the CPU.
        reason_label: English name of the field in the list of unavailable options
            (context ``OpenModelDialog``), for ``needs``.
        flag: The command line's option (``--n-ctx``; for an on/off field that is on by
            default, the one that turns it off: ``--no-mmap``).
        help: The command line's help (English).
    """

    name: str
    label: str
    tooltip: str
    minimum: int = 0
    maximum: int = 0
    step: int = 1
    special_text: str = ""
    special_values: Mapping[str, object] = field(default_factory=dict)
    needs: str = ""
    gpu_only: bool = False
    reason_label: str = ""
    flag: str = ""
    help: str = ""

    def is_bool(self) -> bool:
        """Whether the field is a check box (its settings default is a ``bool``)."""
        return isinstance(LoadSettings().option(self.name), bool)


@dataclass(frozen=True)
class EngineChoice:
    """The engine that runs some settings, and why (the UI words ``reason``).

    Attributes:
        engine: The engine's name.
        reason: ``chosen`` (named in the settings), or what the engine ``auto`` took
            claimed (:meth:`BackendSpec.claims`: ``server``, ``native``, ``source``,
            ``options``), or the ``option_unavailable`` reason of an engine ``auto``
            passed over (``llamacpp_missing``...).
        passed_over: The engine ``auto`` would have taken but could not (it is not
            available here); ``""`` when none, or when the settings named the engine.
        note: Why the engine taken instead runs (a load note for the model facts):
            the passed-over engine's :meth:`BackendSpec.vet` error, else ``None``.
    """

    engine: str
    reason: str
    passed_over: str = ""
    note: ErrorInfo | None = None


class BackendSpec:
    """A backend's self-description (subclass it; one instance, ``SPEC``, in the
    backend package's ``__init__``).

    Attributes:
        name: The engine's name (``LoadSettings.engine``, ``Capabilities.engine``).
        label: How the engine is named in the interface (a product name, not translated).
        local: Whether it runs models on this computer (offered in Open model's engine
            list; a server's backend has its own box there).
        reasons: The ``option_unavailable`` reasons its :meth:`availability` gives, the
            engine's own absence first.
        applies: The :class:`LoadSettings` fields of the torch-side options that matter
            to it (their controls are greyed out while another engine is chosen).
        options: Its own options, in the order Open model shows them.
        context: The translation context of its options' strings.
        options_type: Its options dataclass (frozen, every field with a default),
            registered by the registry (:func:`glmdesk.core.engine_options.register_engine`):
            for a shipped engine the typed :class:`LoadSettings` group named as the engine
            (``settings.llamacpp`` is a :class:`~glmdesk.core.engine_options.LlamaCppOptions`),
            for an added one its group in ``LoadSettings.added``; :attr:`options` name its
            fields by their flat names (:func:`~glmdesk.core.engine_options.flat_options`).
        renamed: ``{field: flat name}`` for fields of an added engine's
            :attr:`options_type` whose flat name differs from the field's (the shipped
            engines' are in :data:`glmdesk.core.engine_options.BUILT_IN`).
        auto_order: Where ``auto`` asks it (smaller first); the last claims every source.
        adaptive_threads: Whether ``threads=0`` adapts the thread count to load (else
            one thread per physical core).
        notes: ``{reason: English sentence}`` saying why the engine runs a model (an
            :class:`EngineChoice` reason; ``chosen`` when the user named it), marked for
            translation in the ``OpenModelDialog`` context; ``{engine}`` is the label of
            the engine that runs it. A missing engine's reasons (its :attr:`reasons`) are its own notes.
            ``vision_projector``: shown when the GGUF comes with a vision projector the
            engine cannot run (:mod:`glmdesk.engine.backends.gguf_vision`; ``{file}`` its name).
    """

    name = ""
    label = ""
    local = True
    reasons: tuple[str, ...] = ()
    applies: frozenset[str] = frozenset()
    options: tuple[OptionField, ...] = ()
    context = ""
    adaptive_threads = False
    notes: Mapping[str, str] = {}
    options_type: type | None = None
    renamed: Mapping[str, str] = {}
    auto_order = 50

    def availability(self) -> dict[str, ErrorInfo | None]:
        """``{option key: None or ErrorInfo}`` for the engine (``engine:NAME``) and its
        options. May import heavy modules: call it off the GUI thread."""
        return {}

    def available(self, availability: Mapping[str, ErrorInfo | None] | None = None) -> bool:
        """Whether the engine can run: from ``availability`` (what :meth:`availability`
        found, off the GUI thread) when given, else asked cheaply (nothing imported).
        Default: always."""
        return True

    def missing_reason(self, availability: Mapping[str, ErrorInfo | None] | None = None) -> str:
        """Why the engine cannot run (an ``option_unavailable`` reason), when
        :meth:`available` says so."""
        info = (availability or {}).get(f"engine:{self.name}")
        return info.params.get("reason", self.reasons[0]) if info else self.reasons[0]

    def vet(self) -> ErrorInfo | None:
        """Why this engine must not run now although it is installed (llama.cpp: a build
        that crashed or answered wrongly in its smoke test), or ``None``. May take
        seconds (a child process): call it where a load may. After a non-``None``
        answer :meth:`available` says ``False``."""
        return None

    def accepts(self, settings: LoadSettings) -> bool:
        """Whether the engine can run the source ``settings`` names (by name only)."""
        return True

    def claims(self, settings: LoadSettings) -> str | None:
        """Why ``auto`` should take this engine for ``settings`` (a reason code of
        :class:`EngineChoice`), or ``None``. The first claim in ``BACKENDS`` whose engine
        is available wins; the last spec claims every source."""
        return None

    def check(self, settings: LoadSettings) -> None:
        """Quick checks before the implementation is imported (headers, not weights).

        Raises:
            GlmdeskError: with the sentence.
        """
        return None

    def create(self, choice: EngineChoice):
        """A new, unloaded :class:`~glmdesk.engine.backends.base.Backend` (imports the
        implementation) for settings the registry chose this engine for, as ``choice``
        says (``choice.passed_over``: the engine ``auto`` prefers is not here).

        Raises:
            GlmdeskError: ``load_failed`` when this build cannot run the engine.
        """
        raise NotImplementedError
