"""paxm's default provider: SQLite with FTS5.  Only the hookimpl lives here; the work is in ``provider``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from paxm_core import ProviderConfig, hookimpl


def _factory(name: str, config: ProviderConfig) -> Any:
    from paxm_provider_sqlite.provider import SQLiteProvider

    return SQLiteProvider(name, config)


@hookimpl
def paxm_register_providers(register: Callable[..., None]) -> None:
    register(
        "sqlite",
        _factory,
        description="Local SQLite FTS5 store (default; no API key, no embeddings)",
        capabilities=("put_batch", "cleanup_expired", "close", "turn_boundaries", "attribution"),
    )
