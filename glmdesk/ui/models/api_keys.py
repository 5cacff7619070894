"""API keys of remote servers, kept in the system's keyring (``keyring``: Secret Service,
macOS Keychain, Windows Credential Locker), never in QSettings or the history.

Where no keyring works (a headless machine), keys are not kept: the user types the key
again in Open model.
"""

from __future__ import annotations

from glmdesk.core.secrets import get_secret, set_secret

#: The keyring service name; each key is stored under its server's URL.
SERVICE = "glmdesk"


def save_api_key(url: str, key: str | None) -> bool:
    """Keep ``key`` for ``url`` (``None`` or empty forgets it); returns whether the
    keyring took it. Never raises."""
    return set_secret(SERVICE, url, key)


def api_key(url: str) -> str | None:
    """The key kept for ``url``, or ``None``. Never raises."""
    return get_secret(SERVICE, url)
