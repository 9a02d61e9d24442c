"""A ``postgres`` provider's configuration: its keys, validation and libpq conninfo (discrete keys
override the ``dsn``'s; ``password`` is an ``env:NAME`` reference, never in a message).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from paxm_core import ProviderConfig
from paxm_core.api.protocols import ConfigKey
from paxm_core.api.provider_config import resolve_secret

__all__ = ["CONFIG_KEYS", "Settings", "validate"]

SSL_MODES = ("disable", "allow", "prefer", "require", "verify-ca", "verify-full")
DEFAULT_POOL_SIZE = 4
DEFAULT_TIMEOUT = 10.0
_SCHEMA = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
_SLUG = re.compile(r"^[a-z0-9][a-z0-9._-]*$")

CONFIG_KEYS: tuple[ConfigKey, ...] = (
    ConfigKey("dsn", "libpq connection string or postgresql:// URI (no password in it; use `password`)", ask=True),
    ConfigKey("host", "server host name or socket directory (overrides the dsn)"),
    ConfigKey("port", "server port (overrides the dsn)", kind="int"),
    ConfigKey("dbname", "database name (overrides the dsn)"),
    ConfigKey("user", "database role to connect as (overrides the dsn)"),
    ConfigKey("password", "database password, as an env:NAME reference", secret=True, ask=True),
    ConfigKey("sslmode", "TLS mode", choices=SSL_MODES, default="prefer"),
    ConfigKey("sslrootcert", "CA certificate file for sslmode verify-ca / verify-full"),
    ConfigKey("schema", "schema holding paxm's tables (created if missing)", default="public"),
    ConfigKey("pool_size", "most connections one paxm process keeps open", kind="int", default=DEFAULT_POOL_SIZE),
    ConfigKey(
        "user_id",
        "the paxm user whose personal memories this config reads and writes",
        required=True,
        ask=True,
    ),
    ConfigKey("teams", "team ids whose shared memories this user may recall (and write)", kind="list"),
    ConfigKey("timeout", "connect/statement timeout when a call has no deadline", kind="duration", default="10s"),
)


def _text(value: Any) -> str:
    return "" if value is None else str(value).strip()


def _teams(value: Any) -> tuple[str, ...]:
    if value is None or value == "":
        return ()
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, list | tuple):
        return ("\0invalid",)
    return tuple(dict.fromkeys(_text(v).lower() for v in items if _text(v)))


@dataclass(frozen=True)
class Settings:
    """Resolved settings of one provider instance (the password resolved, never shown)."""

    dsn: str
    overrides: tuple[tuple[str, str], ...]
    password: str
    schema: str
    pool_size: int
    user_id: str
    teams: tuple[str, ...]
    timeout: float

    @classmethod
    def from_config(cls, config: ProviderConfig) -> Settings:
        extra = config.extra
        overrides: list[tuple[str, str]] = []
        for key in ("host", "port", "dbname", "user", "sslmode", "sslrootcert"):
            value = _text(extra.get(key))
            if value:
                overrides.append((key, value))
        try:
            raw_pool = extra.get("pool_size")
            pool_size = DEFAULT_POOL_SIZE if raw_pool in (None, "") else int(raw_pool)
        except (TypeError, ValueError):
            pool_size = -1
        return cls(
            dsn=_text(extra.get("dsn")) or _text(config.base_url),
            overrides=tuple(overrides),
            password=resolve_secret(_text(extra.get("password"))),
            schema=_text(extra.get("schema")) or "public",
            pool_size=pool_size,
            user_id=_text(config.user_id or extra.get("user_id")).lower(),
            teams=_teams(extra.get("teams")),
            timeout=float(config.timeout) if config.timeout else DEFAULT_TIMEOUT,
        )

    def scopes(self) -> list[str]:
        """The scopes a recall may return: the user's personal one and the configured teams'."""
        return [f"personal:{self.user_id}", *(f"team:{t}" for t in self.teams)]

    def conninfo(self, *, connect_timeout: float | None = None) -> str:
        """The libpq conninfo (with the password; never print it)."""
        from psycopg.conninfo import make_conninfo

        params: dict[str, Any] = dict(self.overrides)
        if self.password:
            params["password"] = self.password
        params.setdefault("application_name", "paxm")
        if connect_timeout is not None:
            # libpq takes whole seconds, minimum 2 (a 1 is raised to 2 by libpq itself).
            params["connect_timeout"] = str(max(2, int(connect_timeout + 0.999)))
        return make_conninfo(self.dsn, **params)

    def redact(self, text: str) -> str:
        """``text`` with the password (and any password inside the dsn) removed."""
        secrets = [self.password] if self.password else []
        secrets += re.findall(r"password\s*=\s*'?([^'\s]+)", self.dsn)
        secrets += re.findall(r"://[^:/@]*:([^@]+)@", self.dsn)
        for secret in secrets:
            if secret:
                text = text.replace(secret, "***")
        return text


def validate(config: ProviderConfig) -> list[str]:
    """Problems with ``config``, one clear sentence each (nothing is connected to)."""
    problems: list[str] = []
    extra = config.extra
    settings = Settings.from_config(config)
    if not settings.dsn and not any(k == "host" for k, _ in settings.overrides):
        problems.append("set `dsn` (e.g. postgresql://paxm@db.example.com/paxm) or `host`/`dbname`/`user`")
    if settings.dsn:
        try:
            from psycopg.conninfo import conninfo_to_dict

            parsed = conninfo_to_dict(settings.dsn)
        except Exception:
            problems.append("`dsn` is not a valid libpq connection string or postgresql:// URI")
        else:
            if parsed.get("password"):
                problems.append(
                    "`dsn` contains a password; move it to `password: env:PAXM_PG_PASSWORD` so it stays out of the file"
                )
    raw_password = _text(extra.get("password"))
    if raw_password and not (raw_password.startswith("env:") or raw_password.startswith("${")):
        problems.append("`password` must be an env:NAME reference, not the password itself")
    elif raw_password and not settings.password:
        problems.append(f"`password` refers to {raw_password}, which is not set in the environment")
    port = _text(extra.get("port"))
    if port and not (port.isdigit() and 0 < int(port) < 65536):
        problems.append(f"`port` must be a number from 1 to 65535, not {port!r}")
    sslmode = _text(extra.get("sslmode"))
    if sslmode and sslmode not in SSL_MODES:
        problems.append(f"`sslmode` {sslmode!r} is invalid; use one of {', '.join(SSL_MODES)}")
    if not _SCHEMA.match(settings.schema):
        problems.append(f"`schema` {settings.schema!r} must be a lower-case SQL identifier (letters, digits, _)")
    if not 1 <= settings.pool_size <= 64:
        problems.append("`pool_size` must be a whole number from 1 to 64")
    if not settings.user_id:
        problems.append("`user_id` is required: the paxm user whose personal memories this config reads")
    elif not _SLUG.match(settings.user_id):
        problems.append(f"`user_id` {settings.user_id!r} must be a slug (letters, digits, ., _, -)")
    if any(not _SLUG.match(t) for t in settings.teams):
        problems.append("`teams` must be a list of team ids (letters, digits, ., _, -)")
    return problems
