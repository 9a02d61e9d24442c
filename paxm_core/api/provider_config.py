"""The configuration one provider instance is built from.

Field names are upstream's YAML keys, so an upstream ``config.yaml`` loads unchanged.  The fields
are the keys many provider types share; a type's own keys (a graph, a memory cube, how to read a
score ...) are kept in :attr:`ProviderConfig.extra`, where the type declares
(``ProviderType.config_keys``), fills (``normalize``) and checks (``validate``) them.
"""

from __future__ import annotations

import os
from dataclasses import field
from typing import Any

from paxm_core.api.values import value_dataclass

__all__ = ["ProviderConfig", "SECRET_KEYS", "resolve_secret"]

#: Keys whose values are credentials: never printed, never logged.
SECRET_KEYS = frozenset({"api_key", "token", "password", "secret", "authorization"})


@value_dataclass
class ProviderConfig:
    """One entry of ``providers:``; the map key is the instance name.

    ``timeout`` is in seconds (``None`` = the provider's default); YAML spells it as a Go
    duration such as ``"30s"``.
    """

    type: str = ""
    enabled: bool = False
    path: str = ""
    api_key: str = ""
    base_url: str = ""
    transport: str = ""
    command: str = ""
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    timeout: float | None = None
    user_id: str = ""
    agent_id: str = ""
    run_id: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, **keys: Any) -> ProviderConfig:
        """A config from flat keys, as YAML spells them: known fields set, every other key in :attr:`extra`."""
        known = {k: v for k, v in keys.items() if k in cls.__dataclass_fields__ and k != "extra"}
        return cls(**known, extra={k: v for k, v in keys.items() if k not in known})

    def option(self, key: str, default: object = None) -> object:
        """Return a known field or a key from :attr:`extra`."""
        if key in self.__dataclass_fields__ and key != "extra":
            return getattr(self, key)
        return self.extra.get(key, default)

    def text(self, key: str, default: str = "") -> str:
        """:meth:`option` as stripped text (``default`` when absent or blank)."""
        value = self.option(key)
        return (str(value).strip() if value is not None else "") or default


def resolve_secret(value: str) -> str:
    """Resolve an ``env:NAME`` / ``${NAME}`` reference to the environment; plain values pass through.

    Lets users keep API keys out of the config file (``api_key: env:MY_API_KEY``).
    """
    value = value.strip()
    if value.startswith("env:"):
        return os.environ.get(value[4:].strip(), "")
    if value.startswith("${") and value.endswith("}"):
        return os.environ.get(value[2:-1].strip(), "")
    return value
