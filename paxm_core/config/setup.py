"""What ``paxm setup`` does to a config, independent of any prompting or printing.

Follows upstream's setup flow: start from the defaults (or the existing file merged with the
defaults), pin provider/agent selections, route newly enabled providers into the six standard
profiles, drop disabled ones from them, record ``passive_write_started_at`` once, add
``team-<id>`` write profiles, and set the integration owner.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from paxm_core.config import defaults as d
from paxm_core.config.defaults import default_config
from paxm_core.config.loader import config_exists, load_config
from paxm_core.config.model import (
    OWNER_CLAUDE_PLUGIN,
    OWNER_CODEX_PLUGIN,
    OWNER_PAXM,
    AgentConfig,
    AgentHookConfig,
    Config,
    HookBufferConfig,
    HookInsertionConfig,
    RecallProfileConfig,
    RouteConfig,
    ScopeConfig,
    TelemetryConfig,
)
from paxm_core.config.normalize import default_user_id, slug_id
from paxm_core.errors import ConfigError, UsageError
from paxm_core.timefmt import format_time

__all__ = [
    "AGENT_ALIASES",
    "AGENT_DISPLAY_NAMES",
    "KEYED_PROVIDER_TYPES",
    "add_integration_agents",
    "SetupOptions",
    "agent_order",
    "apply_setup",
    "passive_write_enabled",
    "prepare_setup",
    "provider_order",
    "setup_base_config",
]

RECALL_PROFILES = ("default", "passive", "passive_initial")
WRITE_PROFILES = ("default", "stm", "ltm")
LEGACY_DEFAULT_RECALL_MAX_RESULTS = 8
#: Provider types that cannot work without an API key.
KEYED_PROVIDER_TYPES = frozenset({"zep", "mem0-cloud", "memos-cloud"})
#: Provider types ``--api-key`` / ``--base-url`` never apply to (no credentials, no URL).
LOCAL_PROVIDER_TYPES = frozenset({"sqlite", "jsonrpc"})

AGENT_DISPLAY_NAMES = {
    "codex": "Codex",
    "claude": "Claude Code",
    "pi": "Pi",
    "opencode": "opencode",
    "cursor": "Cursor",
    "trae": "TRAE",
    "trae-cn": "TRAE CN",
    "kimi": "Kimi Code",
    "zcode": "ZCode",
    "kiro": "Kiro",
    "cline": "Cline",
}
#: Other spellings ``--agent`` accepts (as upstream's uninstall does).
AGENT_ALIASES = {"claude-code": "claude", "kimi-code": "kimi", "codex-cli": "codex", "traecn": "trae-cn"}
_AGENT_PRIORITY = {
    name: i
    for i, name in enumerate(
        ("codex", "claude", "pi", "opencode", "cursor", "trae", "trae-cn", "kimi", "zcode", "kiro", "cline")
    )
}
_PROVIDER_PRIORITY = {
    t: i for i, t in enumerate(("sqlite", "zep", "mem0", "mem0-cloud", "memos", "memos-cloud", "jsonrpc", "openviking"))
}
_PLUGIN_TARGET = {OWNER_CODEX_PLUGIN: "codex", OWNER_CLAUDE_PLUGIN: "claude"}


def agent_order(config: Config) -> list[str]:
    """Agent names in setup order (codex, claude, pi, opencode, cursor, ..., then others by name)."""
    return sorted(config.agents, key=lambda n: (_AGENT_PRIORITY.get(n, 100), n))


def provider_order(config: Config) -> list[str]:
    """Provider instance names in setup order (sqlite first, then by type priority and name)."""
    return sorted(config.providers, key=lambda n: (_PROVIDER_PRIORITY.get(config.providers[n].type, 100), n))


@dataclass
class SetupOptions:
    """The answers ``paxm setup --yes`` takes from flags."""

    providers: list[str] = field(default_factory=list)
    agents: list[str] = field(default_factory=list)
    user_id: str = ""
    team_ids: str = ""
    integration: str = OWNER_PAXM
    api_key: str = ""
    base_url: str = ""
    graph_id: str = ""
    now: datetime | None = None


# --------------------------------------------------------------------------- base config


def _merge_hook(current: AgentHookConfig, default: AgentHookConfig) -> AgentHookConfig:
    recall, default_recall = current.recall, default.recall
    if (
        recall.profile == "default"
        and default_recall.profile == "passive"
        and recall.query_template == default_recall.query_template
    ):
        # Configs from before passive profiles existed: move hook recall onto them.
        recall.profile = "passive"
        if default_recall.max_results:
            recall.max_results = default_recall.max_results
    if recall.insertion == HookInsertionConfig():
        recall.insertion = copy.deepcopy(default_recall.insertion)
    if recall.initial is None and default_recall.initial is not None:
        recall.initial = copy.deepcopy(default_recall.initial)
    write, default_write = current.write, default.write
    write.profile = write.profile or default_write.profile
    write.template = write.template or default_write.template
    write.mode = write.mode or default_write.mode
    if not write.enabled and write.template == "{{ .prompt }}" and write.mode == "prompt" and default_write.enabled:
        current.write = copy.deepcopy(default_write)
        return current
    if write.buffer == HookBufferConfig():
        write.buffer = copy.deepcopy(default_write.buffer)
    return current


def _merge_telemetry(current: TelemetryConfig, default: TelemetryConfig) -> None:
    for name in ("enabled", "dir", "events_file", "metrics_file"):
        if getattr(current, name) in (None, ""):
            setattr(current, name, getattr(default, name))
    for name in ("max_event_file_bytes", "max_event_files", "retention_days", "query_preview_chars"):
        if not getattr(current, name):
            setattr(current, name, getattr(default, name))


def setup_base_config(path: Path, use_existing: bool) -> Config:
    """The config setup starts from: the defaults, or the existing file with missing defaults merged in."""
    defaults = default_config(path)
    if not use_existing:
        return defaults
    config = load_config(path)
    for name, provider in defaults.providers.items():
        config.providers.setdefault(name, provider)
    for name, profile in defaults.recall_profiles.items():
        existing = config.recall_profiles.get(name)
        if existing is not None:
            if (
                name == "default"
                and existing.max_results == LEGACY_DEFAULT_RECALL_MAX_RESULTS
                and existing.thresholds == d.default_recall_thresholds()
            ):
                existing.max_results = d.DEFAULT_RECALL_MAX_RESULTS
            continue
        base = config.recall_profiles.get("default", RecallProfileConfig())
        if name == "passive":
            config.recall_profiles[name] = d.passive_recall_profile_from(base)
        elif name == "passive_initial":
            config.recall_profiles[name] = d.passive_initial_recall_profile_from(base)
        else:
            config.recall_profiles[name] = profile
    for name, write in defaults.write_profiles.items():
        config.write_profiles.setdefault(name, write)
    _merge_telemetry(config.telemetry, defaults.telemetry)
    for name, agent in defaults.agents.items():
        if name not in config.agents:
            config.agents[name] = agent
            continue
        current = config.agents[name]
        for event, hook in agent.hooks.items():
            if event in current.hooks:
                current.hooks[event] = _merge_hook(current.hooks[event], hook)
            else:
                current.hooks[event] = hook
    return config


# --------------------------------------------------------------------------- routing


def _upsert(routes: list[RouteConfig], provider: str, required: bool) -> RouteConfig:
    for route in routes:
        if route.name == provider:
            route.required = required
            if route.weight == 0:
                route.weight = d.DEFAULT_ROUTE_WEIGHT
            return route
    route = RouteConfig(name=provider, required=required, weight=d.DEFAULT_ROUTE_WEIGHT)
    routes.append(route)
    return route


def _route_provider(config: Config, provider: str, required: bool) -> None:
    kind = config.providers[provider].type
    default = config.recall_profiles.setdefault("default", RecallProfileConfig())
    _upsert(default.providers, provider, required)
    for name in ("passive", "passive_initial"):
        if name not in config.recall_profiles:
            derive = d.passive_recall_profile_from if name == "passive" else d.passive_initial_recall_profile_from
            config.recall_profiles[name] = derive(default)
        route = _upsert(config.recall_profiles[name].providers, provider, required)
        if route.timeout is None:
            route.timeout = d.default_provider_recall_timeout(kind)
        if d.is_cloud_provider(kind) and route.thresholds is None:
            route.thresholds = d.cloud_thresholds()
    for name in WRITE_PROFILES:
        if name not in config.write_profiles:
            continue
        _upsert(config.write_profiles[name].providers, provider, required)


def _unroute_provider(config: Config, provider: str) -> None:
    for name in RECALL_PROFILES:
        if name in config.recall_profiles:
            profile = config.recall_profiles[name]
            profile.providers = [r for r in profile.providers if r.name != provider]
    for name in WRITE_PROFILES:
        if name in config.write_profiles:
            profile_w = config.write_profiles[name]
            profile_w.providers = [r for r in profile_w.providers if r.name != provider]


# --------------------------------------------------------------------------- agents


def _write_events(agent: AgentConfig) -> list[str]:
    def supports_write(hook: AgentHookConfig) -> bool:
        w = hook.write
        return w.enabled or bool(w.profile or w.template or w.mode) or w.buffer != HookBufferConfig()

    ordered = [e for e in ("session_start", "user_input", "turn_end") if e in agent.hooks]
    extra = sorted(e for e in agent.hooks if e not in ordered)
    return [e for e in ordered + extra if supports_write(agent.hooks[e])]


def passive_write_enabled(agent: AgentConfig) -> bool:
    """Whether any hook of ``agent`` captures turns."""
    return any(agent.hooks[e].write.enabled for e in _write_events(agent))


def _agent_selected_by_config(agent: AgentConfig) -> bool:
    return agent.enabled and any(h.recall.enabled or h.write.enabled for h in agent.hooks.values())


def _pin(names: Iterable[str], options: list[str], kind: str) -> dict[str, bool]:
    selected = dict.fromkeys(options, False)
    for raw in names:
        name = raw.strip()
        if name not in selected:
            wanted = "-".join(name.lower().split())
            if kind == "agent":
                wanted = AGENT_ALIASES.get(wanted, _INTEGRATION_ALIASES.get(wanted, wanted))
            name = next((o for o in options if o.lower() == wanted), name)
        if name not in selected:
            raise UsageError(f"unknown setup {kind} {raw!r} (options: {', '.join(options)})")
        selected[name] = True
    return selected


def _team_profiles(config: Config, team_ids: str) -> None:
    base = config.write_profiles.get("ltm") or config.write_profiles.get("default")
    seen: set[str] = set()
    for value in team_ids.split(","):
        team = slug_id(value)
        if not team:
            raise UsageError(f"team ID {value.strip()!r} must contain letters or numbers")
        if team in seen:
            continue
        seen.add(team)
        profile = copy.deepcopy(base) if base is not None else d.ltm_write_profile_from([])
        profile.tier = "ltm"
        profile.expires_after = None
        profile.scope = ScopeConfig(type="team", id=team)
        config.write_profiles[f"team-{team}"] = profile


def _apply_credentials(config: Config, selected: Mapping[str, bool], options: SetupOptions) -> None:
    for name, on in selected.items():
        if not on:
            continue
        provider = config.providers[name]
        if provider.type in LOCAL_PROVIDER_TYPES:
            continue
        if options.api_key:
            provider.api_key = options.api_key
        if options.base_url:
            provider.base_url = options.base_url
        if options.graph_id and provider.type == "zep":
            provider.graph_id = options.graph_id
            provider.user_id = ""
        if provider.type in KEYED_PROVIDER_TYPES and not provider.api_key.strip():
            raise UsageError(
                f"provider {name} ({provider.type}) needs an API key; pass --api-key KEY or set PAXM_API_KEY"
                f" (or put `api_key: env:MY_KEY_VAR` under providers.{name})"
            )
        if provider.type == "zep" and not provider.graph_id and not provider.user_id:
            provider.user_id = config.identity.user_id


def apply_setup(config: Config, options: SetupOptions) -> tuple[Config, list[str]]:
    """Apply ``options`` to ``config`` (modified in place); return it and the selected agents in setup order.

    Raises :class:`UsageError` for unknown names, an empty provider selection, missing API
    keys or bad team IDs; nothing is saved by this function.
    """
    if options.integration not in (OWNER_PAXM, OWNER_CODEX_PLUGIN, OWNER_CLAUDE_PLUGIN):
        raise UsageError(
            f"unsupported setup integration {options.integration!r}; use paxm, codex-plugin or claude-plugin"
        )
    plugin_target = _PLUGIN_TARGET.get(options.integration, "")
    previously_enabled = {name: agent.enabled for name, agent in config.agents.items()}
    provider_names = provider_order(config)
    agent_names = agent_order(config)
    selected_providers = {n: config.providers[n].enabled for n in provider_names}
    selected_agents = {n: _agent_selected_by_config(config.agents[n]) for n in agent_names}

    if options.user_id.strip():
        config.identity.user_id = slug_id(options.user_id)
        if not config.identity.user_id:
            raise UsageError(f"--user-id {options.user_id!r} must contain letters or numbers")
    if not config.identity.user_id.strip():
        config.identity.user_id = default_user_id()
    if options.team_ids.strip():
        _team_profiles(config, options.team_ids)
    if options.providers:
        selected_providers = _pin(options.providers, provider_names, "provider")
    if options.agents:
        selected_agents = _pin(options.agents, agent_names, "agent")
    if plugin_target:
        selected_agents = {n: n == plugin_target for n in selected_agents}
    if not any(selected_providers.values()):
        raise UsageError("setup requires at least one memory provider; pass --provider sqlite (or another)")

    _apply_credentials(config, selected_providers, options)
    for name in provider_names:
        provider = config.providers[name]
        was_enabled = provider.enabled
        provider.enabled = selected_providers[name]
        if not provider.enabled:
            _unroute_provider(config, name)
        elif not was_enabled:
            # Newly enabled: read+write, required.  Custom routing of already-enabled providers stays.
            _route_provider(config, name, True)

    stamp = format_time(options.now or datetime.now(UTC))
    for name in agent_names:
        agent = config.agents[name]
        agent.enabled = selected_agents[name]
        if agent.enabled and passive_write_enabled(agent) and not agent.passive_write_started_at.strip():
            agent.passive_write_started_at = stamp
    if plugin_target:
        for name, enabled in previously_enabled.items():
            if name != plugin_target:
                config.agents[name].enabled = enabled
    if "codex" in config.agents and options.integration in (OWNER_PAXM, OWNER_CODEX_PLUGIN):
        config.agents["codex"].integration.owner = options.integration
    if "claude" in config.agents and options.integration == OWNER_CLAUDE_PLUGIN:
        config.agents["claude"].integration.owner = options.integration
    return config, [n for n in agent_names if selected_agents[n]]


#: ``--agent`` spellings registered integrations accept (filled by :func:`add_integration_agents`)
_INTEGRATION_ALIASES: dict[str, str] = {}


def add_integration_agents(
    config: Config, integrations: Any = None, selected: Iterable[str] | None = None
) -> list[str]:
    """Give registered integrations that have no ``agents.<name>`` entry their default one.

    With ``selected`` (setup's ``--agent`` names), only the integrations named there (by name or
    alias); without, those whose harness is detected on this machine, so the config file gains
    no entry for a harness the user neither has nor asked for.

    An integration distribution (``paxm-integration-qwen-code`` ...) brings agents the core does
    not know; its ``default_agent_config()`` (raw config data) becomes the entry, or, when that is
    empty, the core's recall-on-prompt + capture-at-turn-end default.  Returns the names added.
    """
    if integrations is None:
        from paxm_core.plugins import get_plugin_manager

        try:
            integrations = get_plugin_manager().integrations()
        except Exception:  # a broken plugin must not break setup of the others
            return []
    added: list[str] = []
    for name, integration in integrations.items():
        for alias in getattr(integration, "aliases", ()) or ():
            if isinstance(alias, str) and alias.strip():
                _INTEGRATION_ALIASES.setdefault(alias.strip().lower(), name)
        if name in config.agents:
            continue
        spellings = {name, *(str(a).strip().lower() for a in getattr(integration, "aliases", ()) or ())}
        if selected is not None:
            if not any("-".join(str(n).strip().lower().split()) in spellings for n in selected):
                continue
        else:
            detect = getattr(integration, "detect", None)
            try:
                if not callable(detect) or detect() is None:
                    continue
            except Exception:
                continue
        raw: Any = {}
        default = getattr(integration, "default_agent_config", None)
        if callable(default):
            try:
                raw = dict(default() or {})
            except Exception:
                raw = {}
        if raw:
            from paxm_core.config.codec import decode

            agent = decode(AgentConfig, raw, f"agents.{name}")
        else:
            agent = copy.deepcopy(d.default_agents()["opencode"])
        agent.enabled = False
        config.agents[name] = agent
        added.append(name)
    return added


def prepare_setup(path: Path, options: SetupOptions, *, force: bool) -> tuple[Config, list[str], bool]:
    """Load the base config for ``path`` and apply ``options``; return (config, agents, existed).

    Raises :class:`ConfigError` when a config exists and ``force`` is false.
    """
    existed = config_exists(path)
    if existed and not force:
        raise ConfigError(f"config already exists at {path}; use --force to overwrite")
    config = setup_base_config(path, existed)
    add_integration_agents(config, selected=options.agents or None)
    config, agents = apply_setup(config, options)
    config.path = path
    return config, agents, existed
