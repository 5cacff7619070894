"""The MCP servers the user configured: ``mcp.json`` in glmdesk's config folder.

The file has the shape Claude Desktop, Cursor, LM Studio and Cherry Studio use::

    {"mcpServers": {
        "time": {"command": "uvx", "args": ["mcp-server-time"], "env": {"TZ": "UTC"}},
        "docs": {"url": "http://127.0.0.1:8000/mcp", "headers": {"Authorization": "<keyring>"}}
    }}

glmdesk's own optional keys per server: ``disabled`` (bool), ``autoStart`` (start with
glmdesk instead of at first use) and ``timeoutSeconds`` (one call's time limit, s).
Unknown keys are kept as they were.

Secrets (``env`` and ``headers`` values whose name says key, token, secret, password or
authorization) are kept in the system keyring (service :data:`SECRET_SERVICE`, user
``server/env/NAME`` or ``server/headers/NAME``); the file holds :data:`IN_KEYRING` in
their place. Where no keyring works, a secret is not written anywhere and the caller is
told (:meth:`McpConfig.save` returns the names).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from glmdesk.core.secrets import get_secret, set_secret

#: The file's name in glmdesk's config folder.
FILE_NAME = "mcp.json"
#: The keyring service of MCP secrets.
SECRET_SERVICE = "glmdesk-mcp"
#: What the file holds in place of a secret kept in the keyring.
IN_KEYRING = "<keyring>"
#: Default time limit of one call, in s.
DEFAULT_TIMEOUT_S = 60.0

_SECRET_NAME = re.compile(r"key|token|secret|passw|auth|cookie|credential", re.IGNORECASE)
_SERVER_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


def is_secret(name: str) -> bool:
    """Whether an ``env`` or ``headers`` entry called ``name`` holds a secret."""
    return bool(_SECRET_NAME.search(name))


class SecretStore(Protocol):
    """Where secrets live (the keyring; a dict in tests)."""

    def get(self, user: str) -> str | None: ...

    def set(self, user: str, value: str | None) -> bool: ...


class KeyringSecrets:
    """The system keyring (``keyring``); every method returns instead of raising."""

    def get(self, user: str) -> str | None:
        return get_secret(SECRET_SERVICE, user)

    def set(self, user: str, value: str | None) -> bool:
        """Keep ``value`` (``None`` forgets it); whether the keyring took it."""
        return set_secret(SECRET_SERVICE, user, value)


class MemorySecrets:
    """Secrets in a dict (tests; a session where no keyring works)."""

    def __init__(self) -> None:
        self.values: dict[str, str] = {}

    def get(self, user: str) -> str | None:
        return self.values.get(user)

    def set(self, user: str, value: str | None) -> bool:
        if value:
            self.values[user] = value
        else:
            self.values.pop(user, None)
        return True


@dataclass(frozen=True)
class McpServerConfig:
    """One configured server: a command run over stdio, or a streamable HTTP URL.

    Attributes:
        name: The key in ``mcpServers`` (``[A-Za-z0-9_.-]{1,64}``).
        command: The program to run (stdio); empty for a URL server.
        args: Its arguments.
        env: Extra environment variables (secrets resolved from the keyring).
        url: The streamable HTTP endpoint; empty for a command.
        headers: HTTP headers (secrets resolved).
        disabled: Not offered and never started.
        auto_start: Started with glmdesk (else when first needed).
        timeout_s: One call's time limit, in s.
        extra: Keys of the file glmdesk does not read, kept as they were.

    Raises:
        ValueError: a bad name, neither or both of command and url, a timeout out of
            1-3600 s.
    """

    name: str
    command: str = ""
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    url: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)
    disabled: bool = False
    auto_start: bool = False
    timeout_s: float = DEFAULT_TIMEOUT_S
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not _SERVER_NAME.match(self.name):
            raise ValueError(
                f"The MCP server name {self.name!r} must be 1-64 letters, digits, '_', '-' or '.'."
            )
        if bool(self.command) == bool(self.url):
            raise ValueError(f"The MCP server {self.name} needs either a command or a url (one of them).")
        if not 1.0 <= float(self.timeout_s) <= 3600.0:
            raise ValueError(
                f"The MCP server {self.name}'s time limit must be 1 to 3600 s, not {self.timeout_s}."
            )

    @property
    def transport(self) -> str:
        """``stdio`` or ``http``."""
        return "stdio" if self.command else "http"

    def command_line(self) -> str:
        """What the user agrees to before the server first starts: the command and its
        arguments (shell-quoted), or the URL; the names (not values) of its variables."""
        import shlex

        if self.url:
            return self.url
        text = shlex.join([self.command, *self.args])
        if self.env:
            text += "  (environment: " + ", ".join(sorted(self.env)) + ")"
        return text

    def to_json(self, secrets: SecretStore | None = None) -> tuple[dict[str, Any], list[str]]:
        """The server's entry in the file, its secrets replaced by :data:`IN_KEYRING`
        after ``secrets`` took them; also the names of secrets no store took (left
        out of the file)."""
        entry: dict[str, Any] = dict(self.extra)
        lost: list[str] = []
        if self.command:
            entry["command"] = self.command
            entry["args"] = list(self.args)
            if self.env:
                entry["env"] = self._hidden("env", self.env, secrets, lost)
        else:
            entry["url"] = self.url
            if self.headers:
                entry["headers"] = self._hidden("headers", self.headers, secrets, lost)
        if self.disabled:
            entry["disabled"] = True
        if self.auto_start:
            entry["autoStart"] = True
        if self.timeout_s != DEFAULT_TIMEOUT_S:
            entry["timeoutSeconds"] = self.timeout_s
        return entry, lost

    def _hidden(self, kind: str, values: Mapping[str, str], secrets, lost: list[str]) -> dict[str, str]:
        out = {}
        for key, value in values.items():
            if not is_secret(key) or value == IN_KEYRING:
                out[key] = value
            elif secrets is not None and secrets.set(f"{self.name}/{kind}/{key}", value):
                out[key] = IN_KEYRING
            else:
                lost.append(f"{self.name}: {kind} {key}")
        return out


def server_from_json(name: str, entry: Any, secrets: SecretStore | None = None) -> McpServerConfig:
    """One ``mcpServers`` entry as a :class:`McpServerConfig`, secrets read from
    ``secrets`` (a secret missing there stays :data:`IN_KEYRING`).

    Raises:
        ValueError: one sentence naming the server and what is wrong.
    """
    if not isinstance(entry, Mapping):
        raise ValueError(f"The MCP server {name} is not a JSON object.")
    known = {"command", "args", "env", "url", "headers", "disabled", "autoStart", "timeoutSeconds", "type"}
    extra = {k: v for k, v in entry.items() if k not in known}
    command, url = entry.get("command", ""), entry.get("url", "")
    args, env, headers = entry.get("args", []), entry.get("env", {}), entry.get("headers", {})
    if not isinstance(command, str) or not isinstance(url, str):
        raise ValueError(f"The MCP server {name}'s command and url must be text.")
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise ValueError(f"The MCP server {name}'s args must be a list of text.")
    for label, values in (("env", env), ("headers", headers)):
        if not isinstance(values, Mapping) or not all(isinstance(v, str) for v in values.values()):
            raise ValueError(f"The MCP server {name}'s {label} must map names to text.")
    timeout = entry.get("timeoutSeconds", DEFAULT_TIMEOUT_S)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        raise ValueError(f"The MCP server {name}'s timeoutSeconds must be a number of seconds.")
    if "type" in entry and entry["type"] not in ("stdio", "http", "streamable-http", "streamableHttp"):
        raise ValueError(
            f"The MCP server {name} uses the transport {entry['type']!r}; glmdesk speaks stdio and streamable HTTP."
        )

    def revealed(kind: str, values: Mapping[str, str]) -> dict[str, str]:
        out = {}
        for key, value in values.items():
            if value == IN_KEYRING and secrets is not None:
                value = secrets.get(f"{name}/{kind}/{key}") or IN_KEYRING
            out[key] = value
        return out

    return McpServerConfig(
        name=name,
        command=command,
        args=tuple(args),
        env=revealed("env", env),
        url=url,
        headers=revealed("headers", headers),
        disabled=bool(entry.get("disabled", False)),
        auto_start=bool(entry.get("autoStart", False)),
        timeout_s=float(timeout),
        extra=extra,
    )


def parse_servers(
    text: str, secrets: SecretStore | None = None
) -> tuple[tuple[McpServerConfig, ...], list[str]]:
    """The servers of an ``mcp.json`` text, and one sentence per entry that could not
    be read (the others are kept).

    Raises:
        ValueError: text that is not JSON or has no ``mcpServers`` object.
    """
    try:
        data = json.loads(text) if text.strip() else {"mcpServers": {}}
    except json.JSONDecodeError as exc:
        raise ValueError(f"The MCP file is not valid JSON ({exc.msg}, line {exc.lineno}).") from None
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        raise ValueError('The MCP file has no "mcpServers" object.')
    found, problems = [], []
    for name, entry in servers.items():
        try:
            found.append(server_from_json(name, entry, secrets))
        except ValueError as exc:
            problems.append(str(exc))
    return tuple(found), problems


@dataclass(frozen=True)
class McpConfig:
    """The configured servers, in the file's order.

    Attributes:
        servers: One entry per server.
        problems: Sentences about entries of the file that could not be read (they are
            not lost: :meth:`save` keeps the file's other keys only for read entries, so
            a caller shows these before saving).
    """

    servers: tuple[McpServerConfig, ...] = ()
    problems: tuple[str, ...] = ()

    def server(self, name: str) -> McpServerConfig | None:
        """The server called ``name``, or ``None``."""
        return next((s for s in self.servers if s.name == name), None)

    def with_server(self, server: McpServerConfig) -> McpConfig:
        """A copy with ``server`` added, or replacing the one of its name (same place)."""
        names = [s.name for s in self.servers]
        if server.name in names:
            servers = tuple(server if s.name == server.name else s for s in self.servers)
        else:
            servers = (*self.servers, server)
        return replace(self, servers=servers)

    def without(self, name: str) -> McpConfig:
        """A copy without the server called ``name``."""
        return replace(self, servers=tuple(s for s in self.servers if s.name != name))

    def imported(self, text: str, secrets: SecretStore | None = None) -> tuple[McpConfig, list[str]]:
        """This config with the servers of another app's file added (a name taken
        already gets ``-2``, ``-3``...); also the sentences about entries left out.

        Raises:
            ValueError: as :func:`parse_servers`.
        """
        servers, problems = parse_servers(text, secrets)
        config = self
        for s in servers:
            name, n = s.name, 2
            while config.server(name) is not None:
                name, n = f"{s.name}-{n}", n + 1
            config = config.with_server(replace(s, name=name))
        return config, problems

    def to_text(self, secrets: SecretStore | None = None) -> tuple[str, list[str]]:
        """The file's text, and the secrets no store took (see :meth:`McpServerConfig.to_json`)."""
        entries, lost = {}, []
        for s in self.servers:
            entries[s.name], missing = s.to_json(secrets)
            lost += missing
        return json.dumps({"mcpServers": entries}, ensure_ascii=False, indent=2) + "\n", lost

    def save(self, path: Path | None = None, secrets: SecretStore | None = None) -> list[str]:
        """Write the file (atomically; owner-only), secrets to ``secrets`` (the keyring by
        default). Returns the secrets that were not kept anywhere.

        Raises:
            OSError: the folder cannot be written.
        """
        path = path or default_path()
        text, lost = self.to_text(secrets if secrets is not None else KeyringSecrets())
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.chmod(0o600)
        tmp.replace(path)
        return lost


def default_path() -> Path:
    """``mcp.json`` in glmdesk's config folder."""
    from glmdesk.core import paths

    return paths.config_dir() / FILE_NAME


def load_config(path: Path | None = None, secrets: SecretStore | None = None) -> McpConfig:
    """The configured servers (none when the file does not exist).

    Raises:
        ValueError: a file that cannot be read, is not JSON or has no ``mcpServers``.
    """
    path = path or default_path()
    if not path.exists():
        return McpConfig()
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"The MCP file {path} cannot be read ({exc}).") from None
    servers, problems = parse_servers(text, secrets if secrets is not None else KeyringSecrets())
    return McpConfig(servers, tuple(problems))
