"""Install the user's language: glmdesk's own translations and Qt's.

glmdesk is written in English (the source language of every ``tr()`` string) and
ships one translation, Simplified Chinese (``resources/translations/glmdesk_zh_CN.qm``,
built by ``scripts/update_translations.py``). Qt's own translations
(``qtbase_<lang>.qm`` from ``QLibraryInfo.TranslationsPath``) translate the standard
dialog buttons, the file dialog and the context menus of text fields.

The language is remembered under :data:`LANGUAGE_KEY` (``"system"``, ``"en"`` or
``"zh_CN"``); it is read once at start-up, so a change takes effect on restart.
This module reads no settings itself: the caller passes the value.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QCoreApplication, QLibraryInfo, QLocale, QTranslator

#: QSettings key of the interface language: one of :data:`LANGUAGE_CODES` or ``"system"``.
LANGUAGE_KEY = "ui/language"
#: The value that follows the system's language (also the default).
SYSTEM_LANGUAGE = "system"
#: The source language of every string; needs no translation file.
SOURCE_LANGUAGE = "en"
#: The languages offered, as ``(code, name in that language)``. The names are not
#: translated: people look for their own language by its own name.
LANGUAGES: tuple[tuple[str, str], ...] = (
    ("en", "English"),
    ("zh_CN", "简体中文"),
)
LANGUAGE_CODES: tuple[str, ...] = tuple(code for code, _ in LANGUAGES)

_TRANSLATOR_NAME = "glmdesk_translator"


def language_name(code: str) -> str:
    """The native name of an offered language (``"zh_CN"`` -> ``"简体中文"``); ``code`` when unknown."""
    return dict(LANGUAGES).get(code, code)


def _match(tag: str) -> str | None:
    """The offered language for one BCP 47 / POSIX tag (``zh-Hans-CN``, ``zh_TW``, ``en-US``)."""
    parts = tag.replace("_", "-").split("-")
    language = parts[0].lower()
    if language == "zh":
        # The only Chinese offered; readers of Traditional Chinese are better served by
        # Simplified Chinese than by English.
        return "zh_CN"
    if language == "en":
        return "en"
    return None


def system_language(locale: QLocale | None = None) -> str:
    """The offered language that best fits ``locale`` (default: ``QLocale()``).

    ``QLocale()`` is the system locale unless ``QLocale.setDefault`` changed it; its
    ``uiLanguages()`` lists the user's preferred languages in order (on Linux from
    ``LANGUAGE``, ``LC_ALL``, ``LC_MESSAGES`` and ``LANG``). The first one glmdesk offers
    wins; English when none is offered.

    Args:
        locale: The locale to match.

    Returns:
        One of :data:`LANGUAGE_CODES`.
    """
    locale = QLocale() if locale is None else locale
    for tag in locale.uiLanguages():
        match = _match(tag)
        if match is not None:
            return match
    return _match(locale.name()) or SOURCE_LANGUAGE


def resolve_language(language: str | None) -> str:
    """The language to apply for a setting value.

    Args:
        language: ``None``, ``""`` or ``"system"`` to follow the system; otherwise a code
            such as ``"en"``, ``"zh_CN"`` (``"zh-CN"``, ``"zh"`` are accepted too). An
            unknown value follows the system.

    Returns:
        One of :data:`LANGUAGE_CODES`.
    """
    if language and language != SYSTEM_LANGUAGE:
        if language in LANGUAGE_CODES:
            return language
        match = _match(language)
        if match is not None:
            return match
    return system_language()


def translations_folder() -> Path:
    """The folder holding ``glmdesk_<lang>.qm`` (source checkout, wheel or frozen bundle)."""
    try:
        from glmdesk.resources import resource_path
    except ImportError:  # an older tree without glmdesk/resources.py
        return Path(__file__).resolve().parents[3] / "resources" / "translations"
    try:
        return resource_path("translations")
    except FileNotFoundError:  # no resources folder at all: run untranslated
        return Path(__file__).resolve().parents[3] / "resources" / "translations"


def qt_translations_folders() -> list[Path]:
    """Where Qt's own ``qtbase_<lang>.qm`` may be: Qt's configured folder, then PySide6's own.

    The second covers bundles whose Qt prefix is not configured (PyInstaller copies the
    files to ``PySide6/Qt/translations``).
    """
    import PySide6

    folders = [Path(QLibraryInfo.path(QLibraryInfo.LibraryPath.TranslationsPath))]
    folders.append(Path(PySide6.__file__).resolve().parent / "Qt" / "translations")
    return folders


def _remove_ours(app: QCoreApplication) -> None:
    """Uninstall translators a previous call installed (tests switch languages)."""
    for translator in app.findChildren(QTranslator):
        if translator.objectName() == _TRANSLATOR_NAME:
            QCoreApplication.removeTranslator(translator)
            translator.setParent(None)
            translator.deleteLater()


def _load(app: QCoreApplication, filename: str, folder: str) -> bool:
    translator = QTranslator(app)  # parented: lives as long as the application
    translator.setObjectName(_TRANSLATOR_NAME)
    if translator.load(filename, folder) and QCoreApplication.installTranslator(translator):
        return True
    translator.setParent(None)
    translator.deleteLater()
    return False


def install_translators(app: QCoreApplication, language: str | None = None) -> str:
    """Install Qt's and glmdesk's translations for ``language``; call before building widgets.

    Strings are translated when a widget is built, so the window must be created after
    this call; calling it again replaces the translators installed before.

    Args:
        app: The application; the translators become its children.
        language: ``None`` or ``"system"`` to follow the system locale, or one of
            :data:`LANGUAGE_CODES` to force it.

    Returns:
        The language applied, one of :data:`LANGUAGE_CODES`. English installs no
        translator. A missing ``.qm`` file leaves that part in English (the return
        value still names the language asked for).
    """
    code = resolve_language(language)
    _remove_ours(app)
    if code == SOURCE_LANGUAGE:
        return code
    # Qt's own strings first; ours are installed last and so are asked first.
    for folder in qt_translations_folders():
        if _load(app, f"qtbase_{code}", str(folder)):
            break
    _load(app, f"glmdesk_{code}", str(translations_folder()))
    return code
