"""Config validation: every problem names the key path and the fix.

Covers upstream's ``validate.go`` rules plus a few upstream leaves to fail at run time
(unknown config version, routes naming undefined providers, out-of-range thresholds and
weights, non-positive provider timeouts).  Validation runs on load and before every save,
so an invalid config is never written.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING

from paxm_core.api.errors import ConfigError
from paxm_core.api.provider_config import ProviderConfig
from paxm_core.config.model import (
    Config,
    RouteConfig,
    ThresholdsConfig,
)
from paxm_core.config.normalize import slug_id

if TYPE_CHECKING:
    from paxm_core.config.catalog import ProviderCatalog

__all__ = ["SUPPORTED_VERSIONS", "validate"]

SUPPORTED_VERSIONS = (0, 1)
_OWNER_NAME = r"[a-z0-9][a-z0-9_.-]{0,63}"  # compiled on first use (``re`` caches it)
_TIERS = ("stm", "ltm")
_SCOPE_TYPES = ("personal", "team")


def _fail(path: str, message: str) -> None:
    raise ConfigError(message, path=path)


def _positive_duration(path: str, value: float | None) -> None:
    if value is not None and not value > 0:
        _fail(path, 'must be a positive duration; use a value like "250ms" or "30s", or remove the key')


def _thresholds(path: str, thresholds: ThresholdsConfig) -> None:
    for key in ("min_relevance", "min_score"):
        value = getattr(thresholds, key)
        if not (0.0 <= value <= 1.0):
            _fail(f"{path}.{key}", f"{value} is out of range; use a number from 0 to 1")


def _routes(path: str, routes: list[RouteConfig], config: Config) -> None:
    for i, route in enumerate(routes):
        where = f"{path}.providers[{i}]"
        if not route.name.strip():
            _fail(f"{where}.name", "is missing; set it to a provider name from `providers:`")
        if route.name not in config.providers:
            known = ", ".join(sorted(config.providers)) or "none"
            _fail(
                f"{where}.name",
                f"unknown provider {route.name!r}; define providers.{route.name} or use one of: {known}",
            )
        _positive_duration(f"{where}.timeout", route.timeout)
        if route.weight < 0 or not math.isfinite(route.weight):
            _fail(f"{where}.weight", f"{route.weight} is invalid; use a positive number (1 = neutral)")
        if route.thresholds is not None:
            _thresholds(f"{where}.thresholds", route.thresholds)


def _providers(config: Config) -> None:
    for name in sorted(config.providers):
        provider = config.providers[name]
        where = f"providers.{name}"
        if not name.strip():
            _fail("providers", "a provider has an empty name; give every provider instance a name")
        if provider.enabled:
            _provider_type_checks(where, provider, config.provider_types)
        _positive_duration(f"{where}.timeout", provider.timeout)


def _provider_type_checks(where: str, provider: ProviderConfig, types: ProviderCatalog) -> None:
    """The provider type's own ``validate`` (its keys are its business); uninstalled types pass here."""
    spec = types.lookup(provider.type or "")
    if spec is None or spec.validate is None:
        return
    try:
        problems = spec.validate(provider)
    except Exception as exc:  # a plugin bug must not make every config unloadable
        problems = [f"the {spec.type} provider's validation failed: {type(exc).__name__}: {exc}"]
    if problems:
        _fail(where, "; ".join(problems))


def _identity(config: Config) -> None:
    if config.identity.user_id.strip() and not slug_id(config.identity.user_id):
        _fail("identity.user_id", "must contain letters or numbers; e.g. `user_id: alice`")
    for name in sorted(config.agents):
        agent = config.agents[name]
        if agent.agent_id.strip() and not slug_id(agent.agent_id):
            _fail(f"agents.{name}.agent_id", "must contain letters or numbers, or remove it to use <agent>-<user>")


def _capture_queue(config: Config) -> None:
    queue = config.capture_queue
    _positive_duration("capture_queue.max_episode_age", queue.max_episode_age)
    _positive_duration("capture_queue.retry_min", queue.retry_min)
    for provider in sorted(queue.provider_concurrency):
        if queue.provider_concurrency[provider] <= 0:
            _fail(f"capture_queue.provider_concurrency.{provider}", "must be a positive whole number, e.g. 1")
    if queue.max_attempts < 0:
        _fail("capture_queue.max_attempts", "must not be negative; use 0 for the default (10)")


def _workspace_privacy(config: Config) -> None:
    if config.workspace.effective_mode not in ("project", "directory"):
        _fail("workspace.mode", f"unknown mode {config.workspace.mode!r}; use project or directory")
    for index, pattern in enumerate(config.privacy.redact_patterns):
        try:
            re.compile(pattern)
        except re.error as exc:
            _fail(f"privacy.redact_patterns[{index}]", f"not a valid regular expression ({exc}); fix or remove it")
    holdback = config.passive.holdback
    if not 0.0 <= holdback < 1.0:
        _fail("passive.holdback", "must be at least 0 and below 1, e.g. 0.1 (one session in ten); 0 turns it off")


def _agents(config: Config) -> None:
    for name in sorted(config.agents):
        agent = config.agents[name]
        owner = agent.integration.owner.strip().lower()
        where = f"agents.{name}.integration.owner"
        # Which plugin owners exist is the integrations' business (``Integration.owners``,
        # checked by setup and doctor); a config file only has to name one sanely.
        if owner and not re.fullmatch(_OWNER_NAME, owner):
            _fail(where, f"{agent.integration.owner!r} is invalid; use paxm or an integration's owner name")
        for event in sorted(agent.hooks):
            recall = agent.hooks[event].recall
            base = f"agents.{name}.hooks.{event}.recall"
            _positive_duration(f"{base}.timeout", recall.timeout)
            _positive_duration(f"{base}.timeout_extra", recall.timeout_extra)
            if recall.max_results < 0:
                _fail(f"{base}.max_results", "must not be negative")
            if recall.initial is not None:
                _positive_duration(f"{base}.initial.timeout", recall.initial.timeout)
                _positive_duration(f"{base}.initial.timeout_extra", recall.initial.timeout_extra)


def _recall_profiles(config: Config) -> None:
    for name in sorted(config.recall_profiles):
        profile = config.recall_profiles[name]
        where = f"recall_profiles.{name}"
        _routes(where, profile.providers, config)
        for i, tier in enumerate(profile.tiers):
            if tier.strip().lower() not in _TIERS:
                _fail(f"{where}.tiers[{i}]", f"{tier!r} is invalid; use stm or ltm (or remove tiers for both)")
        if profile.max_results < 0:
            _fail(f"{where}.max_results", "must not be negative; use 0 for the default (3)")
        _thresholds(f"{where}.thresholds", profile.thresholds)


def _write_profiles(config: Config) -> None:
    for name in sorted(config.write_profiles):
        profile = config.write_profiles[name]
        where = f"write_profiles.{name}"
        scope = profile.scope
        scope_type = scope.type.strip().lower()
        if scope_type or scope.id.strip():
            if scope_type not in _SCOPE_TYPES:
                _fail(f"{where}.scope.type", f"{scope.type!r} is invalid; use personal or team")
            if not slug_id(scope.id):
                _fail(f"{where}.scope.id", "must contain letters or numbers, e.g. `id: platform-team`")
        _routes(where, profile.providers, config)
        tier = profile.tier.strip().lower()
        if tier and tier not in _TIERS:
            _fail(f"{where}.tier", f"{profile.tier!r} is invalid; use stm or ltm")
        tier = tier or ("stm" if name.strip().lower() == "stm" else "ltm")
        if tier == "ltm" and profile.expires_after is not None:
            _fail(
                f"{where}.expires_after", "long-term (ltm) memories never expire; remove expires_after or set tier: stm"
            )
        if tier == "stm":
            if profile.expires_after is None:
                _fail(f"{where}.expires_after", 'is required for tier stm; add e.g. `expires_after: "24h"`')
            _positive_duration(f"{where}.expires_after", profile.expires_after)


def validate(config: Config) -> None:
    """Raise :class:`~paxm_core.api.errors.ConfigError` for the first problem found in ``config``.

    The error's message is ``<key path>: <problem>; <fix>``.
    """
    if config.version not in SUPPORTED_VERSIONS:
        _fail("version", f"unsupported config version {config.version}; this paxm reads version 1")
    _providers(config)
    _identity(config)
    _capture_queue(config)
    _workspace_privacy(config)
    _agents(config)
    _recall_profiles(config)
    _write_profiles(config)
