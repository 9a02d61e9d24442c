"""What ``paxm setup`` does to a config, independent of any prompting or printing.

Follows upstream's setup flow: start from the defaults (or the existing file merged with the
defaults), pin provider/agent selections, route newly enabled providers into the six standard
profiles, drop disabled ones from them, record ``passive_write_started_at`` once, add
``team-<id>`` write profiles, and set the integration owner.
"""

from __future__ import annotations

import copy
import errno
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import paxm_core.config.defaults as d
from paxm_core.api.errors import ConfigError, UsageError
from paxm_core.api.provider_config import ProviderConfig
from paxm_core.api.timefmt import format_time
from paxm_core.config.catalog import NO_PROVIDER_TYPES, ProviderCatalog
from paxm_core.config.codec import decode
from paxm_core.config.defaults import default_config
from paxm_core.config.loader import config_exists, load_config, read_raw
from paxm_core.config.model import (
    OWNER_PAXM,
    AgentConfig,
    AgentHookConfig,
    Config,
    HookBufferConfig,
    HookInsertionConfig,
    RecallProfileConfig,
    RouteConfig,
    ScopeConfig,
)
from paxm_core.config.normalize import default_user_id, slug_id
from paxm_core.config.paths import legacy_json_path
from paxm_core.duration import parse_duration

if TYPE_CHECKING:
    from paxm_core.api.integration import Integration
    from paxm_core.api.protocols import ProviderType

__all__ = [
    "SetupCatalog",
    "SetupOptions",
    "add_offered_agents",
    "agent_order",
    "config_load_error",
    "default_agent_selection",
    "detected_agents",
    "instance_name_for_type",
    "apply_setup",
    "move_config_aside",
    "passive_write_enabled",
    "prepare_setup",
    "provider_config_from_type",
    "provider_order",
    "setup_base_config",
    "setup_finds_config",
]

RECALL_PROFILES = ("default", "passive", "passive_initial")
WRITE_PROFILES = ("default", "stm", "ltm")
LEGACY_DEFAULT_RECALL_MAX_RESULTS = 8
#: where a name nobody declared a priority for sorts (after every declared one, then by name)
_UNRANKED = 100


class PluginSource(Protocol):
    """What :meth:`SetupCatalog.from_plugins` reads of a plugin manager (its registered plugins)."""

    def integrations(self) -> Mapping[str, Integration]: ...

    def provider_types(self) -> Mapping[str, ProviderType]: ...


@dataclass(frozen=True)
class SetupCatalog:
    """What setup knows about harnesses and provider types: only what their plugins declare.

    :param integrations: registered integrations by canonical name.
    :param provider_types: registered provider types by ``type`` string.
    """

    integrations: Mapping[str, Integration] = field(default_factory=dict)
    provider_types: Mapping[str, ProviderType] = field(default_factory=dict)

    @classmethod
    def from_plugins(cls, plugin_manager: PluginSource) -> SetupCatalog:
        """The catalog of the plugins ``plugin_manager`` (the caller's) has loaded."""
        return cls(dict(plugin_manager.integrations()), dict(plugin_manager.provider_types()))

    def provider_catalog(self) -> ProviderCatalog:
        """The provider types, as loading and saving a config reads them."""
        return ProviderCatalog.of(self.provider_types)

    def display_name(self, agent: str) -> str:
        """The integration's ``display_name`` (the agent key when no integration serves it)."""
        integration = self.integrations.get(agent)
        return (integration.display_name if integration is not None else "") or agent

    def canonical_agent(self, name: str) -> str:
        """``name`` or one of an integration's aliases -> the canonical agent key ("" if unknown)."""
        wanted = "-".join(name.strip().lower().replace("_", "-").split())
        if wanted in self.integrations:  # a canonical name wins over another integration's alias
            return wanted
        for canonical, integration in self.integrations.items():
            spellings = {canonical, *(a.lower() for a in integration.aliases)}
            if wanted in spellings or wanted.replace("-", "") in {s.replace("-", "") for s in spellings}:
                return canonical
        return ""

    def owners(self) -> dict[str, str]:
        """Plugin owner name -> the agent whose integration accepts it."""
        return {owner: name for name, integration in self.integrations.items() for owner in integration.owners}

    def agent_priority(self, agent: str) -> int:
        integration = self.integrations.get(agent)
        return integration.setup_priority if integration is not None else _UNRANKED

    def provider_priority(self, provider_type: str) -> int:
        spec = self.provider_types.get(provider_type)
        return spec.setup_priority if spec is not None else _UNRANKED


def agent_order(config: Config, catalog: SetupCatalog) -> list[str]:
    """Agent names in setup order: by their integration's ``setup_priority``, then by name."""
    return sorted(config.agents, key=lambda n: (catalog.agent_priority(n), n))


def provider_order(config: Config, catalog: SetupCatalog) -> list[str]:
    """Provider instance names in setup order: by their type's ``setup_priority``, then by name."""
    return sorted(config.providers, key=lambda n: (catalog.provider_priority(config.providers[n].type), n))


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
    #: ``agents`` is the whole selection even when empty (interactive setup answered "none")
    agents_chosen: bool = False


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
    write, default_write = current.write, default.write  # loading filled profile, template and mode
    if not write.enabled and write.template == "{{ .prompt }}" and write.mode == "prompt" and default_write.enabled:
        current.write = copy.deepcopy(default_write)
        return current
    if write.buffer == HookBufferConfig():
        write.buffer = copy.deepcopy(default_write.buffer)
    return current


def setup_finds_config(path: Path) -> bool:
    """Whether setup starts from an existing config file at ``path`` (or its legacy ``config.json``).

    A file holding nothing but whitespace counts as none: loading refuses it (no agent would be
    enabled) and advises ``paxm setup``, so setup writes a fresh config over it, no ``--force``.
    """
    if not config_exists(path):
        return False
    source = path if path.is_file() else legacy_json_path(path)
    try:
        return bool(source.read_bytes().strip())
    except OSError:
        return True  # unreadable: loading it reports why


def setup_base_config(path: Path, use_existing: bool, provider_types: ProviderCatalog = NO_PROVIDER_TYPES) -> Config:
    """The config setup starts from: the defaults, or the existing file with missing defaults merged in.

    Loading normalizes, so the passive recall profiles and every telemetry setting are there already.
    """
    defaults = default_config(path, provider_types)
    if not use_existing:
        return defaults
    config = load_config(path, provider_types=provider_types)
    for name, provider in defaults.providers.items():
        config.providers.setdefault(name, provider)
    default = config.recall_profiles.setdefault("default", defaults.recall_profiles["default"])
    if default.max_results == LEGACY_DEFAULT_RECALL_MAX_RESULTS and default.thresholds == d.default_recall_thresholds():
        default.max_results = d.DEFAULT_RECALL_MAX_RESULTS
    for name, write in defaults.write_profiles.items():
        config.write_profiles.setdefault(name, write)
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


def _route_provider(config: Config, provider: str, required: bool, catalog: SetupCatalog) -> None:
    spec = catalog.provider_types.get(config.providers[provider].type)
    default = config.recall_profiles.setdefault("default", RecallProfileConfig())
    _upsert(default.providers, provider, required)
    for name in ("passive", "passive_initial"):
        if name not in config.recall_profiles:
            derive = d.passive_recall_profile_from if name == "passive" else d.passive_initial_recall_profile_from
            config.recall_profiles[name] = derive(default)
        route = _upsert(config.recall_profiles[name].providers, provider, required)
        if route.timeout is None:
            route.timeout = d.passive_route_timeout(spec)
        if spec is not None and spec.locality == "cloud" and route.thresholds is None:
            route.thresholds = d.cloud_thresholds()
    for name in WRITE_PROFILES:
        if name in config.write_profiles:
            _upsert(config.write_profiles[name].providers, provider, required)


def _unroute_provider(config: Config, provider: str) -> None:
    for profile in [*map(config.recall_profiles.get, RECALL_PROFILES), *map(config.write_profiles.get, WRITE_PROFILES)]:
        if profile is not None:
            profile.providers = [r for r in profile.providers if r.name != provider]


# --------------------------------------------------------------------------- agents


def passive_write_enabled(agent: AgentConfig) -> bool:
    """Whether any hook of ``agent`` captures turns."""
    return any(hook.write.enabled for hook in agent.hooks.values())


def _agent_selected_by_config(agent: AgentConfig) -> bool:
    return agent.enabled and any(h.recall.enabled or h.write.enabled for h in agent.hooks.values())


def _pin(names: Iterable[str], options: list[str], kind: str, catalog: SetupCatalog | None = None) -> dict[str, bool]:
    selected = dict.fromkeys(options, False)
    for raw in names:
        name = raw.strip()
        if name not in selected:
            wanted = "-".join(name.lower().split())
            if catalog is not None:
                wanted = catalog.canonical_agent(wanted) or wanted
            name = next((o for o in options if o.lower() == wanted), name)
        if name not in selected:
            hint = ""
            if kind == "provider":
                from paxm_core.install_hints import provider_install_hint

                hint = f"; if {raw.strip()!r} is a provider type, {provider_install_hint(raw)}"
                hint = hint.replace(", Install", ", install").replace(", No ", ", no ")
            raise UsageError(f"unknown setup {kind} {raw!r} (options: {', '.join(options)}){hint}")
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


def _apply_credentials(
    config: Config, selected: Mapping[str, bool], options: SetupOptions, catalog: SetupCatalog
) -> None:
    """Apply ``--api-key`` / ``--base-url`` / ``--graph-id`` to the selected providers that declare those keys."""
    for name, on in selected.items():
        if not on:
            continue
        provider = config.providers[name]
        spec = catalog.provider_types.get(provider.type)
        # a type not installed: nothing says which keys it takes, so --api-key and --base-url
        # apply as given (loading the config later names the install command)
        keys = {k.name: k for k in spec.config_keys} if spec is not None else None
        if options.api_key and (keys is None or "api_key" in keys):
            provider.api_key = options.api_key
        if options.base_url and (keys is None or "base_url" in keys):
            provider.base_url = options.base_url
        if keys is None:
            continue
        if options.graph_id and "graph_id" in keys:
            provider.extra["graph_id"] = options.graph_id
            provider.user_id = ""
        api_key = keys.get("api_key")
        if api_key is not None and api_key.required and not provider.api_key.strip():
            raise UsageError(
                f"provider {name} ({provider.type}) needs an API key; pass --api-key KEY or set PAXM_API_KEY"
                f" (or put `api_key: env:MY_KEY_VAR` under providers.{name})"
            )
        if "user_id" in keys and not any(
            (provider.user_id, provider.agent_id, provider.run_id, provider.text("graph_id"))
        ):
            # a type that stores per user defaults to the paxm identity's user
            provider.user_id = config.identity.user_id


def apply_setup(config: Config, options: SetupOptions, catalog: SetupCatalog) -> tuple[Config, list[str]]:
    """Apply ``options`` to ``config`` (modified in place); return it and the selected agents in setup order.

    ``catalog`` (the installed plugins) says which agents, owners and provider types exist.
    Raises :class:`UsageError` for unknown names, an empty provider selection, missing
    API keys, uninstalled provider types or bad team IDs; nothing is saved by this function.
    """
    owners = catalog.owners()
    if options.integration != OWNER_PAXM and options.integration not in owners:
        choices = ", ".join([OWNER_PAXM, *sorted(owners)])
        raise UsageError(f"unsupported setup integration {options.integration!r}; use {choices}")
    plugin_target = owners.get(options.integration, "")
    add_offered_agents(config, catalog)
    previously_enabled = {name: agent.enabled for name, agent in config.agents.items()}
    provider_names = provider_order(config, catalog)
    agent_names = agent_order(config, catalog)
    selected_providers = {n: config.providers[n].enabled for n in provider_names}
    # a setup that names no agent selects what the file chose, else the harnesses found here
    default_agents = default_agent_selection(config, catalog)
    selected_agents = {n: n in default_agents for n in agent_names}

    if options.user_id.strip():
        new_user = slug_id(options.user_id)
        if not new_user:
            raise UsageError(f"--user-id {options.user_id!r} must contain letters or numbers")
        _retarget_identity(config, config.identity.user_id, new_user)
    if not config.identity.user_id.strip():
        config.identity.user_id = default_user_id()
    if options.team_ids.strip():
        _team_profiles(config, options.team_ids)
    if options.providers:
        added = _add_provider_types(config, options.providers, catalog)
        if added:
            provider_names = provider_order(config, catalog)
        selected_providers = _pin(_instance_names(config, options.providers), provider_names, "provider")
    if options.agents or options.agents_chosen:
        selected_agents = _pin(options.agents, agent_names, "agent", catalog)
    if plugin_target:
        selected_agents = {n: n == plugin_target for n in selected_agents}
    if not any(selected_providers.values()):
        raise UsageError("setup requires at least one memory provider; pass --provider sqlite (or another)")

    _require_installed(config, selected_providers, catalog)
    _apply_credentials(config, selected_providers, options, catalog)
    for name in provider_names:
        provider = config.providers[name]
        was_enabled = provider.enabled
        provider.enabled = selected_providers[name]
        if not provider.enabled:
            _unroute_provider(config, name)
        elif not was_enabled:
            # Newly enabled: read+write, required.  Custom routing of already-enabled providers stays.
            _route_provider(config, name, True, catalog)

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
        config.agents[plugin_target].integration.owner = options.integration
    return config, [n for n in agent_names if selected_agents[n]]


def _retarget_identity(config: Config, old_user: str, new_user: str) -> None:
    """Make ``new_user`` the identity, moving what was derived from ``old_user`` along with it.

    An existing (or freshly normalized) config has write scopes ``personal:<old user>`` and
    agent ids ``<agent>-<old user>``; a ``--user-id`` that left them behind would write the new
    user's memories into the old user's scope.
    """
    config.identity.user_id = new_user
    old = slug_id(old_user)
    if not old or old == new_user:
        return
    for write in config.write_profiles.values():
        if write.scope.type.strip().lower() == "personal" and slug_id(write.scope.id) == old:
            write.scope = ScopeConfig(type="personal", id=new_user)
    for name, agent in config.agents.items():
        if slug_id(agent.agent_id) == slug_id(f"{name}-{old}"):
            agent.agent_id = ""  # normalization derives it again from the new user
    for provider in config.providers.values():
        if provider.user_id and slug_id(provider.user_id) == old:
            provider.user_id = new_user


def instance_name_for_type(type_name: str) -> str:
    """The ``providers.<name>`` key setup gives a provider type it adds (``x-cloud`` -> ``x_cloud``)."""
    return type_name.strip().lower().replace("-", "_")


def _instance_names(config: Config, names: Iterable[str]) -> list[str]:
    """``--provider`` values as instance names: an instance name as given, a type as its (only) instance."""
    out: list[str] = []
    for raw in names:
        name = raw.strip()
        if name in config.providers:
            out.append(name)
            continue
        of_type = [n for n, p in config.providers.items() if p.type == name.lower()]
        out.append(of_type[0] if len(of_type) == 1 else name)
    return out


def provider_config_from_type(spec: ProviderType) -> ProviderConfig:
    """A ``providers.<name>`` entry for ``spec`` holding the defaults its config keys declare."""
    provider = ProviderConfig(type=spec.type)
    known = {f for f in ProviderConfig.__dataclass_fields__ if f not in ("extra", "type", "enabled")}
    for key in spec.config_keys:
        if key.default is None or key.secret:
            continue
        value: object = key.default
        if key.name in known:
            if key.name == "timeout":
                try:
                    value = parse_duration(value)  # type: ignore[arg-type]
                except (TypeError, ValueError):
                    continue
            setattr(provider, key.name, value)
        else:
            provider.extra[key.name] = value
    return provider


def _add_provider_types(config: Config, names: Iterable[str], catalog: SetupCatalog) -> list[str]:
    """Add an entry for each installed provider type named in ``names`` that has no instance yet."""
    added: list[str] = []
    for raw in names:
        wanted = raw.strip().lower()
        if raw.strip() in config.providers or any(p.type == wanted for p in config.providers.values()):
            continue
        spec = catalog.provider_types.get(wanted)
        if spec is None:
            continue
        name = instance_name_for_type(wanted)
        if name in config.providers:
            continue
        config.providers[name] = provider_config_from_type(spec)
        added.append(name)
    return added


def _require_installed(config: Config, selected: Mapping[str, bool], catalog: SetupCatalog) -> None:
    """Refuse to enable a provider whose type no installed distribution registers.

    One the existing config already enables is left alone (setup can still update the rest;
    loading the config names the missing package).
    """
    from paxm_core.install_hints import provider_install_hint

    for name, on in selected.items():
        if not on or config.providers[name].enabled:
            continue
        type_name = config.providers[name].type
        if type_name in catalog.provider_types:
            continue
        raise UsageError(
            f"provider {name} cannot be enabled: its type {type_name!r} is not installed. "
            f"{provider_install_hint(type_name)}"
        )


def _add_integration_agents(config: Config, catalog: SetupCatalog) -> None:
    """Give every registered integration an ``agents.<name>`` entry (its ``default_agent_config``)."""
    for name, integration in catalog.integrations.items():
        if name in config.agents:
            continue
        try:
            raw = dict(integration.default_agent_config())
        except Exception:  # a plugin bug: the agent is simply not offered
            continue
        try:
            config.agents[name] = decode(AgentConfig, raw, f"agents.{name}")
        except ConfigError:
            continue  # the integration's defaults do not parse: not offered (doctor reports plugins)


def prepare_setup(
    path: Path, options: SetupOptions, *, force: bool, catalog: SetupCatalog, start_fresh: bool = False
) -> tuple[Config, list[str], bool]:
    """Load the base config for ``path`` and apply ``options``; return (config, agents, existed).

    ``start_fresh`` starts from the built-in defaults whatever the file holds (setup replaces
    an unreadable config).  Raises :class:`ConfigError` when a config exists and ``force`` is
    false.
    """
    existed = setup_finds_config(path)
    if existed and not force:
        raise ConfigError(f"config already exists at {path}; use --force to overwrite")
    config = setup_base_config(path, existed and not start_fresh, catalog.provider_catalog())
    config, agents = apply_setup(config, options, catalog)
    config.path = path
    return config, agents, existed


def _file_agents(config: Config) -> dict[object, object] | None:
    """The file's own ``agents`` mapping (``None`` when the file has none or cannot be read back).

    The file is read by the loader that read the config (:func:`~paxm_core.config.loader.read_raw`:
    the C parser, the same scalars, alias and duplicate-key checks, JSON for ``.json``).
    Raises :class:`ConfigError` when it cannot be read.
    """
    if not config.exists:
        return None
    source = Path(config.path)
    if not source.is_file() and legacy_json_path(source).is_file():
        source = legacy_json_path(source)
    data = read_raw(source)
    agents = data.get("agents") if isinstance(data, dict) else None
    return agents if isinstance(agents, dict) else None


def agents_enabled_in_file(config: Config) -> set[str]:
    """Agents the config file itself enables (``agents.<name>.enabled: true``), not the defaults.

    ``enabled`` is a boolean by the config's own rule.  Every enabled agent counts when the
    file cannot be read back.
    """
    try:
        agents = _file_agents(config)
    except ConfigError:
        return {name for name, agent in config.agents.items() if agent.enabled}
    chosen = set()
    for name, agent in (agents or {}).items():
        if isinstance(agent, dict) and agent.get("enabled") is not None:
            try:
                enabled = decode(bool, agent["enabled"], f"agents.{name}.enabled")
            except ConfigError:
                continue
            if enabled:
                chosen.add(str(name))
    return chosen


def detected_agents(catalog: SetupCatalog) -> set[str]:
    """The installed integrations whose harness :meth:`~paxm_core.integration.Integration.detect` finds."""
    found = set()
    for name, integration in catalog.integrations.items():
        try:
            if integration.detect():
                found.add(name)
        except Exception:  # a plugin bug in detection: treated as not found
            continue
    return found


def default_agent_selection(config: Config, catalog: SetupCatalog) -> set[str]:
    """The agents setup connects when no ``--agent`` names any (the defaults a person accepts).

    A config file with an ``agents`` section keeps its own choices (under their canonical
    names).  Otherwise (a first setup, or a file without agents) the harnesses detected on
    this machine whose integration is installed: upstream's default agent is not enabled on a
    machine that does not have it.
    """
    try:
        has_section = _file_agents(config) is not None
    except ConfigError:
        has_section = True  # unreadable raw: agents_enabled_in_file counts every enabled one
    if has_section:
        chosen = {catalog.canonical_agent(n) or n for n in agents_enabled_in_file(config)}
        return {n for n in chosen if n in config.agents and _agent_selected_by_config(config.agents[n])}
    return detected_agents(catalog) & set(config.agents)


def fold_agent_aliases(config: Config, catalog: SetupCatalog) -> None:
    """Move an ``agents.<alias>`` entry to its integration's canonical name (``kimi`` -> ``kimi-code``).

    Upstream names some agents differently (its ``kimi`` is paxm's ``kimi-code``); its config and
    the built-in defaults hold upstream's names.  An entry the file itself holds keeps its
    settings under the canonical name (enabled when either spelling is); one that only the
    defaults added is dropped, so the integration's own defaults apply.
    """
    try:
        in_file = set(_file_agents(config) or ())
    except ConfigError:
        in_file = set(config.agents)
    for name in list(config.agents):
        if name in catalog.integrations:
            continue
        canonical = catalog.canonical_agent(name)
        if not canonical or canonical == name:
            continue
        entry = config.agents.pop(name)
        if name not in in_file:
            continue
        current = config.agents.get(canonical)
        if current is None or canonical not in in_file:
            config.agents[canonical] = entry
        elif entry.enabled:
            current.enabled = True


def add_offered_agents(config: Config, catalog: SetupCatalog) -> None:
    """Give every installed integration an ``agents.<name>`` entry, upstream's names folded in.

    After this, ``config.agents`` holds one entry per agent setup offers: every installed
    integration (by its canonical name) and the configured agents no integration serves.
    """
    fold_agent_aliases(config, catalog)
    _add_integration_agents(config, catalog)


def config_load_error(path: Path, provider_types: ProviderCatalog = NO_PROVIDER_TYPES) -> ConfigError | None:
    """Why the existing config at ``path`` cannot be loaded (``None`` when it loads or is absent)."""
    if not setup_finds_config(path):
        return None
    try:
        load_config(path, provider_types=provider_types)
    except ConfigError as exc:
        return exc
    return None


def _aside_name(source: Path, now: datetime) -> Path:
    stamp = now.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
    target = source.with_name(f"{source.name}.broken-{stamp}")
    counter = 1
    while target.exists() or target.is_symlink():
        counter += 1
        target = source.with_name(f"{source.name}.broken-{stamp}-{counter}")
    return target


def move_config_aside(path: Path, now: datetime | None = None) -> Path:
    """Keep the config file at ``path`` as ``<name>.broken-<UTC time>`` (mode 0600); return that path.

    The copy is a new file paxm creates (0600, never over an existing one), written and synced
    before the original is removed, so the old settings are never lost.  A symlink is not
    followed or moved (paxm did not make it): :class:`ConfigError` says to fix it by hand.
    """
    source = path if (path.is_file() or path.is_symlink()) else legacy_json_path(path)
    try:
        fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ConfigError(f"{source} is a symlink; paxm does not move it: fix or replace it by hand") from None
        raise ConfigError(f"{source}: cannot read: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as handle:
        data = handle.read()
    target = _aside_name(source, now or datetime.now(UTC))
    out = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(out, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    source.unlink()
    return target
