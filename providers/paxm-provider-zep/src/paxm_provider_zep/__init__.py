"""Zep as a paxm provider.  Only the hookimpl lives here; the SDK is imported when a provider is built."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from paxm_core import ProviderConfig, hookimpl
from paxm_core.api.protocols import ConfigKey, ProviderType

#: config ``search_scope`` values (kept here so validation does not import the SDK mapping)
SEARCH_SCOPES = ("episodes", "edges", "nodes", "observations", "thread_summaries", "auto")


def _factory(name: str, config: ProviderConfig) -> Any:
    from paxm_provider_zep.provider import ZepProvider

    return ZepProvider(name, config)


def validate(config: ProviderConfig) -> list[str]:
    """Every problem with ``search_scope`` and ``max_characters``, one sentence each."""
    problems = []
    if config.text("search_scope", "episodes") not in SEARCH_SCOPES:
        scope = config.option("search_scope")
        problems.append(f"search_scope {scope!r} is invalid; use one of {', '.join(SEARCH_SCOPES)}")
    limit = config.option("max_characters", 0)
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        problems.append(f"max_characters {limit!r} is invalid; use a whole number, 0 for the provider default")
    return problems


def _normalize(config: ProviderConfig) -> None:
    if not config.option("search_scope"):
        config.extra["search_scope"] = "episodes"


PROVIDER_TYPE = ProviderType(
    type="zep",
    factory=_factory,
    description="Zep knowledge graph (zep-cloud SDK 4.x)",
    capabilities=frozenset({"put_batch", "delete", "eval_scope_cleanup", "attribution"}),
    config_keys=(
        ConfigKey("api_key", "Zep API key (or env:NAME)", secret=True, required=True, ask=True),
        ConfigKey("base_url", "Zep API base URL (default: Zep Cloud)"),
        ConfigKey("user_id", "store in this Zep user's graph (default: the paxm user)"),
        ConfigKey("graph_id", "store in this named graph instead of a user graph"),
        ConfigKey("search_scope", "what search returns", default="episodes", choices=SEARCH_SCOPES),
        ConfigKey("source_description", "episode source description"),
        ConfigKey("max_characters", "longest episode sent", kind="int"),
        ConfigKey("timeout", "per-call timeout", kind="duration"),
    ),
    locality="keyed",
    validate=validate,
    package="paxm-provider-zep",
    setup_priority=10,
    normalize=_normalize,
    default_entry=ProviderConfig(type="zep", extra={"search_scope": "episodes"}),
)


@hookimpl
def paxm_register_providers(register: Callable[..., None]) -> None:
    register(PROVIDER_TYPE)
