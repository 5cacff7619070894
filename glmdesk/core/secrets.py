"""Secrets in the system keyring (``keyring``): API keys of servers, the hub's token, MCP
servers' ``env`` and ``headers`` values. One place that reads and writes them, and that
never raises: a machine without a keyring backend (a locked one, no D-Bus) gets ``None``
and ``False`` back, and the caller says so."""

from __future__ import annotations


def get_secret(service: str, user: str) -> str | None:
    """The secret kept under ``service``/``user``, or ``None`` (none kept, or no keyring)."""
    try:
        import keyring

        return keyring.get_password(service, user) or None
    except Exception:  # no keyring backend, a locked keyring, D-Bus missing...
        return None


def set_secret(service: str, user: str, value: str | None) -> bool:
    """Keep ``value`` under ``service``/``user`` (``None`` or ``""`` forgets it); whether
    the keyring took it."""
    try:
        import keyring
        import keyring.errors

        if value:
            keyring.set_password(service, user, value)
        else:
            try:
                keyring.delete_password(service, user)
            except keyring.errors.PasswordDeleteError:
                pass  # nothing was kept
        return True
    except Exception:  # no keyring backend, a locked keyring, D-Bus missing...
        return False
