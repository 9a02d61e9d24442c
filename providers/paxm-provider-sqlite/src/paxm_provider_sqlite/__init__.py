"""paxm's default provider: SQLite with FTS5.  Only the hookimpl lives here; the work is in ``provider``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from paxm_core import ProviderConfig, hookimpl
from paxm_core.api.protocols import ConfigKey, ProviderType


def _factory(name: str, config: ProviderConfig) -> Any:
    from paxm_provider_sqlite.provider import SQLiteProvider

    return SQLiteProvider(name, config)


def _validate(config: ProviderConfig) -> list[str]:
    if config.path and "\0" in config.path:
        return ["path must not contain a NUL byte; give a file path such as ~/.local/share/paxm/memory.sqlite"]
    return []


PROVIDER_TYPE = ProviderType(
    type="sqlite",
    factory=_factory,
    description="Local SQLite FTS5 store (default; no API key, no embeddings)",
    capabilities=frozenset(
        "put_batch delete cleanup_expired close turn_boundaries attribution deadline_bound large_batches".split()
    ),
    config_keys=(
        ConfigKey("path", "the database file (default: under the XDG data dir)", kind="str"),
        ConfigKey("timeout", "per-call timeout", kind="duration"),
    ),
    locality="local",
    validate=_validate,
    package="paxm-provider-sqlite",
    setup_priority=0,
)


@hookimpl
def paxm_register_providers(register: Callable[..., None]) -> None:
    register(PROVIDER_TYPE)
