"""One table of the sampling fields: every place that shows, stores, parses or sends one reads it.

Each :class:`SamplingField` row of :data:`SAMPLING_TABLE` says everything about one
field of :class:`SamplingParams` (defined below, beside its table): its valid range and
the sentence that refuses a value outside it, the sidebar's control (kind, range, step,
label, tooltip, whether it sits under "Advanced"), the command-line help, the name in
an OpenAI / vLLM request, and whether the decode loop reads it before every token or
once per answer. From the rows:

- ``SamplingParams.__post_init__`` validates (:meth:`SamplingField.check`);
- the sidebar builds its controls (``glmdesk.ui.sidebar.sampling_controls``);
- the settings store saves and reads ``sampling/<name>`` (``glmdesk.ui.common.settings_store``);
- ``glmdesk chat`` gets ``--<name>`` options (``glmdesk.cli.options``);
- ``glmdesk serve``'s request body gets the request fields (``glmdesk.server.schemas``),
  read by :func:`params_from_request`;
- the remote backend's request is :func:`request_fields`.

A new sampling control is its row in :data:`SAMPLING_TABLE` and its field on
:class:`SamplingParams`, both here; what the decode loop does with it goes in
``glmdesk.engine.decode.sampling``. Defaults are ``SamplingParams``' field defaults, replaced
per model family by its published demo settings (``glmdesk.engine.families.sampling_defaults``). A subclass of
``SamplingParams`` with one more field and ``TABLE = (*SamplingParams.TABLE, row)`` is a
params type every consumer above accepts (they read ``type(params).TABLE`` or take the
type), which is how a test adds a row.

English strings the window shows (labels, tooltips, control texts, refusals) are
marked with :func:`QT_TRANSLATE_NOOP` in the ``Sidebar`` context, so that
``scripts/update_translations.py`` extracts them here and the sidebar translates them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, ClassVar, TypeVar

#: Kinds of sidebar control: a slider with a spin box, a spin box, a text entry
#: (a whole number or empty, for optional fields).
CONTROLS = ("slider", "spin", "entry")


def QT_TRANSLATE_NOOP(context: str, text: str) -> str:
    """Mark ``text`` for Qt's ``lupdate`` in ``context``; returns ``text`` unchanged.

    The same name and meaning as Qt's macro (this module imports no Qt): lupdate
    extracts the literal arguments, the UI translates the text at run time with
    ``QCoreApplication.translate(context, text)``.
    """
    return text


@dataclass(frozen=True)
class SamplingField:
    """One sampling field: its range, its control, its option and its request name.

    Attributes:
        name: The ``SamplingParams`` attribute (also the settings key
            ``sampling/<name>`` and the option ``--<name with dashes>``).
        type: ``float`` or ``int``.
        minimum: The lowest valid value.
        maximum: The highest valid value; ``None``: no upper bound.
        rule: The valid values in words, completing "<label> must be ...": for
            example ``"between 0 and 1"``.
        label: The English label (the sidebar translates it; error sentences use it).
        help: The command-line option's help (English).
        tooltip: The control's tooltip (English, translated by the sidebar).
        optional: ``None`` is a valid value (the seed: a fresh one each answer).
        too_low: The sentence for a value below ``minimum`` when it needs more than
            ``rule`` (``{value}`` is the value).
        control: The sidebar's control, one of :data:`CONTROLS`.
        control_range: The control's ``(lowest, highest)``; default: the valid range.
            A control may accept values the field refuses, so that the refusal can say
            why (see ``refused``).
        slider_minimum: Where a slider starts, when above the control's lowest value.
        step: The control's step.
        decimals: Decimals the control shows (floats).
        special_text: Shown by a spin box at its lowest value (``"off"``), or by an
            empty entry (``"random"``).
        suffix: A spin box's unit (``" tokens"``).
        advanced: The row sits under the sidebar's "Advanced" toggle.
        refused: The sidebar's sentence for a value its control allows and the field
            refuses (``{value}``, ``{kept}``: the value in force, ``{maximum}``); empty:
            the field's own English sentence is shown.
        live: The decode loop reads it before every token (a change applies from the
            next token); ``False``: once, when an answer starts.
        request_name: The field's name in an OpenAI / vLLM request (default ``name``).
        request_aliases: Other names ``glmdesk serve`` reads, preferred over
            ``request_name`` when given (OpenAI's newer names).
        extra: A vLLM extra sampling parameter (not in OpenAI's API): the remote backend
            sends it in ``extra_body``, and only when it is not ``off``, so a server
            without it (OpenAI's own) is not sent a field it refuses.
        off: The value that turns the field off.
        request_off: The value a request uses for "off" when it is not ``off``
            (vLLM's ``top_k`` -1); read as ``off``.

    Raises:
        ValueError: for an inconsistent row (an unknown control, a spin box without
            an upper bound...).
    """

    name: str
    type: type
    minimum: float
    maximum: float | None
    rule: str
    label: str
    help: str
    tooltip: str = ""
    optional: bool = False
    too_low: str = ""
    control: str = "spin"
    control_range: tuple[float, float] | None = None
    slider_minimum: float | None = None
    step: float = 1
    decimals: int = 0
    special_text: str = ""
    suffix: str = ""
    advanced: bool = False
    refused: str = ""
    live: bool = True
    request_name: str = ""
    request_aliases: tuple[str, ...] = ()
    extra: bool = False
    off: float | None = None
    request_off: float | None = None

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise ValueError(f"a sampling field's name must be an identifier, not {self.name!r}")
        if self.type not in (int, float):
            raise ValueError(f"sampling field {self.name}: the type is int or float, not {self.type!r}")
        if self.control not in CONTROLS:
            raise ValueError(f"sampling field {self.name}: unknown control {self.control!r}")
        if self.control == "entry" and not (self.type is int and self.optional and self.minimum >= 0):
            raise ValueError(
                f"sampling field {self.name}: an entry holds an optional whole number, 0 or more"
            )
        if self.control != "entry" and self.control_range is None and self.maximum is None:
            raise ValueError(f"sampling field {self.name}: a {self.control} needs a control_range")
        if not self.request_name:
            object.__setattr__(self, "request_name", self.name)

    @property
    def option(self) -> str:
        """The command-line option: ``--top-p`` for ``top_p``."""
        return "--" + self.name.replace("_", "-")

    @property
    def bounds(self) -> tuple[float, float]:
        """The control's ``(lowest, highest)`` value."""
        if self.control_range is not None:
            return self.control_range
        return (self.minimum, self.maximum if self.maximum is not None else self.minimum)

    def check(self, value: Any) -> None:
        """Refuse ``value`` when it is not valid for this field.

        Raises:
            ValueError: with a sentence a user can act on (the label, the rule and
                the value).
        """
        if value is None and self.optional:
            return
        if self.type is float and (not isinstance(value, (int, float)) or not math.isfinite(value)):
            raise ValueError(f"{self.name} must be a finite number, not {value!r}.")
        whole = isinstance(value, (int, float)) and math.isfinite(value) and int(value) == value
        if self.type is int and not whole:
            raise ValueError(f"{self.label} must be {self.rule}, not {value}.")
        if value is None:  # not reached: a number is checked above (this narrows the type)
            raise ValueError(f"{self.label} must be {self.rule}, not {value}.")
        if value < self.minimum and self.too_low:
            raise ValueError(self.too_low.format(value=value))
        if value < self.minimum or (self.maximum is not None and value > self.maximum):
            raise ValueError(f"{self.label} must be {self.rule}, not {value}.")


#: Fields of :class:`SamplingParams` that are not rows of the table: switches that are
#: not numbers, each with its own control and request field (see its docstring).
SWITCHES = ("enable_thinking", "template_kwargs")

#: The sampling fields of :class:`~glmdesk.core.settings.SamplingParams`, in the sidebar's order.
SAMPLING_TABLE: tuple[SamplingField, ...] = (
    SamplingField(
        "temperature", float, 0.0, 2.0, "between 0 and 2 (0 means greedy)",
        label=QT_TRANSLATE_NOOP("Sidebar", "Temperature"),
        help="0 to 2; 0 is greedy (always the likeliest token)",
        tooltip=QT_TRANSLATE_NOOP("Sidebar", "0 means greedy: always the most likely token."),
        control="slider", step=0.01, decimals=2,
    ),
    SamplingField(
        "top_p", float, 0.0, 1.0, "between 0 and 1",
        label=QT_TRANSLATE_NOOP("Sidebar", "Top-p"),
        help="nucleus sampling, 0 to 1; 1 is off",
        tooltip=QT_TRANSLATE_NOOP(
            "Sidebar", "Keep the smallest set of tokens whose probability adds up to this; 1 is off."
        ),
        control="slider", step=0.01, decimals=2,
    ),
    SamplingField(
        "top_k", int, 0, None, "a whole number, 0 or more (0 is off)",
        label=QT_TRANSLATE_NOOP("Sidebar", "Top-k"),
        help="sample from the k likeliest tokens, 0 or more; 0 is off",
        tooltip=QT_TRANSLATE_NOOP("Sidebar", "Keep only the k most likely tokens; 0 is off."),
        control_range=(0, 1000), special_text=QT_TRANSLATE_NOOP("Sidebar", "off"),
        extra=True, off=0, request_off=-1,
    ),
    SamplingField(
        "min_p", float, 0.0, 1.0, "between 0 and 1",
        label=QT_TRANSLATE_NOOP("Sidebar", "Min-p"),
        help="drop tokens below min-p x the likeliest's probability, 0 to 1; 0 is off",
        tooltip=QT_TRANSLATE_NOOP(
            "Sidebar", "Drop tokens less likely than this times the most likely one; 0 is off."
        ),
        step=0.01, decimals=2, special_text=QT_TRANSLATE_NOOP("Sidebar", "off"), advanced=True,
        extra=True, off=0.0,
    ),
    SamplingField(
        "repetition_penalty", float, 1.0, 10.0, "at most 10",
        label=QT_TRANSLATE_NOOP("Sidebar", "Repetition penalty"),
        help="1 to 10; 1 is off",
        tooltip=QT_TRANSLATE_NOOP("Sidebar", "1.0 is off; higher values discourage repeating tokens."),
        too_low="Repetition penalty must be at least 1.0 (1.0 is off); values below 1.0 would make "
        "the model repeat itself, so {value} is refused.",
        # The control accepts 0-2 so that a value below 1.0 can be refused with its reason.
        control="slider", control_range=(0.0, 2.0), slider_minimum=1.0, step=0.01, decimals=2,
        advanced=True,
        refused=QT_TRANSLATE_NOOP(
            "Sidebar",
            "Repetition penalty {value} is refused: below 1.0 it would reward repetition. "
            "{kept} stays in force (1.0 is off).",
        ),
        extra=True, off=1.0,
    ),
    SamplingField(
        "max_new_tokens", int, 1, None, "1 or more",
        label=QT_TRANSLATE_NOOP("Sidebar", "Max new tokens"),
        help="longest answer, in tokens, 1 or more (capped by the room the context window has left)",
        control_range=(1, 32768), suffix=QT_TRANSLATE_NOOP("Sidebar", " tokens"),
        request_name="max_tokens", request_aliases=("max_completion_tokens",),
    ),
    SamplingField(
        "seed", int, 0, 2**63 - 1, "a whole number from 0 to 2^63-1",
        label=QT_TRANSLATE_NOOP("Sidebar", "Seed"),
        help="random seed, 0 to 2^63-1, for repeatable sampling",
        tooltip=QT_TRANSLATE_NOOP(
            "Sidebar", "Empty: a new random seed for every answer. Read when an answer starts."
        ),
        optional=True, control="entry", special_text=QT_TRANSLATE_NOOP("Sidebar", "random"),
        advanced=True, refused=QT_TRANSLATE_NOOP("Sidebar", "The seed must be at most {maximum}."),
        live=False,
    ),
    SamplingField(
        "thinking_budget", int, 0, None, "a whole number, 0 or more (0 is off)",
        label=QT_TRANSLATE_NOOP("Sidebar", "Thinking budget"),
        help="tokens a reasoning model (GLM-Z1) may think before its thinking is closed and it answers, "
        "0 or more; 0 is off",
        tooltip=QT_TRANSLATE_NOOP(
            "Sidebar",
            "A reasoning model thinks at most this many tokens; then its thinking is closed and it "
            "answers. 0 is off.",
        ),
        control_range=(0, 32768), special_text=QT_TRANSLATE_NOOP("Sidebar", "off"),
        suffix=QT_TRANSLATE_NOOP("Sidebar", " tokens"), advanced=True, extra=True, off=0,
    ),
)  # fmt: skip


@dataclass(frozen=True)
class SamplingParams:
    """Decoding parameters read by the decode loop before every token.

    Attributes:
        temperature: Softmax temperature; ``0`` means greedy (argmax). Range 0-2.
        top_p: Nucleus sampling mass (Holtzman et al. 2019). ``1`` is off; ``0``
            keeps only the most likely token.
        top_k: Keep the k most likely tokens; ``0`` is off.
        min_p: Drop tokens below ``min_p`` x the top probability; ``0`` is off.
        repetition_penalty: CTRL penalty (Keskar et al. 2019) on every token already
            in the prompt or answer; ``1.0`` is off. Values below 1.0 would reward
            repetition and are refused.
        max_new_tokens: Upper bound on generated tokens, in tokens.
        seed: Seed for the sampler's random generator; ``None`` draws a fresh one.
        thinking_budget: For a reasoning model: tokens it may think, in tokens; once
            reached, the close marker (``</think>``) is written and it answers, as
            llama.cpp's ``--reasoning-budget`` does. ``0`` is off.
        enable_thinking: For a model with a thinking switch (GLM-4.5/4.6/4.7's chat
            template ``enable_thinking``): ``False`` answers without reasoning,
            ``True`` reasons first, ``None`` keeps the model's own setting (its
            template's default, or ``--no-thinking``). Read once, when an answer
            starts. Not a row of the table (a switch, not a number): the window's
            sidebar has its own control, ``glmdesk serve`` reads vLLM's
            ``chat_template_kwargs``, the remote backend sends them.
        template_kwargs: Further values the chat template reads, as ``(name, value)``
            pairs (vLLM's ``chat_template_kwargs`` besides ``enable_thinking``:
            GLM-4.7's ``clear_thinking``); values are JSON scalars (text, numbers,
            true/false, null). Read once, when an answer starts; ``glmdesk serve``
            takes them from requests, the remote backend sends them.

    Ranges, labels, options and request names: one row each in :data:`SAMPLING_TABLE`
    (also importable from :mod:`glmdesk.core.settings`).

    Raises:
        ValueError: when a value is out of its range, with the reason.
    """

    temperature: float = 0.7
    top_p: float = 0.9
    top_k: int = 0
    min_p: float = 0.0
    repetition_penalty: float = 1.0
    max_new_tokens: int = 512
    seed: int | None = None
    thinking_budget: int = 0
    enable_thinking: bool | None = None
    template_kwargs: tuple[tuple[str, str | int | float | bool | None], ...] = ()

    #: The table the fields are validated, shown, stored and sent by; a subclass with
    #: one more field adds its row.
    TABLE: ClassVar[tuple[SamplingField, ...]] = SAMPLING_TABLE

    def __post_init__(self) -> None:
        for row in self.TABLE:
            row.check(getattr(self, row.name))
        if self.enable_thinking is not None and not isinstance(self.enable_thinking, bool):
            raise ValueError(f"enable_thinking must be true, false or unset, not {self.enable_thinking!r}.")
        # JSON gives lists (a stored answer's settings): kept as tuples, hashable
        pairs = tuple(tuple(p) if isinstance(p, tuple | list) else p for p in self.template_kwargs)
        object.__setattr__(self, "template_kwargs", pairs)
        for pair in pairs:
            if not (isinstance(pair, tuple) and len(pair) == 2 and isinstance(pair[0], str)):
                raise ValueError(f"template_kwargs holds (name, value) pairs, not {pair!r}.")
            name, value = pair
            if name == "enable_thinking":
                raise ValueError("enable_thinking is its own field, not one of template_kwargs.")
            if value is not None and not isinstance(value, str | int | float | bool):
                raise ValueError(
                    f"The chat template value {name!r} must be text, a number, true, false or null, not {value!r}."
                )

    @property
    def greedy(self) -> bool:
        """True when decoding is argmax (temperature 0)."""
        return self.temperature == 0.0


def field_names(table: tuple[SamplingField, ...] = SAMPLING_TABLE) -> tuple[str, ...]:
    """The fields' names, in the table's order."""
    return tuple(row.name for row in table)


def live_fields(table: tuple[SamplingField, ...] = SAMPLING_TABLE) -> frozenset[str]:
    """The fields a local engine reads before every token (the rest: once per answer)."""
    return frozenset(row.name for row in table if row.live)


def request_fields(params: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The OpenAI request fields and vLLM's extra fields for ``params``.

    Args:
        params: A ``SamplingParams`` (or subclass); its type's ``TABLE`` names the fields.

    Returns:
        ``(fields, extra)``: ``fields`` go into the request as they are (a ``None``
        value is left out: no seed), ``extra`` into ``extra_body``, each only when it is
        not its field's ``off`` value.
    """
    fields: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for row in type(params).TABLE:
        value = getattr(params, row.name)
        if value is None:
            continue
        if not row.extra:
            fields[row.request_name] = value
        elif value != row.off:
            extra[row.request_name] = value
    return fields, extra


class RequestFieldError(ValueError):
    """A request's sampling field is invalid.

    Attributes:
        param: The request field at fault (``max_tokens``, ``top_p``...).
    """

    def __init__(self, message: str, param: str) -> None:
        super().__init__(message)
        self.param = param


P = TypeVar("P", bound=SamplingParams)


def params_from_request(values: Mapping[str, Any], base: P) -> P:
    """``base`` with the sampling fields an OpenAI / vLLM request gives.

    Args:
        values: The request's fields by their request names (``max_tokens``,
            ``max_completion_tokens``, ``top_k``...); ``None`` or a missing name leaves
            the field at ``base``'s value.
        base: The ``SamplingParams`` (or subclass) the request starts from (the model
            family's defaults).

    Returns:
        A value of ``base``'s type.

    Raises:
        RequestFieldError: with ``SamplingParams``' sentence and the request field at
            fault (each field is checked on its own, to name it).
    """
    given: dict[str, Any] = {}
    for row in type(base).TABLE:
        names = (*row.request_aliases, row.request_name)
        value = next((values[n] for n in names if values.get(n) is not None), None)
        if value is None:
            continue
        if row.request_off is not None and value == row.request_off:
            value = row.off
        try:
            replace(base, **{row.name: value})
        except ValueError as exc:
            raise RequestFieldError(str(exc), row.request_name) from None
        given[row.name] = value
    return replace(base, **given)
