"""PostgreSQL as a paxm provider (type ``postgres``): one shared store for a team.

Only the registration lives here; psycopg is imported when a provider is built.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from paxm_core import ProviderConfig, hookimpl
from paxm_core.api.protocols import ProviderType

CAPABILITIES = frozenset(
    {"put_batch", "delete", "cleanup_expired", "close", "turn_boundaries", "eval_scope_cleanup", "attribution"}
)


def _factory(name: str, config: ProviderConfig) -> Any:
    from paxm_provider_postgres.provider import PostgresProvider

    return PostgresProvider(name, config)


def provider_type() -> ProviderType:
    """The ``postgres`` provider type as registered."""
    from paxm_provider_postgres.settings import CONFIG_KEYS, validate

    return ProviderType(
        type="postgres",
        factory=_factory,
        description="PostgreSQL team memory (full-text + pg_trgm; personal and team scopes)",
        capabilities=CAPABILITIES,
        config_keys=CONFIG_KEYS,
        locality="keyed",
        passive_timeout=1.5,
        validate=validate,
        package="paxm-provider-postgres",
        setup_priority=20,
    )


@hookimpl
def paxm_register_providers(register: Callable[..., None]) -> None:
    register(provider_type())
