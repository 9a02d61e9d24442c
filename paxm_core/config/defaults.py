"""Built-in defaults, identical to upstream's ``DefaultConfig``.

With no config file at all paxm runs on :func:`default_config`: the SQLite provider under
the XDG data dir, so the CLI loop needs no setup.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import TYPE_CHECKING

from paxm_core.api.provider_config import ProviderConfig
from paxm_core.config.catalog import NO_PROVIDER_TYPES, ProviderCatalog
from paxm_core.config.model import (
    ActiveRecallConfig,
    AgentConfig,
    AgentHookConfig,
    CaptureQueueConfig,
    Config,
    HookBufferConfig,
    HookInitialRecallConfig,
    HookInsertionConfig,
    HookRecallConfig,
    HookWriteConfig,
    RankingConfig,
    RecallProfileConfig,
    RouteConfig,
    TelemetryConfig,
    ThresholdsConfig,
    WriteProfileConfig,
)
from paxm_core.config.paths import (
    default_data_path,
    default_state_dir,
    expand_path,
    is_default_config_path,
    resolve_config_path,
)

if TYPE_CHECKING:
    from paxm_core.api.protocols import ProviderType

__all__ = [
    "active_recall",
    "hook_write",
    "LEGACY_HOOK_TARGET",
    "UPSTREAM_DEFAULT_AGENT",
    "default_agents",
    "default_config",
    "passive_route_timeout",
    "default_recall_thresholds",
    "passive_initial_recall_profile_from",
    "passive_recall_profile_from",
    "ltm_write_profile_from",
    "stm_write_profile_from",
]

CONFIG_VERSION = 1
DEFAULT_ROUTE_WEIGHT = 1.0

DEFAULT_RECALL_MAX_RESULTS = 3
DEFAULT_RECALL_MIN_RELEVANCE = 0.25
DEFAULT_RECALL_MIN_SCORE = 0.25
DEFAULT_STM_EXPIRES_AFTER = 24 * 3600.0

PASSIVE_RECALL_MAX_RESULTS = 2
PASSIVE_RECALL_MIN_RELEVANCE = 0.75
INITIAL_RECALL_MAX_RESULTS = 5
INITIAL_RECALL_MIN_RELEVANCE = 0.35
INITIAL_RECALL_MIN_SCORE = 0.35

DEFAULT_HOOK_RECALL_MAX_RESULTS = PASSIVE_RECALL_MAX_RESULTS
DEFAULT_PASSIVE_RECALL_TIMEOUT = 0.8
DEFAULT_PASSIVE_RECALL_TIMEOUT_EXTRA = 0.1
DEFAULT_PROVIDER_RECALL_TIMEOUT = 0.25
DEFAULT_CLOUD_RECALL_TIMEOUT = 0.8
DEFAULT_CLOUD_RECALL_THRESHOLD = 0.20
DEFAULT_PROVIDER_WRITE_TIMEOUT = 30.0
DEFAULT_HOOK_INSERTION_MIN_SCORE = 0.8
DEFAULT_HOOK_INSERTION_MAX_ITEMS = PASSIVE_RECALL_MAX_RESULTS
DEFAULT_HOOK_BUFFER_FLUSH_COUNT = 10
DEFAULT_TELEMETRY_MAX_EVENT_FILE_BYTES = 1 << 20
DEFAULT_TELEMETRY_MAX_EVENT_FILES = 3
DEFAULT_TELEMETRY_RETENTION_DAYS = 30
DEFAULT_TELEMETRY_QUERY_PREVIEW = 80
DEFAULT_HOOK_WRITE_TEMPLATE = "{{ .safe_text }}"
DEFAULT_CAPTURE_MAX_EPISODE_AGE = 60.0
DEFAULT_CAPTURE_RETRY_MIN = 1.0
DEFAULT_CAPTURE_MAX_ATTEMPTS = 10

#: Upstream's default agent (data): the only agent enabled by default, the one upstream's legacy
#: ``paxm recall --hook-event`` entry point serves, whose active recall profile is the default
#: profile, and upstream eval suites' default hook target.  No code depends on what it is.
UPSTREAM_DEFAULT_AGENT = "codex"
LEGACY_HOOK_TARGET = UPSTREAM_DEFAULT_AGENT


def default_recall_thresholds() -> ThresholdsConfig:
    """The ``default`` profile's thresholds (0.25 / 0.25)."""
    return ThresholdsConfig(min_relevance=DEFAULT_RECALL_MIN_RELEVANCE, min_score=DEFAULT_RECALL_MIN_SCORE)


def cloud_thresholds() -> ThresholdsConfig:
    """Per-route thresholds for hosted providers, whose scores run lower."""
    return ThresholdsConfig(min_relevance=DEFAULT_CLOUD_RECALL_THRESHOLD, min_score=DEFAULT_CLOUD_RECALL_THRESHOLD)


def passive_route_timeout(spec: ProviderType | None) -> float:
    """A passive recall route's default timeout for a provider of type ``spec``.

    The type's own ``passive_timeout`` when it declares one; else 800 ms for a ``cloud`` type
    and 250 ms otherwise (upstream's values).  ``None`` (type not installed) gets 250 ms.
    """
    if spec is not None and spec.passive_timeout is not None and spec.passive_timeout > 0:
        return float(spec.passive_timeout)
    if spec is not None and spec.locality == "cloud":
        return DEFAULT_CLOUD_RECALL_TIMEOUT
    return DEFAULT_PROVIDER_RECALL_TIMEOUT


def _passive_like(base: RecallProfileConfig, max_results: int, threshold: float) -> RecallProfileConfig:
    routes = copy.deepcopy(base.providers)
    for route in routes:
        route.timeout = DEFAULT_PROVIDER_RECALL_TIMEOUT
    return RecallProfileConfig(
        providers=routes,
        max_results=max_results,
        thresholds=ThresholdsConfig(min_relevance=threshold, min_score=threshold),
        ranking=RankingConfig(type="weighted_relevance", recency_boost=base.ranking.recency_boost),
        tiers=["ltm"],
    )


def passive_recall_profile_from(base: RecallProfileConfig) -> RecallProfileConfig:
    """The ``passive`` profile derived from ``base``: 2 results, 0.75 thresholds, 250ms routes, LTM only."""
    return _passive_like(base, PASSIVE_RECALL_MAX_RESULTS, PASSIVE_RECALL_MIN_RELEVANCE)


def passive_initial_recall_profile_from(base: RecallProfileConfig) -> RecallProfileConfig:
    """The ``passive_initial`` profile derived from ``base``: 5 results, 0.35 thresholds, LTM only."""
    return _passive_like(base, INITIAL_RECALL_MAX_RESULTS, INITIAL_RECALL_MIN_RELEVANCE)


def stm_write_profile_from(routes: list[RouteConfig]) -> WriteProfileConfig:
    """Short-term memory: tier ``stm``, expires after 24h."""
    return WriteProfileConfig(providers=copy.deepcopy(routes), tier="stm", expires_after=DEFAULT_STM_EXPIRES_AFTER)


def ltm_write_profile_from(routes: list[RouteConfig]) -> WriteProfileConfig:
    """Long-term memory: tier ``ltm``, no expiry."""
    return WriteProfileConfig(providers=copy.deepcopy(routes), tier="ltm")


def default_initial_recall() -> HookInitialRecallConfig:
    """First-prompt recall: profile ``passive_initial``, 5 results, min score 0.35."""
    return HookInitialRecallConfig(
        enabled=True,
        profile="passive_initial",
        max_results=INITIAL_RECALL_MAX_RESULTS,
        insertion=HookInsertionConfig(min_score=INITIAL_RECALL_MIN_SCORE, max_items=INITIAL_RECALL_MAX_RESULTS),
    )


def default_hook_recall() -> HookRecallConfig:
    """Passive recall on ``user_input``."""
    return HookRecallConfig(
        enabled=True,
        profile="passive",
        query_template="{{ .prompt }}",
        max_results=DEFAULT_HOOK_RECALL_MAX_RESULTS,
        timeout_extra=DEFAULT_PASSIVE_RECALL_TIMEOUT_EXTRA,
        output="markdown",
        insertion=HookInsertionConfig(
            min_score=DEFAULT_HOOK_INSERTION_MIN_SCORE,
            max_items=DEFAULT_HOOK_INSERTION_MAX_ITEMS,
            require_query_terms=True,
        ),
        initial=default_initial_recall(),
    )


def pre_tool_recall() -> HookRecallConfig:
    """Recall before a tool runs (``pre_tool``): memories anchored to its files (docs/freshness.md).

    ``max_results`` is how many hits are asked for; most are not anchored to the file, and at
    most two are injected.
    """
    return HookRecallConfig(
        enabled=True,
        profile="passive",
        max_results=20,
        timeout_extra=DEFAULT_PASSIVE_RECALL_TIMEOUT_EXTRA,
        output="markdown",
    )


def hook_write(mode: str, *, flush: bool = False) -> HookWriteConfig:
    """Upstream's default buffered write of one hook event (``flush`` on ``turn_end``)."""
    return HookWriteConfig(
        enabled=True,
        profile="ltm",
        template=DEFAULT_HOOK_WRITE_TEMPLATE,
        mode=mode,
        buffer=HookBufferConfig(enabled=True, flush=flush, flush_count=DEFAULT_HOOK_BUFFER_FLUSH_COUNT),
    )


def active_recall() -> ActiveRecallConfig:
    """Upstream's default active recall of an agent (profile ``default``, markdown)."""
    return ActiveRecallConfig(enabled=True, profile="default", output="markdown")


def _agent_hooks(*, recall: bool, write: bool) -> dict[str, AgentHookConfig]:
    """Upstream's standard events of one agent: ``write`` adds session_start and the prompt's
    write, ``recall`` the prompt's passive recall; turn_end always writes."""
    user_input = AgentHookConfig(write=hook_write("user_input")) if write else AgentHookConfig()
    if recall:
        user_input.recall = default_hook_recall()
    hooks = {"session_start": AgentHookConfig(write=hook_write("session_start"))} if write else {}
    hooks["user_input"] = user_input
    hooks["turn_end"] = AgentHookConfig(write=hook_write("turn_end", flush=True))
    return hooks


def _compatible_agent(passive_recall: bool) -> AgentConfig:
    return AgentConfig(
        enabled=False, active_recall=active_recall(), hooks=_agent_hooks(recall=passive_recall, write=True)
    )


def default_agents() -> dict[str, AgentConfig]:
    """Every known agent with upstream's hook wiring; only ``codex`` is enabled."""
    return {
        "opencode": AgentConfig(active_recall=active_recall(), hooks=_agent_hooks(recall=True, write=False)),
        "claude": AgentConfig(
            active_recall=active_recall(),
            hooks={
                "tool_use": AgentHookConfig(write=hook_write("tool_use")),
                "tool_failure": AgentHookConfig(write=hook_write("tool_failure")),
                # paxm's own: memories anchored to what a tool is about to touch (docs/freshness.md)
                "pre_tool": AgentHookConfig(recall=pre_tool_recall()),
                **_agent_hooks(recall=True, write=True),
            },
        ),
        "codex": AgentConfig(enabled=True, active_recall=active_recall(), hooks=_agent_hooks(recall=True, write=True)),
        "pi": AgentConfig(active_recall=active_recall(), hooks=_agent_hooks(recall=True, write=False)),
        "cursor": _compatible_agent(False),
        "trae": _compatible_agent(True),
        "trae-cn": _compatible_agent(True),
        "kimi": _compatible_agent(True),
        "zcode": _compatible_agent(True),
        "kiro": _compatible_agent(True),
        # no "cline": paxm's Cline integration captures tool results too, so its own
        # default_agent_config applies (upstream's entry was for an output mode, not Cline's plugin API)
    }


def default_telemetry(config_path: Path) -> TelemetryConfig:
    """Telemetry on, under the XDG state dir (``<config dir>/state`` for a non-default config)."""
    state_dir = default_state_dir() if is_default_config_path(config_path) else config_path.parent / "state"
    return TelemetryConfig(
        enabled=True,
        dir=str(state_dir),
        events_file="events.jsonl",
        metrics_file="metrics.json",
        max_event_file_bytes=DEFAULT_TELEMETRY_MAX_EVENT_FILE_BYTES,
        max_event_files=DEFAULT_TELEMETRY_MAX_EVENT_FILES,
        retention_days=DEFAULT_TELEMETRY_RETENTION_DAYS,
        query_preview_chars=DEFAULT_TELEMETRY_QUERY_PREVIEW,
        # capture_query_preview stays unset: query previews are off unless asked for.
    )


def _listed_providers(types: ProviderCatalog) -> dict[str, ProviderConfig]:
    """The disabled entries installed provider types ask the built-in config to list (upstream lists its backends)."""
    listed: dict[str, ProviderConfig] = {}
    for spec in sorted(types.listed(), key=lambda spec: spec.type):
        if spec.default_entry is not None and spec.type != "sqlite":
            entry = copy.deepcopy(spec.default_entry)
            entry.type = entry.type or spec.type
            entry.enabled = False
            listed[spec.type.replace("-", "_")] = entry
    return listed


def default_config(path: str | Path | None = None, provider_types: ProviderCatalog = NO_PROVIDER_TYPES) -> Config:
    """The built-in configuration for a config stored at ``path`` (resolved like ``--config``).

    Only the ``sqlite`` provider is enabled.  Its database is under the XDG data dir for the
    standard config location and beside the config file otherwise.  Every installed provider
    type with a :attr:`~paxm_core.api.protocols.ProviderType.default_entry` is listed, disabled.
    """
    config_path = expand_path(resolve_config_path(path))
    data_path = default_data_path() if is_default_config_path(config_path) else config_path.parent / "memory.sqlite"
    default_recall = RecallProfileConfig(
        providers=[RouteConfig(name="sqlite", required=True, weight=DEFAULT_ROUTE_WEIGHT)],
        max_results=DEFAULT_RECALL_MAX_RESULTS,
        thresholds=default_recall_thresholds(),
        ranking=RankingConfig(type="weighted_relevance"),
        tiers=["stm", "ltm"],
    )
    write_routes = [RouteConfig(name="sqlite", required=True, timeout=DEFAULT_PROVIDER_WRITE_TIMEOUT)]
    return Config(
        version=CONFIG_VERSION,
        providers={
            "sqlite": ProviderConfig(type="sqlite", enabled=True, path=str(data_path)),
            **_listed_providers(provider_types),
        },
        recall_profiles={
            "default": default_recall,
            "passive": passive_recall_profile_from(default_recall),
            "passive_initial": passive_initial_recall_profile_from(default_recall),
        },
        write_profiles={
            "default": ltm_write_profile_from(write_routes),
            "stm": stm_write_profile_from(write_routes),
            "ltm": ltm_write_profile_from(write_routes),
        },
        agents=default_agents(),
        telemetry=default_telemetry(config_path),
        capture_queue=CaptureQueueConfig(
            max_episode_age=DEFAULT_CAPTURE_MAX_EPISODE_AGE,
            retry_min=DEFAULT_CAPTURE_RETRY_MIN,
            max_attempts=DEFAULT_CAPTURE_MAX_ATTEMPTS,
            provider_concurrency={"sqlite": 1, "default": 4},
        ),
        path=config_path,
        exists=False,
        provider_types=provider_types,
    )
