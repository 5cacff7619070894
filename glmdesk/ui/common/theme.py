"""Light and dark themes: follow the system's colour scheme, or the user's choice.

The system's scheme comes from Qt (``QStyleHints.colorScheme``, updated live through
``colorSchemeChanged``); View -> Theme overrides it (``system``, ``light``, ``dark``,
kept in QSettings by :class:`~glmdesk.ui.common.settings_store.SettingsStore`). Both themes
use Qt's Fusion style with the palettes below, so the app looks the same on every
platform and under a bare X server (where no platform theme exists). Widgets that draw
their own colours (code blocks, messages, the memory plot) read the application
palette and repaint on ``ApplicationPaletteChange``, or use :func:`theme_colours`.

Colours are chosen for contrast: body text and the quiet text used for footers and
placeholders reach WCAG 2.x's 4.5:1 against their backgrounds in both themes
(:func:`contrast_ratio`; tests check it).
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QObject, Qt, Signal, Slot
from PySide6.QtGui import QAction, QActionGroup, QColor, QFontDatabase, QGuiApplication, QPalette
from PySide6.QtWidgets import QApplication, QMenu, QStyleFactory, QWidget

#: The user's choices, as stored in QSettings.
THEME_CHOICES = ("system", "light", "dark")


@dataclass(frozen=True)
class ThemeColours:
    """Colours of one theme, as ``#rrggbb`` strings.

    Attributes:
        window, base, alternate, text, quiet, button, highlight, highlighted_text,
            link, mid: The Qt palette roles they set (``quiet`` is PlaceholderText).
        user_bubble: Background of the user's messages.
        assistant_bubble: Background of the assistant's messages.
        code_background: Background of fenced code blocks.
        accent: Icons and the sibling switch.
        error: Error text and borders.
    """

    window: str
    base: str
    alternate: str
    text: str
    quiet: str
    button: str
    highlight: str
    highlighted_text: str
    link: str
    mid: str
    user_bubble: str
    assistant_bubble: str
    code_background: str
    accent: str
    error: str


LIGHT = ThemeColours(
    window="#f4f5f7",
    base="#ffffff",
    alternate="#f0f1f4",
    text="#1d1f23",
    quiet="#5f6368",
    button="#e9ebef",
    highlight="#2f6fde",
    highlighted_text="#ffffff",
    link="#1a5fd0",
    mid="#c4c8cf",
    user_bubble="#e3ecfb",
    assistant_bubble="#ffffff",
    code_background="#f1f3f6",
    accent="#2f6fde",
    error="#c62828",
)

DARK = ThemeColours(
    window="#1e1f22",
    base="#17181a",
    alternate="#232428",
    text="#e6e7ea",
    quiet="#a2a5ab",
    button="#2b2d31",
    highlight="#2f66c9",
    highlighted_text="#ffffff",
    link="#7fb0ff",
    mid="#45484e",
    user_bubble="#263349",
    assistant_bubble="#202226",
    code_background="#2a2c31",
    accent="#7fb0ff",
    error="#ff8a80",
)


def theme_colours(scheme: str) -> ThemeColours:
    """The colours of ``"light"`` or ``"dark"``."""
    return DARK if scheme == "dark" else LIGHT


def relative_luminance(colour: str) -> float:
    """WCAG 2.x relative luminance of ``#rrggbb`` (0 black .. 1 white).

    Source: https://www.w3.org/TR/WCAG21/#dfn-relative-luminance
    """
    c = QColor(colour)

    def linear(v: float) -> float:
        return v / 12.92 if v <= 0.04045 else ((v + 0.055) / 1.055) ** 2.4

    return 0.2126 * linear(c.redF()) + 0.7152 * linear(c.greenF()) + 0.0722 * linear(c.blueF())


def contrast_ratio(a: str, b: str) -> float:
    """WCAG 2.x contrast ratio of two colours, 1 to 21 (4.5 is the minimum for body text)."""
    la, lb = sorted((relative_luminance(a), relative_luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def make_palette(colours: ThemeColours) -> QPalette:
    """A full QPalette (active, inactive and disabled groups) for ``colours``."""
    roles = QPalette.ColorRole
    palette = QPalette()
    for role, value in (
        (roles.Window, colours.window),
        (roles.WindowText, colours.text),
        (roles.Base, colours.base),
        (roles.AlternateBase, colours.alternate),
        (roles.ToolTipBase, colours.base),
        (roles.ToolTipText, colours.text),
        (roles.PlaceholderText, colours.quiet),
        (roles.Text, colours.text),
        (roles.Button, colours.button),
        (roles.ButtonText, colours.text),
        (roles.BrightText, colours.error),
        (roles.Highlight, colours.highlight),
        (roles.HighlightedText, colours.highlighted_text),
        (roles.Link, colours.link),
        (roles.LinkVisited, colours.link),
        (roles.Mid, colours.mid),
        (roles.Midlight, colours.alternate),
        (roles.Dark, colours.mid),
        (roles.Light, colours.base),
        (roles.Shadow, "#000000"),
    ):
        palette.setColor(role, QColor(value))
    disabled = QPalette.ColorGroup.Disabled
    for role in (roles.WindowText, roles.Text, roles.ButtonText):
        palette.setColor(disabled, role, QColor(colours.quiet))
    return palette


def system_scheme() -> str:
    """``"dark"`` when the system asks for a dark scheme, else ``"light"`` (also when unknown)."""
    hints = QGuiApplication.styleHints()
    return "dark" if hints.colorScheme() == Qt.ColorScheme.Dark else "light"


class ThemeController(QObject):
    """Applies the theme to the application and keeps it in step with the system.

    Args:
        app: The running application.
        choice: ``system``, ``light`` or ``dark``.
        store: Where the choice is saved (a ``SettingsStore``), or ``None``.

    Signals:
        scheme_changed(str): The theme in use changed to ``light`` or ``dark``.
    """

    scheme_changed = Signal(str)

    def __init__(self, app: QApplication, choice: str = "system", store=None) -> None:
        super().__init__(app)
        self._app = app
        self._store = store
        self._choice = choice if choice in THEME_CHOICES else "system"
        self._scheme = ""
        self._system = system_scheme()
        fusion = QStyleFactory.create("Fusion")
        if fusion is not None:
            app.setStyle(fusion)
        app.styleHints().colorSchemeChanged.connect(self._on_system_scheme_changed)
        self._request_scheme()
        self._apply()

    def choice(self) -> str:
        """The user's choice: ``system``, ``light`` or ``dark``."""
        return self._choice

    def scheme(self) -> str:
        """The theme in use: ``light`` or ``dark``."""
        return self._scheme

    def colours(self) -> ThemeColours:
        """The colours in use."""
        return theme_colours(self._scheme)

    @Slot(str)
    def set_choice(self, choice: str) -> None:
        """Follow the system (``system``) or force ``light`` / ``dark``; saved when a store was given.

        Raises:
            ValueError: for another value.
        """
        if choice not in THEME_CHOICES:
            raise ValueError(f"theme must be one of {THEME_CHOICES}, not {choice!r}")
        self._choice = choice
        if self._store is not None:
            self._store.save_theme(choice)
        self._request_scheme()
        self._apply()

    @Slot(QAction)
    def set_choice_from_action(self, action: QAction) -> None:
        """:meth:`set_choice` with the choice a View -> Theme action carries."""
        self.set_choice(str(action.data()))

    @Slot(Qt.ColorScheme)
    def _on_system_scheme_changed(self, scheme: Qt.ColorScheme) -> None:
        if self._choice == "system":  # our own override also emits this; it is ignored
            self._system = "dark" if scheme == Qt.ColorScheme.Dark else "light"
            self._apply()

    def _request_scheme(self) -> None:
        """Ask the platform for the chosen scheme too (native title bars follow it where
        the platform supports this; elsewhere it changes nothing)."""
        wanted = {"light": Qt.ColorScheme.Light, "dark": Qt.ColorScheme.Dark}
        hints = self._app.styleHints()
        if hasattr(hints, "setColorScheme"):  # Qt 6.8+
            hints.setColorScheme(wanted.get(self._choice, Qt.ColorScheme.Unknown))
        if self._choice == "system":
            self._system = system_scheme()

    def _apply(self) -> None:
        scheme = self._system if self._choice == "system" else self._choice
        if scheme == self._scheme:
            return
        self._scheme = scheme
        self._app.setPalette(make_palette(theme_colours(scheme)))
        self.scheme_changed.emit(scheme)


def build_theme_menu(controller: ThemeController, parent: QWidget) -> QMenu:
    """View -> Theme: System, Light, Dark (one checked), wired to ``controller``."""
    menu = QMenu(QApplication.translate("theme", "&Theme"), parent)
    menu.setObjectName("theme_menu")
    group = QActionGroup(menu)
    group.setExclusive(True)
    labels = {
        "system": QApplication.translate("theme", "Follow the &system"),
        "light": QApplication.translate("theme", "&Light"),
        "dark": QApplication.translate("theme", "&Dark"),
    }
    for choice, label in labels.items():
        action = QAction(label, menu)
        action.setObjectName(f"theme_{choice}")
        action.setCheckable(True)
        action.setChecked(controller.choice() == choice)
        action.setData(choice)
        group.addAction(action)
        menu.addAction(action)
    group.triggered.connect(controller.set_choice_from_action)
    return menu


#: Chinese UI fonts, first installed one wins (Linux, then Windows, then macOS).
CJK_UI_FAMILIES = (
    "Noto Sans CJK SC",
    "Source Han Sans SC",
    "WenQuanYi Micro Hei",
    "Microsoft YaHei UI",
    "Microsoft YaHei",
    "PingFang SC",
)


def apply_interface_font(app: QApplication, language: str) -> str | None:
    """For a Chinese interface, make an installed CJK font the first family of the
    application font, so line heights and baselines come from the font that draws the
    text (CJK text then sits centred in spin boxes and line edits instead of high).

    Args:
        app: The running application.
        language: The interface language applied (``zh_CN``, ``en``).

    Returns:
        The family put first, or ``None`` (another language, or no CJK font installed).
    """
    if not language.startswith("zh"):
        return None
    installed = set(QFontDatabase.families())
    family = next((name for name in CJK_UI_FAMILIES if name in installed), None)
    if family is None:
        return None
    font = app.font()
    font.setFamilies([family, *[f for f in font.families() if f != family]] or [family])
    app.setFont(font)
    return family
