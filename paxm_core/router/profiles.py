"""Turning config profiles into router policies.

Kept apart from the router so the router never reads config and the conversion is shared by
``Runtime``, ``Tools`` and the capture worker.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from paxm_core.api.errors import ConfigError, UsageError
from paxm_core.api.types import TIER_STM, MemoryScope, normalize_tier
from paxm_core.router.pipeline import normalized_tiers
from paxm_core.router.policy import PutPolicy, Route, SearchPolicy

if TYPE_CHECKING:
    from paxm_core.config import Config, RouteConfig

__all__ = ["default_recall_profile", "put_policy", "required_providers", "routes_from", "search_policy"]


def routes_from(routes: list[RouteConfig]) -> list[Route]:
    """Config routes -> router routes (route thresholds become per-provider overrides)."""
    out: list[Route] = []
    for route in routes:
        thresholds = route.thresholds
        timeout = route.timeout if route.timeout is not None and route.timeout > 0 else None
        out.append(
            Route(
                name=route.name,
                required=route.required,
                weight=route.weight,
                timeout=timeout,
                min_relevance=thresholds.min_relevance if thresholds is not None else 0.0,
                min_score=thresholds.min_score if thresholds is not None else 0.0,
            )
        )
    return out


def default_recall_profile(config: Config) -> str:
    """``default``, unless upstream's default agent's active recall names another profile (as upstream)."""
    from paxm_core.config.defaults import UPSTREAM_DEFAULT_AGENT

    agent = config.agents.get(UPSTREAM_DEFAULT_AGENT)
    if agent is not None and agent.active_recall.enabled and agent.active_recall.profile.strip():
        return agent.active_recall.profile.strip()
    return "default"


#: The largest recall limit accepted from callers (CLI, MCP): far above any useful context,
#: small enough that candidate pools and provider queries stay sane.
MAX_RECALL_LIMIT = 1000


def search_policy(config: Config, name: str | None = None, limit: int | None = None) -> SearchPolicy:
    """The :class:`SearchPolicy` of recall profile ``name`` (``limit`` overrides ``max_results``)."""
    name = (name or "").strip() or default_recall_profile(config)
    profile = config.recall_profiles.get(name)
    if profile is None:
        known = ", ".join(sorted(config.recall_profiles)) or "none"
        raise UsageError(f"recall profile {name!r} is not configured (configured: {known})")
    if limit is not None and limit > MAX_RECALL_LIMIT:
        raise UsageError(f"limit {limit} is too large; ask for at most {MAX_RECALL_LIMIT} memories")
    if not any(p.enabled for p in config.providers.values()):  # say which providers lack `enabled: true`
        from paxm_core.config.usable import no_provider_message

        raise ConfigError(no_provider_message(config))
    return SearchPolicy(
        routes=routes_from(profile.providers),
        limit=limit if limit is not None and limit > 0 else profile.max_results,
        min_relevance=profile.thresholds.min_relevance,
        min_score=profile.thresholds.min_score,
        recency_boost=profile.ranking.recency_boost,
        tiers=normalized_tiers(profile.tiers),
    )


def put_policy(config: Config, name: str | None = None) -> PutPolicy:
    """The :class:`PutPolicy` of write profile ``name``.

    Also enforces the lifecycle rule even for configs built in code: an ``stm`` profile needs
    a positive ``expires_after`` and an ``ltm`` profile must not set one.
    """
    name = (name or "").strip() or "default"
    profile = config.write_profiles.get(name)
    if profile is None:
        known = ", ".join(sorted(config.write_profiles)) or "none"
        raise UsageError(f"write profile {name!r} is not configured (configured: {known})")
    tier = normalize_tier(profile.tier or ("stm" if name == "stm" else "ltm"))
    expires = profile.expires_after if profile.expires_after and profile.expires_after > 0 else None
    where = f"write_profiles.{name}.expires_after"
    if tier == TIER_STM and expires is None:
        raise ConfigError('stm memories need a positive expiry; set it like "24h"', path=where)
    if tier != TIER_STM and profile.expires_after:
        raise ConfigError("ltm memories must not expire; remove it or use tier stm", path=where)
    scope = MemoryScope(profile.scope.type.strip(), profile.scope.id.strip())
    if scope.is_empty() and config.identity.user_id:
        scope = MemoryScope("personal", config.identity.user_id)
    return PutPolicy(routes=routes_from(profile.providers), tier=tier, expires_after=expires, scope=scope)


def required_providers(config: Config) -> set[str]:
    """Provider names marked required by any recall or write profile."""
    recall = [r for p in config.recall_profiles.values() for r in p.providers]
    write = [r for p in config.write_profiles.values() for r in p.providers]
    return {r.name for r in recall + write if r.required}
