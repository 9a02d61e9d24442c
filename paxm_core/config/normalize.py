"""Normalization: fill derived defaults and fold legacy keys, as upstream's ``normalize.go``.

Runs after validation on load and before every save, so code reading a :class:`Config`
can rely on: passive profiles and ``stm``/``ltm`` write profiles exist, route weights are
set, write scopes default to ``personal:<user>``, ids are slugs, and legacy shapes
(``local`` provider, per-provider ``read``/``write``/``required``/``weight``, top-level
``hooks``) are gone.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import paxm_core.config.defaults as d
from paxm_core.api.provider_config import ProviderConfig
from paxm_core.config.model import (
    AgentConfig,
    AgentHookConfig,
    Config,
    LegacyHookConfig,
    RecallProfileConfig,
    RouteConfig,
    ScopeConfig,
    ThresholdsConfig,
    WriteProfileConfig,
)

if TYPE_CHECKING:
    from paxm_core.config.catalog import ProviderCatalog

__all__ = ["LEGACY_PROVIDER_KEYS", "default_user_id", "normalize", "resolve_command", "slug_id"]

#: Pre-profile routing keys on a provider; consumed by normalization, never written back.
LEGACY_PROVIDER_KEYS = ("read", "write", "required", "weight")


def slug_id(value: str) -> str:
    """Lowercase letters/digits; every other run becomes a single ``-``; trimmed (``"Todd S."`` → ``todd-s``)."""
    out: list[str] = []
    dash = False
    for char in value.strip().lower():
        if char.isalnum():
            out.append(char)
            dash = False
        elif out and not dash:
            out.append("-")
            dash = True
    return "".join(out).strip("-")


def default_user_id() -> str:
    """The OS user as a slug (``$USER``, then the login name), ``user`` when unknown."""
    return slug_id(os.environ.get("USER") or _login_name()) or "user"


def _login_name() -> str:
    """What ``getpass.getuser()`` answers, without importing getpass (it brings termios)."""
    for variable in ("LOGNAME", "USER", "LNAME", "USERNAME"):
        if os.environ.get(variable):
            return os.environ[variable]
    try:
        import pwd

        return pwd.getpwuid(os.getuid()).pw_name
    except Exception:  # no passwd entry in some containers, or no pwd module
        return ""


def _legacy_bool(extra: Mapping[str, object], key: str, default: bool) -> bool:
    value = extra.get(key)
    return value if isinstance(value, bool) else default


def _legacy_weight(extra: Mapping[str, object]) -> float:
    value = extra.get("weight")
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value != 0:
        return float(value)
    return d.DEFAULT_ROUTE_WEIGHT


def resolve_command(command: str, base: Path | None) -> str:
    """A provider's ``command`` as it is started: ``~`` expanded, a relative path made absolute.

    A name without a slash (``my-plugin``) is left for the ``PATH`` lookup; a relative path
    (``./plugin``, ``bin/plugin``) names a file next to the config, so it resolves against
    ``base``, the config file's directory (the working directory when there is none).
    """
    stripped = command.strip()
    if not stripped:
        return command
    expanded = os.path.expanduser(stripped)
    bare = os.sep not in expanded and not (os.altsep and os.altsep in expanded)
    if bare or os.path.isabs(expanded):
        return expanded
    return os.path.normpath(os.path.join(base if base is not None else os.getcwd(), expanded))


def _normalize_provider(provider: ProviderConfig, types: ProviderCatalog, base: Path | None) -> ProviderConfig:
    if provider.path:
        provider.path = str(Path(provider.path).expanduser())
    if provider.command:
        provider.command = resolve_command(provider.command, base)
    # A type's own defaults (URLs, canonical spellings) are its business: ProviderType.normalize,
    # for enabled providers only: asking a disabled one's type would import its plugin for
    # nothing (a hook daemon's start pays for every import), and it is not built anyway.
    spec = types.lookup(provider.type) if provider.enabled and provider.type else None
    if spec is not None and spec.normalize is not None:
        try:
            spec.normalize(provider)
        except Exception:  # a plugin bug must not make every config unloadable; its factory will complain
            pass
    return provider


def _normalize_providers(config: Config) -> bool:
    """Default ``type`` to the key, map legacy ``local`` to ``sqlite``; True when ``local`` was renamed."""
    types = config.provider_types
    base = config.path.absolute().parent if str(config.path) not in ("", ".") else None
    normalized: dict[str, ProviderConfig] = {}
    legacy_local: ProviderConfig | None = None
    for name, provider in config.providers.items():
        if not provider.type:
            provider.type = name
        if provider.type == "local":
            provider.type = "sqlite"
            if provider.path.lower().endswith(".jsonl"):
                # The old JSONL store is not migrated; the SQLite file takes its place.
                provider.path = provider.path[: -len(".jsonl")] + ".sqlite"
        if name == "local" and provider.type == "sqlite":
            legacy_local = _normalize_provider(provider, types, base)
            continue
        normalized[name] = _normalize_provider(provider, types, base)
    if legacy_local is not None:
        normalized.setdefault("sqlite", legacy_local)
    config.providers = normalized
    return legacy_local is not None


def _legacy_routes(providers: dict[str, ProviderConfig], direction: str) -> list[RouteConfig]:
    return [
        RouteConfig(
            name=name,
            required=_legacy_bool(p.extra, "required", True),
            weight=_legacy_weight(p.extra),
        )
        for name, p in providers.items()
        if p.enabled and _legacy_bool(p.extra, direction, True)
    ]


def _normalize_route(route: RouteConfig) -> RouteConfig:
    if route.weight == 0:
        route.weight = d.DEFAULT_ROUTE_WEIGHT
    return route


def _normalize_tier(value: str) -> str:
    return "stm" if value.strip().lower() == "stm" else "ltm"


def _normalize_recall_profile(profile: RecallProfileConfig) -> RecallProfileConfig:
    if profile.max_results == 0:
        profile.max_results = d.DEFAULT_RECALL_MAX_RESULTS
    if profile.thresholds == ThresholdsConfig():
        profile.thresholds = d.default_recall_thresholds()
    if not profile.ranking.type:
        profile.ranking.type = "weighted_relevance"
    profile.tiers = list(dict.fromkeys(_normalize_tier(tier) for tier in profile.tiers))
    profile.providers = [_normalize_route(r) for r in profile.providers]
    return profile


def _normalize_write_profile(name: str, profile: WriteProfileConfig) -> WriteProfileConfig:
    profile.tier = _normalize_tier(profile.tier if profile.tier.strip() else name)  # no tier: by the profile's name
    for route in profile.providers:
        _normalize_route(route)
        if route.timeout is None:
            route.timeout = d.DEFAULT_PROVIDER_WRITE_TIMEOUT
    return profile


def _normalize_passive_routes(
    routes: list[RouteConfig], providers: dict[str, ProviderConfig], types: ProviderCatalog
) -> None:
    for route in routes:
        provider = providers.get(route.name)
        spec = types.lookup(provider.type) if provider is not None else None
        cloud = spec is not None and spec.locality == "cloud"
        if route.timeout is None or (cloud and route.timeout == d.DEFAULT_PROVIDER_RECALL_TIMEOUT):
            route.timeout = d.passive_route_timeout(spec)
        if cloud and route.thresholds is None:
            route.thresholds = d.cloud_thresholds()


def _rename_routes(routes: list[RouteConfig], old: str, new: str) -> list[RouteConfig]:
    out: list[RouteConfig] = []
    index: dict[str, int] = {}
    for route in routes:
        if route.name == old:
            route.name = new
        if route.name in index:
            existing = out[index[route.name]]
            existing.required = existing.required or route.required
            existing.weight = max(existing.weight, route.weight)
            continue
        index[route.name] = len(out)
        out.append(route)
    return out


def _normalize_profiles(config: Config, renamed_local: bool) -> None:
    if not config.recall_profiles:  # the next loop fills its max_results, thresholds and ranking
        config.recall_profiles = {"default": RecallProfileConfig(providers=_legacy_routes(config.providers, "read"))}
    for name, recall in config.recall_profiles.items():
        _normalize_recall_profile(recall)
        if name in ("passive", "passive_initial"):
            _normalize_passive_routes(recall.providers, config.providers, config.provider_types)
    base = config.recall_profiles.get("default", RecallProfileConfig())
    if "passive" not in config.recall_profiles:
        config.recall_profiles["passive"] = d.passive_recall_profile_from(base)
    if "passive_initial" not in config.recall_profiles:
        config.recall_profiles["passive_initial"] = d.passive_initial_recall_profile_from(
            config.recall_profiles.get("passive", base)
        )
    if not config.write_profiles:
        config.write_profiles = {"default": WriteProfileConfig(providers=_legacy_routes(config.providers, "write"))}
    if renamed_local:
        for recall in config.recall_profiles.values():
            recall.providers = _rename_routes(recall.providers, "local", "sqlite")
        for write in config.write_profiles.values():
            write.providers = _rename_routes(write.providers, "local", "sqlite")
    for name, write in config.write_profiles.items():
        _normalize_write_profile(name, write)
    routes = config.write_profiles.get("default", WriteProfileConfig()).providers
    if not routes:
        routes = _normalize_write_profile(
            "default", WriteProfileConfig(_legacy_routes(config.providers, "write"))
        ).providers
    if "ltm" not in config.write_profiles:
        config.write_profiles["ltm"] = d.ltm_write_profile_from(routes)
    if "stm" not in config.write_profiles:
        config.write_profiles["stm"] = d.stm_write_profile_from(routes)


def _legacy_agents(hooks: dict[str, LegacyHookConfig]) -> dict[str, AgentConfig]:
    if not hooks:
        return d.default_agents()
    agents: dict[str, AgentConfig] = {}
    for name, hook in hooks.items():
        agent = AgentConfig(enabled=hook.enabled, active_recall=d.active_recall())
        for event, event_config in hook.events.items():
            # _normalize_hook, run next, fills an empty profile with "default"
            agent.hooks[event] = AgentHookConfig(recall=copy.deepcopy(event_config.recall))
        agents[name] = agent
    return agents


def _normalize_hook(event: str, hook: AgentHookConfig) -> AgentHookConfig:
    recall = hook.recall
    if event == "user_input" and recall.enabled and recall.initial is None:
        recall.initial = d.default_initial_recall()
    recall.profile = recall.profile or "default"
    recall.output = recall.output or "markdown"
    if recall.enabled and recall.timeout is None and recall.timeout_extra is None:
        recall.timeout_extra = d.DEFAULT_PASSIVE_RECALL_TIMEOUT_EXTRA
    if recall.timeout == d.DEFAULT_PASSIVE_RECALL_TIMEOUT and recall.timeout_extra is None:
        # Old configs spelled the budget as an absolute 800ms; it is now route timeout + extra.
        recall.timeout = None
        recall.timeout_extra = d.DEFAULT_PASSIVE_RECALL_TIMEOUT_EXTRA
    initial = recall.initial
    if initial is not None:
        initial.profile = initial.profile or recall.profile
        initial.query_template = initial.query_template or recall.query_template
        initial.max_results = initial.max_results or recall.max_results
        if initial.timeout is None and initial.timeout_extra is None:
            initial.timeout = recall.timeout
            initial.timeout_extra = recall.timeout_extra
    write = hook.write
    write.profile = write.profile or "default"
    write.template = write.template or "{{ .prompt }}"
    write.mode = write.mode or "prompt"
    if write.enabled:
        write.buffer.enabled = True
    if write.buffer.enabled and write.buffer.flush_count == 0:
        write.buffer.flush_count = d.DEFAULT_HOOK_BUFFER_FLUSH_COUNT
    return hook


def _normalize_agent(agent: AgentConfig) -> AgentConfig:
    agent.active_recall.profile = agent.active_recall.profile or "default"
    agent.active_recall.output = agent.active_recall.output or "markdown"
    if "user_prompt" in agent.hooks:
        legacy = agent.hooks.pop("user_prompt")
        agent.hooks.setdefault("user_input", legacy)
    for event, hook in agent.hooks.items():
        _normalize_hook(event, hook)
    return agent


def _normalize_identity(config: Config) -> None:
    user = slug_id(config.identity.user_id)
    config.identity.user_id = user
    for name, agent in config.agents.items():
        agent.agent_id = slug_id(agent.agent_id)
        if not agent.agent_id and user:
            agent.agent_id = slug_id(f"{name}-{user}")
    for write in config.write_profiles.values():
        write.scope.type = write.scope.type.strip().lower()
        write.scope.id = slug_id(write.scope.id)
        if not write.scope.type and not write.scope.id and user:
            write.scope = ScopeConfig(type="personal", id=user)


def _normalize_telemetry(config: Config) -> None:
    telemetry = config.telemetry
    if telemetry.enabled is None:
        telemetry.enabled = True
    telemetry.events_file = telemetry.events_file or "events.jsonl"
    telemetry.metrics_file = telemetry.metrics_file or "metrics.json"
    telemetry.max_event_file_bytes = telemetry.max_event_file_bytes or d.DEFAULT_TELEMETRY_MAX_EVENT_FILE_BYTES
    telemetry.max_event_files = telemetry.max_event_files or d.DEFAULT_TELEMETRY_MAX_EVENT_FILES
    telemetry.retention_days = telemetry.retention_days or d.DEFAULT_TELEMETRY_RETENTION_DAYS
    telemetry.query_preview_chars = telemetry.query_preview_chars or d.DEFAULT_TELEMETRY_QUERY_PREVIEW
    if telemetry.dir:
        telemetry.dir = str(Path(telemetry.dir).expanduser())
    else:
        # Upstream leaves an empty dir to the runtime; filling it here gives one answer everywhere.
        telemetry.dir = d.default_telemetry(config.path).dir


def _normalize_runtime(config: Config) -> None:
    _normalize_telemetry(config)
    queue = config.capture_queue
    if queue.path:
        queue.path = str(Path(queue.path).expanduser())
    if queue.max_episode_age is None:
        queue.max_episode_age = d.DEFAULT_CAPTURE_MAX_EPISODE_AGE
    if queue.retry_min is None:
        queue.retry_min = d.DEFAULT_CAPTURE_RETRY_MIN
    queue.provider_concurrency.setdefault("sqlite", 1)
    queue.provider_concurrency.setdefault("default", 4)
    if queue.max_attempts == 0:
        queue.max_attempts = d.DEFAULT_CAPTURE_MAX_ATTEMPTS
    for provider in config.providers.values():
        for key in LEGACY_PROVIDER_KEYS:
            provider.extra.pop(key, None)
    config.hooks = {}


def normalize(config: Config, *, in_place: bool = False) -> Config:
    """Return a normalized deep copy of ``config`` (or ``config`` itself, changed, with ``in_place``).

    Normalizing twice gives the same result; with no ``identity.user_id`` the OS user is used,
    so every memory has an owner.  ``in_place`` skips the copy for freshly parsed configs.
    """
    if not in_place:
        config = copy.deepcopy(config)
    if config.version == 0:
        config.version = d.CONFIG_VERSION
    if not config.identity.user_id.strip():
        config.identity.user_id = default_user_id()
    renamed = _normalize_providers(config)
    _normalize_profiles(config, renamed)
    if not config.agents:
        config.agents = _legacy_agents(config.hooks)
    for agent in config.agents.values():
        _normalize_agent(agent)
    _normalize_identity(config)
    _normalize_runtime(config)
    return config
