"""Everything the window remembers, in QSettings, behind one small class.

QSettings stays in ``ui/``. Keys carry a schema version (``schema_version``);
values written by an older schema are migrated or dropped, values from a newer
one are left alone and defaults are used. Every value read back is validated by
the frozen settings dataclasses; an invalid one falls back to the default.
"""

from __future__ import annotations

import json

from PySide6.QtCore import QByteArray, QSettings

from glmdesk.core.settings import CacheSettings, LoadSettings, SamplingParams
from glmdesk.engine.backends import is_remote, specs
from glmdesk.ui.common.i18n import LANGUAGE_CODES, LANGUAGE_KEY, SYSTEM_LANGUAGE
from glmdesk.ui.models.api_keys import api_key, save_api_key

SCHEMA_VERSION = 1
#: Most models kept in File -> Recent models.
RECENT_MODELS = 8
ORGANIZATION = "glmdesk"
APPLICATION = "glmdesk"


def _to_bool(value) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    return bool(value)


def _to_int(value: object) -> int:
    """A QSettings value as an int (an ini file gives text, the registry a number).

    Raises:
        TypeError: for a value that is neither.
        ValueError: for text that is not a whole number.
    """
    if isinstance(value, (int, float, str)):
        return int(value)
    raise TypeError(f"not a number: {value!r}")


def _opt_float(value) -> float | None:
    if value in (None, "", "None"):
        return None
    return float(value)


def _opt_int(value) -> int | None:
    if value in (None, "", "None"):
        return None
    return int(value)


class SettingsStore:
    """Typed access to the app's QSettings.

    Args:
        settings: A QSettings to use; default: the user scope ``glmdesk/glmdesk`` in
            ``QSettings.defaultFormat()``.
    """

    def __init__(self, settings: QSettings | None = None) -> None:
        # QSettings(org, app) would ignore setDefaultFormat(); name the format so that
        # tests (and portable installs) can redirect it with QSettings.setPath.
        self.qsettings = settings or QSettings(
            QSettings.defaultFormat(), QSettings.Scope.UserScope, ORGANIZATION, APPLICATION
        )
        self._migrate()

    def _migrate(self) -> None:
        raw = self.qsettings.value("schema_version")
        try:
            version = int(raw) if raw is not None else 0
        except (TypeError, ValueError):
            version = 0
        if version > SCHEMA_VERSION:
            self.read_only = True  # written by a newer glmdesk: do not clobber it
            return
        self.read_only = False
        if version < SCHEMA_VERSION:
            if version != 0 or self.qsettings.allKeys():
                self.qsettings.clear()  # no older schema was ever released
            self.qsettings.setValue("schema_version", SCHEMA_VERSION)

    def _set(self, key: str, value) -> None:
        if not self.read_only:
            self.qsettings.setValue(key, value)

    # Sampling ---------------------------------------------------------------
    def sampling(self, params_type: type[SamplingParams] = SamplingParams) -> SamplingParams | None:
        """The saved sampling parameters (``sampling/<name>`` for each row of
        ``params_type.TABLE``), or ``None`` when none (or invalid ones) are saved.

        A field saved by no earlier glmdesk (a row added since) takes its default.
        """
        s = self.qsettings
        values = {}
        for row in params_type.TABLE:
            raw = s.value(f"sampling/{row.name}")
            if raw is None:
                continue
            try:
                values[row.name] = (_opt_int if row.type is int else _opt_float)(raw)
            except (TypeError, ValueError):
                return None
            if values[row.name] is None and not row.optional:
                return None
        if not values:
            return None
        thinking = s.value("sampling/enable_thinking")  # the sidebar's Thinking switch
        if thinking not in (None, ""):
            values["enable_thinking"] = _to_bool(thinking)
        try:
            return params_type(**values)
        except (TypeError, ValueError):
            return None

    def save_sampling(self, params: SamplingParams) -> None:
        """Remember ``params`` (each field of its type's ``TABLE``; an empty string for
        ``None``; ``enable_thinking`` when set)."""
        for row in type(params).TABLE:
            value = getattr(params, row.name)
            self._set(f"sampling/{row.name}", "" if value is None else value)
        if params.enable_thinking is not None:  # None: the switch is greyed, its state kept
            self._set("sampling/enable_thinking", params.enable_thinking)

    # System prompt ----------------------------------------------------------
    def system_prompt(self) -> str:
        """The saved system prompt (empty when none)."""
        return str(self.qsettings.value("chat/system_prompt", "") or "")

    def save_system_prompt(self, text: str) -> None:
        """Remember the system prompt."""
        self._set("chat/system_prompt", text)

    # KV cache ---------------------------------------------------------------
    def cache_settings(self) -> CacheSettings:
        """The saved KV-cache settings, or the defaults."""
        s = self.qsettings
        try:
            return CacheSettings(
                strategy=str(s.value("cache/strategy", "full")),
                window=_to_int(s.value("cache/window", 4096)),
                sinks=_to_int(s.value("cache/sinks", 4)),
                budget_mib=_opt_float(s.value("cache/budget_mib", "")),
            )
        except (TypeError, ValueError):
            return CacheSettings()

    def save_cache_settings(self, cache: CacheSettings) -> None:
        """Remember the KV-cache settings."""
        self._set("cache/strategy", cache.strategy)
        self._set("cache/window", cache.window)
        self._set("cache/sinks", cache.sinks)
        self._set("cache/budget_mib", "" if cache.budget_mib is None else cache.budget_mib)

    # Model ------------------------------------------------------------------
    def last_model(self) -> LoadSettings:
        """The last model loaded successfully, or the embedded default."""
        s = self.qsettings
        try:
            if str(s.value("model/engine", "auto")) == "remote":
                url = str(s.value("model/remote_url", ""))
                remote_model = str(s.value("model/remote_model", "")) or None
                return LoadSettings(
                    engine="remote", remote_url=url, remote_model=remote_model, remote_api_key=api_key(url)
                )
            model = s.value("model/path", "") or None
            return LoadSettings(
                model=str(model) if model else None,
                quantization=str(s.value("model/quantization", "none")),
                precision=str(s.value("model/precision", "auto")),
                device=str(s.value("model/device", "auto")),
                trust_remote_code=_to_bool(s.value("model/trust_remote_code", False)),
                threads=_to_int(s.value("model/threads", 0)),
                fused_decode=_to_bool(s.value("model/fused_decode", True)),
                compile_decode=_to_bool(s.value("model/compile_decode", False)),
                engine=str(s.value("model/engine", "auto")),
                chat_format=str(s.value("model/chat_format", "auto")),
                chat_template=str(s.value("model/chat_template", "") or "") or None,
                **self._engine_options(),
            )
        except (TypeError, ValueError):
            return LoadSettings()

    def _engine_options(self) -> dict:
        """The engines' own options (their specs' fields) as saved, under ``model/NAME``.

        Raises:
            ValueError: for a saved value that is no number.
        """
        default = LoadSettings()
        out = {}
        for name in _engine_option_names():
            value = self.qsettings.value(f"model/{name}", default.option(name))
            out[name] = _to_bool(value) if isinstance(default.option(name), bool) else int(str(value))
        return out

    def save_last_model(self, load: LoadSettings) -> None:
        """Remember the model that loaded (trust in its own code only for that folder).

        A remote server's URL and model are kept here; its API key goes to the system
        keyring (:mod:`glmdesk.ui.models.api_keys`) and never into QSettings.
        """
        remote = is_remote(load)
        self._set("model/engine", "remote" if remote else "auto")
        self._set("model/remote_url", (load.remote_url or "") if remote else "")
        self._set("model/remote_model", (load.remote_model or "") if remote else "")
        if remote:
            if load.remote_url:  # a remote load always names its server
                save_api_key(load.remote_url, load.remote_api_key)
            return
        self._set("model/path", load.model or "")
        self._set("model/quantization", load.quantization)
        self._set("model/precision", load.precision)
        self._set("model/device", load.device)
        self._set("model/threads", load.threads)
        self._set("model/fused_decode", load.fused_decode)
        self._set("model/compile_decode", load.compile_decode)
        self._set("model/engine", load.engine)
        self._set("model/chat_format", load.chat_format)
        self._set("model/chat_template", load.chat_template or "")
        for name in _engine_option_names():
            self._set(f"model/{name}", load.option(name))
        self._set("model/trust_remote_code", bool(load.trust_remote_code and load.model))
        self.add_recent_model(load.model)

    def recent_models(self) -> list[str | None]:
        """Models loaded lately, newest first (``None`` is the embedded model); at most
        :data:`RECENT_MODELS`. A damaged value reads as an empty list."""
        try:
            value = json.loads(str(self.qsettings.value("model/recent", "[]") or "[]"))
        except ValueError:
            return []
        if not isinstance(value, list):
            return []
        models = [(item or None) for item in value if isinstance(item, str)]
        return list(dict.fromkeys(models))[:RECENT_MODELS]

    def add_recent_model(self, model: str | None) -> None:
        """Put ``model`` (a path or hub id; ``None`` for the embedded model) first in the recent list."""
        models = [model or None] + [m for m in self.recent_models() if m != (model or None)]
        self._set("model/recent", json.dumps([m or "" for m in models[:RECENT_MODELS]], ensure_ascii=False))

    def remove_recent_model(self, model: str | None) -> None:
        """Forget ``model`` in the recent list (for example a folder that no longer exists)."""
        models = [m for m in self.recent_models() if m != (model or None)]
        self._set("model/recent", json.dumps([m or "" for m in models], ensure_ascii=False))

    # Window -----------------------------------------------------------------
    def theme(self) -> str:
        """Theme choice: ``system`` (default), ``light`` or ``dark``."""
        value = str(self.qsettings.value("window/theme", "system") or "system")
        return value if value in ("system", "light", "dark") else "system"

    def save_theme(self, choice: str) -> None:
        """Remember the theme choice (applies at once)."""
        self._set("window/theme", choice)

    def language(self) -> str:
        """Interface language: ``system`` (default) or one of ``LANGUAGE_CODES``; read at start."""
        value = str(self.qsettings.value(LANGUAGE_KEY, SYSTEM_LANGUAGE) or SYSTEM_LANGUAGE)
        return value if value in LANGUAGE_CODES else SYSTEM_LANGUAGE

    def save_language(self, code: str) -> None:
        """Remember the interface language (applies at the next start)."""
        self._set(LANGUAGE_KEY, code)

    def settings_panel_shown(self, default: bool = True) -> bool:
        """Whether the window shows its settings panel (``default`` until the user chose)."""
        return _to_bool(self.qsettings.value("window/settings_panel", default))

    def save_settings_panel_shown(self, shown: bool) -> None:
        """Remember whether the settings panel is shown (View > Show settings)."""
        self._set("window/settings_panel", bool(shown))

    def bytes_value(self, key: str) -> QByteArray | None:
        """A saved byte array (window geometry, splitter state), or ``None``."""
        value = self.qsettings.value(f"window/{key}")
        return value if isinstance(value, QByteArray) and not value.isEmpty() else None

    def save_bytes(self, key: str, value: QByteArray) -> None:
        """Remember a byte array under ``window/<key>``."""
        self._set(f"window/{key}", value)

    def sync(self) -> None:
        """Write to disk now."""
        self.qsettings.sync()


def _engine_option_names() -> list[str]:
    """The ``LoadSettings`` fields of every backend's own options (llama.cpp's ``n_ctx``...)."""
    return [option.name for spec in specs() for option in spec.options]
