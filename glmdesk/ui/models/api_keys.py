"""API keys of remote servers, kept in the system's keyring (``keyring``: Secret Service,
macOS Keychain, Windows Credential Locker), never in QSettings or the history.

Where no keyring works (a headless machine), keys are not kept: the user types the key
again in Open model.
"""

from __future__ import annotations

#: The keyring service name; each key is stored under its server's URL.
SERVICE = "glmdesk"


def save_api_key(url: str, key: str | None) -> bool:
    """Keep ``key`` for ``url`` (``None`` or empty forgets it); returns whether the
    keyring took it. Never raises."""
    try:
        import keyring

        if key:
            keyring.set_password(SERVICE, url, key)
        else:
            try:
                keyring.delete_password(SERVICE, url)
            except keyring.errors.PasswordDeleteError:
                pass
        return True
    except Exception:  # no keyring backend, a locked keyring, D-Bus missing...
        return False


def api_key(url: str) -> str | None:
    """The key kept for ``url``, or ``None``. Never raises."""
    try:
        import keyring

        return keyring.get_password(SERVICE, url) or None
    except Exception:
        return None
